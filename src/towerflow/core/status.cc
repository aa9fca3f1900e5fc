#include "towerflow/core/status.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>

namespace tw {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kCancelled: return "Cancelled";
    case Code::kUnknown: return "Unknown";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kResourceExhausted: return "ResourceExhausted";
    case Code::kFailedPrecondition: return "FailedPrecondition";
    case Code::kAborted: return "Aborted";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kUnimplemented: return "Unimplemented";
    case Code::kInternal: return "Internal";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDataLoss: return "DataLoss";
  }
  return "Unknown";
}

Status::Status(Code code, std::string message) {
  if (code != Code::kOk) state_ = std::make_shared<const State>(State{code, std::move(message)});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return ok() ? kEmpty : state_->message;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code())) + ": " + state_->message;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code(), std::string(context) + ": " + state_->message);
}

void Status::Check() const {
  if (ok()) return;
  std::fprintf(stderr, "towerflow: fatal: %s\n", ToString().c_str());
  std::abort();
}

int Fail(const Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "towerflow: %s\n", status.ToString().c_str());
  return 1;
}

Status FileError(std::string_view path, std::string_view what, int err) {
  std::string message = StrCat(path, ": ", what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return errors::NotFound(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return Status(Code::kPermissionDenied, std::move(message));
    case EEXIST:
      return errors::AlreadyExists(message);
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EFBIG:
      return errors::ResourceExhausted(message);
    case EISDIR:
    case ENOTDIR:
    case ENAMETOOLONG:
    case EINVAL:
      return errors::InvalidArgument(message);
    case EIO:
    case EAGAIN:
      return errors::Unavailable(message);
    default:
      return errors::Internal(message);
  }
}


}  // namespace tw
