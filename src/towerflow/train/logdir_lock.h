// LogdirLock: one training at a time per log directory.
//
// Two trainings writing checkpoints, an index and event files into one
// directory interleave them (each rotates out the other's checkpoints, and a
// --resume restores whichever is newest). A training holds an exclusive
// flock(2) on "<logdir>/.towerflow.lock" for as long as it runs; a second one
// is refused with an error naming the holder's pid and command line. The
// kernel drops the lock when its holder exits, however it exits (kill -9
// included), so a stale lock file never blocks a later run. The lock file
// stays in the directory, holding the last holder's pid.
//
// A lock is owned by one object and released by its destructor. Acquire is
// thread-safe; the locks of one process on one directory exclude each other
// too (each Acquire opens the file anew).
#ifndef TOWERFLOW_TRAIN_LOGDIR_LOCK_H_
#define TOWERFLOW_TRAIN_LOGDIR_LOCK_H_

#include <memory>
#include <string>

#include "towerflow/core/status.h"

namespace tw::train {

class LogdirLock {
 public:
  // Creates `logdir` when missing and locks it. FailedPrecondition naming the
  // directory and the holding process when another training holds it; the
  // errno's code naming the file when the directory or the lock file cannot be
  // made (a read-only disk, `logdir` a regular file).
  static StatusOr<std::unique_ptr<LogdirLock>> Acquire(const std::string& logdir);
  ~LogdirLock();
  LogdirLock(const LogdirLock&) = delete;
  LogdirLock& operator=(const LogdirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  LogdirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

}  // namespace tw::train

#endif  // TOWERFLOW_TRAIN_LOGDIR_LOCK_H_
