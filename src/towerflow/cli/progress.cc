#include "towerflow/cli/progress.h"

#include <unistd.h>

#include <algorithm>

namespace tw::cli {
namespace {

constexpr int kBarWidth = 24;
constexpr double kRedrawSeconds = 0.1;

std::string Format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, value);
  return buf;
}

std::string Rate(double per_sec) {
  if (per_sec >= 1e6) return Format("%.2fM", per_sec / 1e6);
  if (per_sec >= 1e3) return Format("%.1fk", per_sec / 1e3);
  return Format("%.0f", per_sec);
}

}  // namespace

bool StdoutIsTerminal() { return isatty(STDOUT_FILENO) == 1; }

Progress::Progress(std::FILE* out, bool terminal, double plain_every_seconds)
    : out_(out), terminal_(terminal), plain_every_seconds_(plain_every_seconds),
      last_(std::chrono::steady_clock::now()) {}

std::string Progress::Describe(const ProgressState& s) {
  std::string line = "step " + std::to_string(s.step);
  if (s.total_steps > 0) line += "/" + std::to_string(s.total_steps);
  if (s.epoch > 0) {
    line += " epoch " + std::to_string(s.epoch);
    if (s.total_epochs > 0) line += "/" + std::to_string(s.total_epochs);
  }
  line += " loss " + Format("%.4f", s.loss);
  if (s.accuracy >= 0) line += " acc " + Format("%.3f", s.accuracy);
  line += " " + Rate(s.examples_per_sec) + " ex/s";
  if (s.queue_fill >= 0) line += " " + s.queue_label + " " + Format("%.0f%%", 100.0 * s.queue_fill);
  return line;
}

void Progress::Draw(const ProgressState& s) {
  std::string bar;
  if (s.total_steps > 0) {
    const double frac = std::clamp(static_cast<double>(s.step) / static_cast<double>(s.total_steps), 0.0, 1.0);
    const int filled = static_cast<int>(frac * kBarWidth);
    bar = "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kBarWidth - filled), '.') +
          "] " + Format("%3.0f%% ", 100.0 * frac);
  }
  // \r and erase-to-end-of-line: the line shrinks cleanly when numbers do.
  std::fprintf(out_, "\r%s%s\033[K", bar.c_str(), Describe(s).c_str());
  std::fflush(out_);
  drawn_ = true;
}

bool Progress::Due() const {
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_).count();
  return terminal_ ? (!drawn_ || since >= kRedrawSeconds) : since >= plain_every_seconds_;
}

void Progress::Update(const ProgressState& s) {
  if (!Due()) return;
  last_ = std::chrono::steady_clock::now();
  if (terminal_) {
    Draw(s);
    return;
  }
  std::fprintf(out_, "%s\n", Describe(s).c_str());
  std::fflush(out_);
}

void Progress::Finish(const ProgressState& s) {
  if (terminal_) {
    Draw(s);
    std::fputc('\n', out_);
    drawn_ = false;
  } else {
    std::fprintf(out_, "%s\n", Describe(s).c_str());
  }
  std::fflush(out_);
}

void Progress::Message(const std::string& line) {
  if (terminal_ && drawn_) {
    std::fprintf(out_, "\r\033[K%s\n", line.c_str());
    drawn_ = false;  // redrawn by the next Update
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

}  // namespace tw::cli
