// The work of `towerflow train` once its flags are checked (train.cc): builds
// the seed's graph (filename queue, TFRecord reader, parse, decode, one shuffle
// queue that every tower dequeues its own batch from, the model replicated as
// towers with variables on the first tower's device (or on /device:CPU:0, or
// mirrored: one copy per tower),
// averaged gradients, one update), runs
// it under a Coordinator with the queue runners, and keeps what it learns:
// TensorBoard scalars and the graph in the logdir, safetensors checkpoints
// every N steps or seconds and at the end, an optional Chrome trace of a few
// steps. Stops at the step total, on an input error (reported with the
// reader's DataLoss, no checkpoint written past the last good one), or when
// interrupted (a final checkpoint is written).
//
// GPU towers: the input pipeline stays on /device:CPU:0 (queues, readers,
// parsing and DecodeRaw have no GPU kernels) and each tower's batch is copied
// to its GPU. By default the variables live on the first tower's GPU, so one
// GPU keeps its weights, gradients and updates in its own memory and a step
// waits for the device once (its fetches). With CPU-pinned variables
// (--variables cpu, TF1's parameter-server style: simple and exact, not the
// fastest) every step copies the weights to every GPU and each gradient back,
// and each gradient copy waits for the GPU; mirrored variables keep a copy on
// each GPU and all-reduce the gradients instead. With GPU towers the session uses soft placement, as
// TF1's multi-GPU examples do: a tower op without a GPU kernel runs on the CPU
// rather than failing (--log-device-placement shows where each op runs).
#ifndef TOWERFLOW_CLI_TRAINER_H_
#define TOWERFLOW_CLI_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/cli/models.h"
#include "towerflow/core/session_options.h"
#include "towerflow/data/record_writer.h"

namespace tw::cli {

struct TrainConfig {
  ModelConfig model;
  std::vector<std::string> files;
  Compression compression = Compression::kNone;
  std::vector<std::string> devices;  // canonical: "/device:CPU:1", "/device:GPU:0"
  int num_cpu_devices = 1;
  // GPUs the session creates (SessionOptions::max_gpus): 0 for CPU-only
  // towers, so that no op moves to a GPU; -1: every visible GPU.
  int max_gpus = 0;
  // The physical GPUs the session opens (SessionOptions::visible_gpus): a
  // rank's own under --devices auto|gpu when ranks share the host; empty: all.
  std::vector<int> visible_gpus = {};
  int logical_gpus_per_gpu = 1;  // SessionOptions::logical_gpus_per_gpu
  int64_t gpu_memory_limit_mb = 0;
  bool allow_tf32 = false;
  // SessionOptions::cuda_graphs (runtime/step_graph.h).
  SessionOptions::StepGraphMode cuda_graphs = SessionOptions::StepGraphMode::kAuto;
  // One copy of each variable per tower ("tower_<i>/hidden1/kernel"), the
  // gradients all-reduced (train/replicate.h's kMirrored); false: one copy on
  // `variable_device` shared by every tower (kSingleDevice).
  bool mirrored_variables = false;
  std::string variable_device = "/device:CPU:0";
  // Several processes: where the gradient buckets are reduced between them
  // (ChooseCrossProcessDevice, devices.h); empty: `variable_device`.
  std::string cross_process_device;
  int64_t batch_size = 100;          // per tower
  int64_t total_steps = 0;           // global step to reach
  int64_t records = 0;               // per epoch; 0: not counted
  int64_t epochs = 0;                // 0: training is given in steps
  std::string optimizer = "momentum";
  double learning_rate = 0.05;
  // "constant", or "linear": decays to 0 at total_steps (LearningRateAt).
  std::string lr_schedule = "constant";
  double l2 = 0;
  std::string logdir;
  int64_t seed = 0;
  bool resume = false;
  bool log_device_placement = false;
  bool allow_soft_placement = false;
  bool skip_corrupt = false;
  bool check_numerics = false;  // SessionOptions::check_numerics
  // A loss that is NaN or infinite ends the run with InvalidArgument naming the
  // step, before any checkpoint of the diverged weights is written.
  bool stop_on_nan_loss = true;
  // Bit-identical runs for the same seed, data and devices: one input thread,
  // a shuffle that draws from a buffer filled to the same size before every
  // draw, and the towers' dequeues in tower order (each tower's batch is then
  // a function of the seed alone).
  bool deterministic = false;
  // Several processes: "auto" (buckets of one host summed in shared memory) or
  // "mpi" (--allreduce); every rank must make the same calls.
  std::string allreduce = "auto";
  // The input pipeline (both read, shuffle, parse and batch the same way):
  //   "queue"    TF1's: a TFRecordReader per input thread, ReadUpTo +
  //              ParseExample + DecodeRaw, a shuffle queue of min_after_dequeue
  //              examples (enqueue_many), a dequeue per tower;
  //   "dataset"  tf.data's (data/dataset.h): file names shuffled each epoch ->
  //              TFRecord records (input_threads files read at once) -> Batch
  //              -> Map(ParseExample + DecodeRaw, input_threads parallel calls
  //              or autotuned, running ahead) -> Unbatch -> Shuffle of
  //              min_after_dequeue examples -> Batch -> Prefetch (autotuned), an
  //              IteratorGetNext per tower. Its position
  //              (read offsets, the shuffle buffer) is saved in every checkpoint
  //              (metadata "input_state", every rank's: train_input.h) and
  //              restored by --resume, so that a resumed run continues its epoch.
  std::string input = "dataset";
  // Queue: runner threads (0: 1). Dataset: files read at once (0: 1) and
  // parse calls (0: autotuned, TrainResult::input_autotune).
  int input_threads = 0;
  int64_t min_after_dequeue = 5000;
  int intra_op_threads = 0;
  int inter_op_threads = 0;  // SessionOptions::inter_op_threads
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
  std::vector<std::string> devices;  // this process's towers
  int ranks = 1;                     // processes of the job (dist/world.h)
  // --input dataset: what autotuning chose ("Map: 2 parallel calls, ..."),
  // and whether --resume continued the input from the checkpoint's position.
  std::string input_autotune;
  bool input_resumed = false;
  // Several processes: this rank's gradient all-reduce time per step (ms), and
  // the fraction of it that ran while the backward pass was still computing.
  double allreduce_ms_per_step = 0;
  double allreduce_overlap = 0;
  // The fraction of the gradient buckets' all-reduces made in place, on the
  // gradients' own block (no pack, no copy out: dist/internal/bucket_buffer.h).
  double allreduce_in_place = 0;
  // The fraction summed through memory the ranks of one host share
  // (World::SharedBucket; --allreduce auto).
  double allreduce_shared = 0;
  // With GPU towers, each tower GPU's physical description, in tower order
  // ("device: 0, name: NVIDIA H200, pci bus id: ..."; Device::physical_description).
  std::vector<std::string> gpus;
};

// Set from a signal handler to stop training cleanly (Ctrl-C).
extern std::atomic<bool> g_stop_requested;

// The variable scope of the variables a checkpoint of `config` holds the
// model in: "tower_0" with mirrored variables (tower 0's copies; eval rebuilds
// the model there), else "". Checkpoints record it as metadata "variable_scope".
std::string CheckpointVariableScope(const TrainConfig& config);

// Several processes (a dist::World started, dist/world.h): every rank calls
// Train with the same configuration; each reads its own shard of the files
// (dist/sharding.h), starts from rank 0's variables, averages gradients over
// every rank each step, and stops after the same step as the others. Rank 0
// alone locks the logdir and writes events and checkpoints; metrics are means
// over the ranks. A rank built differently from rank 0 is InvalidArgument
// naming the difference. A collective that times out is DeadlineExceeded
// naming the rank that never joined and the step.
//
// Errors: graph building's; the session's (a GPU in `devices` that does not
// exist: InvalidArgument); a step's (DataLoss from the input names the file and
// offset); checkpoint and event-file writing.
StatusOr<TrainResult> Train(const TrainConfig& config);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAINER_H_
