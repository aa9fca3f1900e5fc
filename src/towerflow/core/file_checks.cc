#include "towerflow/core/file_checks.h"

#include <sys/stat.h>

#include <cerrno>

namespace tw {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string DescribeFileMode(mode_t mode) { return KindOf(mode); }

std::string DescribeFileKind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "nothing";
  return KindOf(st.st_mode);
}

Status CheckReplaceableFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    // Missing (a new file) is fine; anything else shows up when writing.
    return Status::OK();
  }
  if (S_ISREG(st.st_mode)) return Status::OK();
  return errors::InvalidArgument(path, " is ", KindOf(st.st_mode), ": towerflow replaces only regular files");
}

}  // namespace tw
