// Validators for the `towerflow` subcommands' numeric flags (CLI11).
//
// CLI11's own number checks accept "nan" (every comparison with NaN is false,
// so NaN passes "> 0") and print their open bounds as DBL_MAX written out in
// 309 digits. These accept only finite numbers and say the bound in words:
// "--lr: 'nan' is not a finite number > 0". Also the one-line form of parse
// errors. Header-only; the validators hold no state and are thread-safe.
#ifndef TOWERFLOW_CLI_FLAGS_H_
#define TOWERFLOW_CLI_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace tw::cli {

namespace flags_internal {

// The whole of `text` as a finite double; false for anything else (empty,
// trailing characters, nan, inf, out of range).
inline bool ParseFinite(const std::string& text, double* value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno != ERANGE && std::isfinite(*value);
}

// The whole of `text` as a decimal int64; false otherwise.
inline bool ParseInt64(const std::string& text, int64_t* value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE) return false;
  *value = v;
  return true;
}

}  // namespace flags_internal

// A finite number greater than 0 (learning rates).
inline CLI::Validator PositiveFiniteNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!flags_internal::ParseFinite(text, &v) || !(v > 0)) return "'" + text + "' is not a finite number > 0";
        return "";
      },
      "NUMBER > 0", "PositiveFiniteNumber");
}

// A finite number >= 0 (weight decay, periods in seconds; 0 often means "off").
inline CLI::Validator NonNegativeFiniteNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!flags_internal::ParseFinite(text, &v) || !(v >= 0)) return "'" + text + "' is not a finite number >= 0";
        return "";
      },
      "NUMBER >= 0", "NonNegativeFiniteNumber");
}

// An integer in [lo, hi], named in words when `hi` is INT64_MAX.
inline CLI::Validator IntegerIn(int64_t lo, int64_t hi) {
  const std::string range = lo == INT64_MIN && hi == INT64_MAX ? "(64-bit)"
                            : hi == INT64_MAX                  ? ">= " + std::to_string(lo)
                                               : "in " + std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        int64_t v = 0;
        if (!flags_internal::ParseInt64(text, &v) || v < lo || v > hi) {
          return "'" + text + "' is not an integer " + range;
        }
        return "";
      },
      "INT " + range, "IntegerIn");
}

// A value that is not empty (paths, globs, lists).
inline CLI::Validator NonEmptyText() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "is empty" : ""; }, "TEXT",
                        "NonEmptyText");
}

// Any int64 (seeds): CLI11 alone took "" and an overflowing number.
inline CLI::Validator AnyInteger() { return IntegerIn(INT64_MIN, INT64_MAX); }

// Parse errors of `app` as one line on stderr, "towerflow <command>: <what>
// (see --help)", instead of CLI11's two.
inline void OneLineErrors(CLI::App& app, const std::string& command) {
  app.failure_message([command](const CLI::App*, const CLI::Error& e) {
    return "towerflow " + command + ": " + e.what() + " (see --help)\n";
  });
}

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_FLAGS_H_
