// Progress of a training run on stdout. On a terminal: one line redrawn in
// place (at most 10 times a second) with a bar, step/total, epoch, loss,
// accuracy, examples/s and the fill of the shuffle queues; Message prints a
// line above it. Otherwise: a plain line every `plain_every_seconds` (and at
// Finish), so logs stay readable. Not thread-safe: the training loop owns it.
#ifndef TOWERFLOW_CLI_PROGRESS_H_
#define TOWERFLOW_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tw::cli {

struct ProgressState {
  int64_t step = 0;
  int64_t total_steps = 0;  // 0: unknown
  int64_t epoch = 0;        // 1-based, 0: unknown
  int64_t total_epochs = 0;
  double loss = 0;
  double accuracy = -1;          // < 0: not shown
  double examples_per_sec = 0;
  double queue_fill = -1;        // 0..1 past min_after_dequeue; < 0: not shown
  std::string queue_label = "queue";  // what queue_fill is the fill of
};

class Progress {
 public:
  Progress(std::FILE* out, bool terminal, double plain_every_seconds);

  // Whether Update would draw now: the state is worth computing only then.
  bool Due() const;
  void Update(const ProgressState& state);
  // The final line (always printed; ends the bar's line on a terminal).
  void Finish(const ProgressState& state);
  void Message(const std::string& line);

  // The line for `state`, without a bar (what plain output prints).
  static std::string Describe(const ProgressState& state);

 private:
  void Draw(const ProgressState& state);

  std::FILE* out_;
  bool terminal_;
  double plain_every_seconds_;
  bool drawn_ = false;  // a bar line is on screen
  std::chrono::steady_clock::time_point last_;
};

// Whether stdout is a terminal (isatty), the default of `terminal` above.
bool StdoutIsTerminal();

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_PROGRESS_H_
