#include "towerflow/train/logdir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "towerflow/train/atomic_file.h"

namespace tw::train {
namespace {

// "pid 1234 (towerflow train --data ...)" from what a holder wrote, or what
// is known of it.
std::string DescribeHolder(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? std::string("another process") : text;
}

// This process's command line, arguments joined by spaces.
std::string CommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string line = ss.str();
  while (!line.empty() && line.back() == '\0') line.pop_back();
  for (char& c : line) {
    if (c == '\0') c = ' ';
  }
  return line.size() > 512 ? line.substr(0, 512) + "..." : line;
}

}  // namespace

StatusOr<std::unique_ptr<LogdirLock>> LogdirLock::Acquire(const std::string& logdir) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) return FileError(logdir, "cannot create directory", ec.value());
  const std::string path = (std::filesystem::path(logdir) / ".towerflow.lock").string();
  TW_ASSIGN_OR_RETURN(int fd, OpenFile(path, O_RDWR | O_CREAT, "cannot open the log directory's lock file"));
  int r;
  do {
    r = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    const int err = errno;
    const std::string holder = err == EWOULDBLOCK ? DescribeHolder(fd) : std::string();
    ::close(fd);
    if (err != EWOULDBLOCK) return FileError(path, "flock", err);
    return errors::FailedPrecondition("--logdir ", logdir, " is in use by another training (", holder,
                                      "): two runs in one directory would mix their checkpoints; wait for it "
                                      "to finish or choose another --logdir");
  }
  // Who holds it, for the error a second run prints. Best effort: the lock
  // itself is the flock, not these bytes.
  const std::string who = "pid " + std::to_string(::getpid()) + ": " + CommandLine() + "\n";
  if (::ftruncate(fd, 0) == 0) {
    (void)!::pwrite(fd, who.data(), who.size(), 0);
  }
  return std::unique_ptr<LogdirLock>(new LogdirLock(path, fd));
}

LogdirLock::~LogdirLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace tw::train
