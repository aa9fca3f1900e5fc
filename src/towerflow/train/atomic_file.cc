// Crash-safe file writes (atomic_file.h): temporary file, fsync, rename,
// directory fsync.
#include "towerflow/train/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "towerflow/core/file_checks.h"

namespace tw::train {

Status FileDescriptor::Close(const std::string& path) {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) return FileError(path, "close", errno);
  return Status::OK();
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<int> OpenFile(const std::string& path, int flags, const char* what) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return FileError(path, what, errno);
  return fd;
}

Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError(path, "write", errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Status SyncDirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  TW_ASSIGN_OR_RETURN(int raw, OpenFile(dir, O_RDONLY | O_DIRECTORY, "cannot open directory to fsync it"));
  FileDescriptor fd(raw);
  if (::fsync(fd.get()) != 0) return FileError(dir, "fsync of directory", errno);
  return fd.Close(dir);
}

Status WriteFileAtomically(const std::string& path, const std::vector<std::string_view>& pieces) {
  // The rename must never put this file in the place of a device or a FIFO.
  TW_RETURN_IF_ERROR(CheckReplaceableFile(path));
  const std::string tmp = StrCat(path, ".tmp-", static_cast<int64_t>(::getpid()));
  TW_ASSIGN_OR_RETURN(int raw, OpenFile(tmp, O_WRONLY | O_CREAT | O_TRUNC, "cannot open for writing"));
  FileDescriptor fd(raw);
  Status s;
  for (std::string_view piece : pieces) {
    s = WriteAll(fd.get(), piece, tmp);
    if (!s.ok()) break;
  }
  if (s.ok() && ::fsync(fd.get()) != 0) s = FileError(tmp, "fsync", errno);
  Status closed = fd.Close(tmp);
  if (s.ok()) s = closed;
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    s = FileError(path, StrCat("rename of ", tmp), errno);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return SyncDirectoryOf(path);
}

}  // namespace tw::train
