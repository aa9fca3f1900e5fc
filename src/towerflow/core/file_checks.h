// Checks on paths a user names for towerflow to write, before anything is
// written: a file replaced by rename(2) (checkpoints, traces) must be a
// regular file or nothing, or the rename would put a regular file in the
// place of a device, a FIFO or a socket (run as root, `--trace /dev/zero`
// would replace the device). Pure functions of the file system; thread-safe.
#ifndef TOWERFLOW_CORE_FILE_CHECKS_H_
#define TOWERFLOW_CORE_FILE_CHECKS_H_

#include <sys/types.h>

#include <string>

#include "towerflow/core/status.h"

namespace tw {

// What the file at `path` is, in words for errors: "a regular file", "a
// directory", "a character device", "a block device", "a FIFO", "a socket"
// (a symbolic link is followed: what it leads to), or "nothing" when it does
// not exist.
std::string DescribeFileKind(const std::string& path);
// The same words for a st_mode (from fstat of an open file).
std::string DescribeFileMode(mode_t mode);

// OK when `path` does not exist or names a regular file (a symbolic link is
// followed: to a regular file it is OK); InvalidArgument "<path> is a
// character device: towerflow replaces only regular files" otherwise.
Status CheckReplaceableFile(const std::string& path);

}  // namespace tw

#endif  // TOWERFLOW_CORE_FILE_CHECKS_H_
