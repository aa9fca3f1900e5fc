#include "towerflow/core/logging.h"

#include <cstdio>
#include <cstdlib>

namespace tw::internal {

namespace {
int MinLevel() {
  static const int level = [] {
    const char* env = std::getenv("TOWERFLOW_LOG_LEVEL");
    return env ? std::atoi(env) : 1;
  }();
  return level;
}
}  // namespace

bool LogLevelEnabled(LogLevel level) { return static_cast<int>(level) >= MinLevel(); }

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level), file_(file), line_(line) {}

LogMessage::~LogMessage() {
  static const char kLetters[] = "IWEF";
  std::string text = stream_.str();
  if (level_ == LogLevel::kFatal) {
    std::fprintf(stderr, "F towerflow %s:%d: %s\n", file_, line_, text.c_str());
    std::abort();
  }
  std::fprintf(stderr, "%c towerflow: %s\n", kLetters[static_cast<int>(level_)], text.c_str());
}

}  // namespace tw::internal
