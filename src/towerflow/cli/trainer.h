// The work of `towerflow train` once its flags are checked (train.cc): builds
// the seed's graph (filename queue, TFRecord reader, parse, decode, one shuffle
// queue that every tower dequeues its own batch from, the model replicated as
// towers with variables on /device:CPU:0, averaged gradients, one update), runs
// it under a Coordinator with the queue runners, and keeps what it learns:
// TensorBoard scalars and the graph in the logdir, safetensors checkpoints
// every N steps or seconds and at the end, an optional Chrome trace of a few
// steps. Stops at the step total, on an input error (reported with the
// reader's DataLoss, no checkpoint written past the last good one), or when
// interrupted (a final checkpoint is written).
#ifndef TOWERFLOW_CLI_TRAINER_H_
#define TOWERFLOW_CLI_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/cli/models.h"
#include "towerflow/data/record_writer.h"

namespace tw::cli {

struct TrainConfig {
  ModelConfig model;
  std::vector<std::string> files;
  Compression compression = Compression::kNone;
  std::vector<std::string> devices;  // canonical: "/device:CPU:1"
  int num_cpu_devices = 1;
  int64_t batch_size = 100;          // per tower
  int64_t total_steps = 0;           // global step to reach
  int64_t records = 0;               // per epoch; 0: not counted
  int64_t epochs = 0;                // 0: training is given in steps
  std::string optimizer = "momentum";
  double learning_rate = 0.05;
  double l2 = 0;
  std::string logdir;
  int64_t seed = 0;
  bool resume = false;
  bool log_device_placement = false;
  bool allow_soft_placement = false;
  bool skip_corrupt = false;
  bool check_numerics = false;  // SessionOptions::check_numerics
  int input_threads = 1;
  int64_t min_after_dequeue = 5000;
  int intra_op_threads = 0;
  int64_t checkpoint_every_steps = 0;    // 0: by time only
  double checkpoint_every_seconds = 60;  // 0: by steps only
  int keep_checkpoints = 5;
  int64_t summary_every_steps = 100;
  double log_every_seconds = 10;  // plain (non-terminal) progress lines
  std::string trace_file;
  int64_t trace_steps = 5;
};

struct TrainResult {
  int64_t first_step = 0;  // the global step training started from (resume)
  int64_t global_step = 0;
  int64_t steps = 0;       // run by this invocation
  int64_t examples = 0;
  double seconds = 0;
  double examples_per_sec = 0;  // after the first steps (queue filling)
  double final_loss = 0;
  double final_accuracy = 0;    // on the last training batches
  bool interrupted = false;
  std::string checkpoint;        // the newest checkpoint written or restored
  std::vector<std::string> devices;
};

// Set from a signal handler to stop training cleanly (Ctrl-C).
extern std::atomic<bool> g_stop_requested;

StatusOr<TrainResult> Train(const TrainConfig& config);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAINER_H_
