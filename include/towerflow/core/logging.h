// Minimal logging: TW_LOG(INFO|WARNING|ERROR) << ...; and TW_CHECK(cond) << ...;
// for programmer errors only (a failed check aborts). Lines go to stderr as
// "I towerflow: ...". Thread-safe: each message is written with one call.
// The minimum level comes from TOWERFLOW_LOG_LEVEL (0 INFO, 1 WARNING, 2 ERROR),
// default WARNING.
#ifndef TOWERFLOW_CORE_LOGGING_H_
#define TOWERFLOW_CORE_LOGGING_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <sstream>

namespace tw {

enum class LogLevel { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

namespace internal {

bool LogLevelEnabled(LogLevel level);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Swallows the stream expression when a log level is disabled.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace tw

#define TW_LOG_INFO ::tw::LogLevel::kInfo
#define TW_LOG_WARNING ::tw::LogLevel::kWarning
#define TW_LOG_ERROR ::tw::LogLevel::kError

#define TW_LOG(level)                                     \
  !::tw::internal::LogLevelEnabled(TW_LOG_##level)        \
      ? (void)0                                           \
      : ::tw::internal::Voidify() &                       \
            ::tw::internal::LogMessage(TW_LOG_##level, __FILE__, __LINE__).stream()

#define TW_CHECK(cond)                                                                  \
  (cond) ? (void)0                                                                      \
         : ::tw::internal::Voidify() &                                                  \
               ::tw::internal::LogMessage(::tw::LogLevel::kFatal, __FILE__, __LINE__).stream() \
                   << "Check failed: " #cond " "

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_LOGGING_H_
