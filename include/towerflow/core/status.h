// Status and StatusOr<T>: how every fallible towerflow function reports failure.
//
// A Status is either OK or carries a canonical code and a message that names what
// the user can act on (node, op, file, offset, shapes, devices). Codes keep one
// meaning each (see docs/design.md). Status values are cheap to copy when OK and
// immutable otherwise; they are safe to share between threads once built.
#ifndef TOWERFLOW_CORE_STATUS_H_
#define TOWERFLOW_CORE_STATUS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tw {

enum class Code {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

// "InvalidArgument", "OutOfRange", ...: the names TF prints, without "Error".
std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message);

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return ok() ? Code::kOk : state_->code; }
  const std::string& message() const;
  // "InvalidArgument: <message>" or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed by `context` + ": ".
  Status WithContext(std::string_view context) const;

  // Aborts the process with the message when not OK. Programmer errors only:
  // examples and tests use it; library code propagates instead.
  void Check() const;
  // Marks a deliberately ignored status.
  void IgnoreError() const {}

  bool operator==(const Status& other) const {
    return code() == other.code() && message() == other.message();
  }

 private:
  struct State {
    Code code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

// Canonical constructors: errors::InvalidArgument("shape ", s, " is bad").
namespace errors {
namespace internal {
template <typename T>
std::string ToPiece(const T& v) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return std::string(std::string_view(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(v);
  } else {
    return v.ToString();
  }
}
}  // namespace internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (out.append(internal::ToPiece(args)), ...);
  return out;
}

#define TW_DEFINE_ERROR(Name)                                 \
  template <typename... Args>                                 \
  Status Name(const Args&... args) {                          \
    return Status(Code::k##Name, StrCat(args...));            \
  }                                                           \
  inline bool Is##Name(const Status& s) { return s.code() == Code::k##Name; }
TW_DEFINE_ERROR(Cancelled)
TW_DEFINE_ERROR(Unknown)
TW_DEFINE_ERROR(InvalidArgument)
TW_DEFINE_ERROR(NotFound)
TW_DEFINE_ERROR(AlreadyExists)
TW_DEFINE_ERROR(ResourceExhausted)
TW_DEFINE_ERROR(FailedPrecondition)
TW_DEFINE_ERROR(Aborted)
TW_DEFINE_ERROR(OutOfRange)
TW_DEFINE_ERROR(Unimplemented)
TW_DEFINE_ERROR(Internal)
TW_DEFINE_ERROR(Unavailable)
TW_DEFINE_ERROR(DataLoss)
#undef TW_DEFINE_ERROR
}  // namespace errors

using errors::StrCat;

// For main(): prints a non-OK status to stderr as "towerflow: <code>: <message>"
// and returns the process exit status (0 for OK, 1 otherwise).
int Fail(const Status& status);

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = errors::Internal("StatusOr constructed from an OK Status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // Aborts with the status message when not OK; for tests and examples.
  T ValueOrDie() && {
    status_.Check();
    return std::move(*value_);
  }

 private:
  Status status_;
  std::optional<T> value_;
};

// A Status for a failed system call on a file: the code follows errno
// (NotFound, PermissionDenied, AlreadyExists, ResourceExhausted for ENOSPC and
// EMFILE, InvalidArgument for EISDIR, Unavailable for EIO, ...); the message
// is "<path>: <what>: <strerror>".
Status FileError(std::string_view path, std::string_view what, int err);

}  // namespace tw

#define TW_STATUS_CONCAT_INNER(a, b) a##b
#define TW_STATUS_CONCAT(a, b) TW_STATUS_CONCAT_INNER(a, b)

#define TW_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::tw::Status _tw_status = (expr);             \
    if (!_tw_status.ok()) return _tw_status;      \
  } while (0)

#define TW_ASSIGN_OR_RETURN(lhs, expr) \
  TW_ASSIGN_OR_RETURN_IMPL(TW_STATUS_CONCAT(_tw_statusor_, __LINE__), lhs, expr)
#define TW_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_STATUS_H_
