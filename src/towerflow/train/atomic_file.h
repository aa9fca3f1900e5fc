// Crash-safe file writes and the POSIX file helpers under them, shared by
// checkpoints (safetensors.h) and the checkpoint index (checkpoint_manager.h).
//
// WriteFileAtomically writes a temporary file next to the target, fsyncs it,
// renames it over the target and fsyncs the directory: a reader, or a process
// restarted after a crash at any moment, sees either the old file or the whole
// new one, never a mix. Errors are FileError statuses naming the path, the
// operation and errno's text. Functions are thread-safe (distinct paths);
// a FileDescriptor is owned by one thread.
#ifndef TOWERFLOW_TRAIN_ATOMIC_FILE_H_
#define TOWERFLOW_TRAIN_ATOMIC_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "towerflow/core/status.h"

namespace tw::train {

// An open file descriptor, closed on destruction.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error (close can report a failed write-back).
  Status Close(const std::string& path);

 private:
  int fd_;
};

// open(2) with O_CLOEXEC and mode 0644, retried on EINTR; `what` words the
// error ("cannot open for writing").
StatusOr<int> OpenFile(const std::string& path, int flags, const char* what);
// Writes all of `bytes`, retrying short writes and EINTR.
Status WriteAll(int fd, std::string_view bytes, const std::string& path);
// fsync of the directory holding `path`, so a rename in it is durable.
Status SyncDirectoryOf(const std::string& path);
// Writes the concatenation of `pieces` to `path` crash-safely (see above). On
// failure the temporary file is removed and the old `path` is untouched. A
// `path` that exists and is not a regular file (a device, a FIFO, a directory)
// is InvalidArgument before anything is written (core/file_checks.h).
Status WriteFileAtomically(const std::string& path, const std::vector<std::string_view>& pieces);

}  // namespace tw::train

#endif  // TOWERFLOW_TRAIN_ATOMIC_FILE_H_
