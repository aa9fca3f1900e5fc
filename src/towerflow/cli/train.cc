// `towerflow train`: trains a model on TFRecord files with the seed's whole
// pipeline on every device asked for (trainer.h), then evaluates it on
// --eval-data. Progress on stdout (progress.h); the last line of stdout is one
// JSON object: steps, global_step, examples, seconds, examples_per_sec,
// final_loss, train_accuracy, test_loss and test_accuracy (with --eval-data),
// devices, towers, gpus (with GPU towers: each tower GPU's physical
// description), checkpoint, logdir, interrupted.
//
// Devices: --devices auto is every visible GPU (one tower per logical GPU,
// --logical-gpus of them per physical GPU) in a build with the CUDA backend on
// a machine with a GPU, else one virtual CPU device per core; --devices gpu is
// every GPU (a usage error when none is visible); lists name devices one by one
// (cpu:0,cpu:1 or /gpu:0,/gpu:1). --gpu-memory-mb, --allow-tf32 and
// --cuda-graphs configure the GPUs; they and --logical-gpus change nothing in
// a CPU-only run.
//
// Bad usage (unknown flags, bad values, files that match nothing, data whose
// first record does not fit the model) is one line on stderr and exit status
// 2; a failure while training (a corrupt record: DataLoss naming the file and
// offset) is one line and exit status 1. Ctrl-C stops after the current step,
// writes a final checkpoint and exits 0 (a second Ctrl-C, a second later,
// kills at once).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "towerflow/cli/commands.h"
#include "towerflow/cli/devices.h"
#include "towerflow/cli/train_signals.h"
#include "towerflow/cli/evaluate.h"
#include "towerflow/cli/flags.h"
#include "towerflow/cli/train_json.h"
#include "towerflow/cli/trainer.h"
#include "towerflow/core/file_checks.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/device/device_set.h"
#include "towerflow/dist/launch.h"
#include "towerflow/dist/world.h"

namespace tw::cli {
namespace {

struct Flags {
  std::string data, eval_data, model = "mlp", hidden, devices = "auto", optimizer = "momentum", logdir;
  std::string trace, variables = "auto", lr_schedule = "constant", input = "dataset", cuda_graphs = "auto";
  int64_t batch_size = 100, epochs = 0, steps = 0, seed = 0;
  std::optional<double> lr;
  double l2 = 0;
  bool log_device_placement = false, allow_soft_placement = false, resume = false, skip_corrupt = false;
  bool check_numerics = false, allow_tf32 = false, deterministic = false;
  std::string on_nan_loss = "stop", bind_cores = "auto", allreduce = "auto";
  int input_threads = 0, intra_op_threads = 0, inter_op_threads = 0, keep_checkpoints = 5, logical_gpus = 1;
  int64_t gpu_memory_mb = 0;
  int64_t min_after_dequeue = 5000, checkpoint_every_steps = 0, summary_every_steps = 100, trace_steps = 5;
  double checkpoint_every_secs = 60, log_every_secs = 10;
  double collective_timeout = 300;
};

int UsageError(const Status& status) {
  std::fprintf(stderr, "towerflow train: %s\n", status.message().c_str());
  return 2;
}

double DefaultLearningRate(const std::string& optimizer) {
  if (optimizer == "adam" || optimizer == "rmsprop") return 0.001;
  if (optimizer == "sgd") return 0.1;
  return 0.01;
}


// The data files, their compression (the first file's, which every file must
// share: one reader reads them all) and the first record, for the schema check.
struct DataFiles {
  std::vector<std::string> files;
  Compression compression = Compression::kNone;
  std::string first_record;
  size_t first_file = 0;  // the file it is in
};

StatusOr<DataFiles> OpenData(const std::string& flag, const std::string& glob, bool skip_corrupt) {
  DataFiles d;
  d.files = io::Glob(glob);
  if (d.files.empty()) return errors::NotFound(flag, " ", glob, ": no files match");
  // Training reads its files more than once (the count, then every epoch),
  // and a FIFO would block its first open until a writer came: files only.
  for (const std::string& f : d.files) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(f, ec);
    if (ec) return errors::NotFound(flag, " ", f, ": ", ec.message());
    if (std::filesystem::is_directory(st)) {
      return errors::InvalidArgument(flag, " ", f, " is a directory: give its files, as a glob (",
                                     (std::filesystem::path(f) / "*.tfrecord").string(), ")");
    }
    if (!std::filesystem::is_regular_file(st)) {
      return errors::InvalidArgument(flag, " ", f, " is ", DescribeFileKind(f),
                                     ": training reads its files more than once (write a stream to a file first)");
    }
  }
  auto first = DetectFileCompression(d.files[0]);
  if (!first.ok()) return first.status();
  d.compression = *first;
  for (const std::string& f : d.files) {
    auto c = DetectFileCompression(f);
    if (!c.ok()) return c.status();
    if (*c != d.compression) {
      auto kind = [](Compression k) {
        return k == Compression::kNone ? std::string("not compressed") : std::string(CompressionName(k));
      };
      return errors::InvalidArgument(flag, ": ", f, " is ", kind(*c), " but ", d.files[0], " is ", kind(d.compression),
                                     "; every file must be compressed alike");
    }
  }
  // The first record, for the schema: with --skip-corrupt-records the first
  // readable one, in whichever file has it (the count and the training skip
  // the others alike).
  for (size_t i = 0; i < (skip_corrupt ? d.files.size() : 1); ++i) {
    auto reader = RecordReader::Open(d.files[i], {.compression = d.compression, .skip_corrupt = skip_corrupt});
    if (!reader.ok()) return reader.status();
    Status s = (*reader)->ReadRecord(&d.first_record);
    if (s.ok()) {
      d.first_file = i;
      return d;
    }
    if (!errors::IsOutOfRange(s)) return s;
  }
  return errors::InvalidArgument(flag, ": ", skip_corrupt && d.files.size() > 1 ? glob : d.files[0],
                                 skip_corrupt ? " holds no readable records" : " holds no records");
}

// This machine's memory in bytes (0: unknown).
double PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

// Refuses, before anything starts, a run whose shuffle buffer or model could
// never fit this machine's memory (it would be killed without a word, or end
// in std::bad_alloc): InvalidArgument naming the flag and both sizes. Rough
// on purpose, and only against all of the memory: the examples as large as
// the first record, the model's weights four times over (the variables, the
// optimizer's slots, the gradients).
Status CheckMemory(const TrainConfig& c, size_t record_bytes, const HostShare& share) {
  const double ram = PhysicalMemoryBytes();
  if (ram <= 0) return Status::OK();
  const double ranks = std::max(1, share.local_size);  // ranks sharing this host each keep their own
  const double buffer = static_cast<double>(c.min_after_dequeue) * static_cast<double>(record_bytes) * ranks;
  auto gb = [](double b) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f GB", b / 1e9);
    return std::string(text);
  };
  if (buffer > ram) {
    return errors::InvalidArgument("--min-after-dequeue ", c.min_after_dequeue, " keeps about ", gb(buffer),
                                   " of examples in its shuffle buffer (", record_bytes, " bytes each",
                                   ranks > 1 ? StrCat(", in each of ", share.local_size, " processes") : "",
                                   "), more than this machine's ", gb(ram), " of memory");
  }
  if (c.model.name != "cnn") {
    double weights = 0, in = c.model.name == "seed" ? 2.0 * static_cast<double>(c.model.n_features) : 784.0;
    for (int64_t h : c.model.hidden) {
      weights += (in + 1) * static_cast<double>(h);
      in = static_cast<double>(h);
    }
    weights += (in + 1) * 10;
    const double bytes = weights * 4 * 4 * ranks;
    if (bytes > ram) {
      return errors::InvalidArgument("--hidden: a model of ", std::llround(weights / 1e6), " million weights needs ",
                                     "about ", gb(bytes), " (its variables, the optimizer's slots and the gradients",
                                     ranks > 1 ? StrCat(", in each of ", share.local_size, " processes") : "",
                                     "), more than this machine's ", gb(ram), " of memory");
    }
  }
  return Status::OK();
}

// Records per epoch (every CRC checked, so corrupt data is found before the first step).
StatusOr<int64_t> CountRecords(const DataFiles& d, bool skip_corrupt) {
  int64_t n = 0;
  std::string_view record;
  for (const std::string& f : d.files) {
    auto reader = RecordReader::Open(f, {.compression = d.compression, .skip_corrupt = skip_corrupt, .inflate_ahead = true});
    if (!reader.ok()) return reader.status();
    for (;;) {
      Status s = (*reader)->ReadRecordView(&record);
      if (errors::IsOutOfRange(s)) break;
      if (!s.ok()) return s;
      ++n;
    }
  }
  return n;
}

// Checks the flags and the data; fills the configuration. Errors are usage
// errors. `writes_trace`: this process writes --trace (rank 0).
Status Configure(const Flags& f, const HostShare& share, bool writes_trace, TrainConfig* c, DataFiles* data) {
  if (f.epochs > 0 && f.steps > 0) return errors::InvalidArgument("give --epochs or --steps, not both");
  // A dataset's parallel map keeps its order; a queue filled by several threads does not.
  if (f.deterministic && f.input == "queue" && f.input_threads > 1) {
    return errors::InvalidArgument("--deterministic reads with one input thread: --input-threads ", f.input_threads,
                                   " would race for the shuffle queue");
  }
  c->model.name = f.model;
  if (f.model != "cnn") {
    auto hidden = ParseHidden(f.hidden.empty() ? (f.model == "seed" ? "64,64" : "256,256") : f.hidden);
    if (!hidden.ok()) return hidden.status();
    c->model.hidden = *hidden;
  } else if (!f.hidden.empty()) {
    return errors::InvalidArgument("--hidden applies to mlp and seed, not cnn (the tutorial network is fixed)");
  }
  auto devices = ResolveDevices(f.devices, f.logical_gpus, share);
  if (!devices.ok()) return devices.status();
  c->devices = devices->towers;
  c->num_cpu_devices = devices->num_cpu_devices;
  c->visible_gpus = devices->visible_gpus;
  // A CPU-only run creates no GPU devices: nothing unpinned moves to a GPU.
  c->max_gpus = devices->uses_gpus ? -1 : 0;
  c->logical_gpus_per_gpu = f.logical_gpus;
  c->gpu_memory_limit_mb = f.gpu_memory_mb;
  c->allow_tf32 = f.allow_tf32;
  c->cuda_graphs = f.cuda_graphs == "on"    ? SessionOptions::StepGraphMode::kOn
                   : f.cuda_graphs == "off" ? SessionOptions::StepGraphMode::kOff
                                            : SessionOptions::StepGraphMode::kAuto;
  c->mirrored_variables = f.variables == "mirrored";
  // auto: where the first tower runs (/device:CPU:0 for CPU towers, a GPU
  // tower's own memory for GPU towers); cpu: TF1's CPU-pinned parameters.
  c->variable_device = f.variables == "cpu" ? "/device:CPU:0" : c->devices.front();
  auto opened = OpenData("--data", f.data, f.skip_corrupt);
  if (!opened.ok()) return opened.status();
  *data = std::move(*opened);
  if (Status s = CheckSchema(data->first_record, data->files[data->first_file], &c->model); !s.ok()) return s;
  c->files = data->files;
  c->compression = data->compression;
  c->batch_size = f.batch_size;
  c->optimizer = f.optimizer;
  c->learning_rate = f.lr ? *f.lr : DefaultLearningRate(f.optimizer);
  c->l2 = f.l2;
  c->lr_schedule = f.lr_schedule;
  c->logdir = f.logdir;
  {
    // Checked now, not after the training: where its outputs go.
    std::error_code ec;
    if (std::filesystem::exists(f.logdir, ec) && !std::filesystem::is_directory(f.logdir, ec)) {
      return errors::InvalidArgument("--logdir ", f.logdir, " is ", DescribeFileKind(f.logdir), ", not a directory");
    }
  }
  if (!f.trace.empty()) {
    if (Status s = CheckReplaceableFile(f.trace); !s.ok()) return errors::InvalidArgument("--trace ", s.message());
    // Its directory is made now (as the logdir is), so that the trace written
    // after the training cannot fail for want of it.
    const std::filesystem::path parent = std::filesystem::path(f.trace).parent_path();
    std::error_code ec, again;
    // Made by another process meanwhile (the ranks of one job all get here):
    // create_directories says false without an error; what counts is that
    // the directory is there.
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec) &&
        !std::filesystem::create_directories(parent, ec) && !std::filesystem::is_directory(parent, again)) {
      return errors::InvalidArgument("--trace ", f.trace, ": cannot make the directory ", parent.string(), ": ",
                                     ec.message());
    }
    // Nor for want of the right to write there (rank 0 writes it): a file
    // of a name of its own beside it, made and removed at once.
    if (writes_trace) {
      std::string probe = f.trace + ".probe.XXXXXX";
      const int fd = ::mkstemp(probe.data());
      if (fd < 0) {
        return errors::InvalidArgument("--trace ", f.trace, ": cannot write beside it (", probe, "): ",
                                       std::strerror(errno));
      }
      ::close(fd);
      ::unlink(probe.c_str());
    }
  }
  c->seed = f.seed;
  c->resume = f.resume;
  c->log_device_placement = f.log_device_placement;
  c->allow_soft_placement = f.allow_soft_placement;
  c->skip_corrupt = f.skip_corrupt;
  c->check_numerics = f.check_numerics;
  c->stop_on_nan_loss = f.on_nan_loss == "stop";
  c->deterministic = f.deterministic;
  c->allreduce = f.allreduce;
  c->input = f.input;
  c->input_threads = f.input_threads;
  c->min_after_dequeue = f.min_after_dequeue;
  if (Status s = CheckMemory(*c, data->first_record.size(), share); !s.ok()) return s;
  // Ranks sharing a host share its cores (0: all of them, for one process).
  c->intra_op_threads = f.intra_op_threads > 0 || share.local_size == 1 ? f.intra_op_threads : CoresOfThisProcess(share);
  c->inter_op_threads = f.inter_op_threads > 0 || share.local_size == 1 ? f.inter_op_threads : CoresOfThisProcess(share);
  c->checkpoint_every_steps = f.checkpoint_every_steps;
  c->checkpoint_every_seconds = f.checkpoint_every_secs;
  c->keep_checkpoints = f.keep_checkpoints;
  c->summary_every_steps = f.summary_every_steps;
  c->log_every_seconds = f.log_every_secs;
  c->trace_file = f.trace;
  c->trace_steps = f.trace_steps;
  return Status::OK();
}

// A collective's timeout, said by the world's hook as it happens (before the
// step unwinds and the input's threads are joined, which can take long), so
// that rank 0's diagnosis is out before a later rank's own timeout ends the
// job; the error that reaches `fail` afterwards is not said again.
std::mutex g_timeout_mu;
std::string g_timeout_said;  // guarded by g_timeout_mu

void SayTimeout(const Status& status) {
  const dist::World* world = dist::World::Current();
  std::lock_guard<std::mutex> lock(g_timeout_mu);
  if (!g_timeout_said.empty()) return;
  g_timeout_said = status.message();
  if (world == nullptr) {
    std::fprintf(stderr, "towerflow train: %s\n", status.ToString().c_str());
  } else {
    std::fprintf(stderr, "towerflow train: rank %d of %d (step %lld): %s\n", world->rank(), world->size(),
                 static_cast<long long>(world->step()), status.ToString().c_str());
  }
  std::fflush(stderr);
}

bool TimeoutSaid(const Status& status) {
  std::lock_guard<std::mutex> lock(g_timeout_mu);
  return !g_timeout_said.empty() && status.message().find(g_timeout_said) != std::string::npos;
}

}  // namespace

int RunTrain(int argc, char** argv) {
  TakeSignalsOnOneThread();  // before any thread starts (train_signals.h)
  CLI::App app{"Train a model on TFRecord files on every device", "towerflow train"};
  Flags f;
  app.add_option("--data", f.data, "training TFRecord files (a glob)")->required()->check(NonEmptyText());
  app.add_option("--eval-data", f.eval_data, "test TFRecord files (a glob), evaluated at the end")
      ->check(NonEmptyText());
  app.add_option("--model", f.model, "mlp | cnn (Fashion-MNIST schema) | seed (the seed's schema)")
      ->check(CLI::IsMember({"mlp", "cnn", "seed"}));
  app.add_option("--hidden", f.hidden, "hidden layer widths of mlp/seed (default 256,256; seed 64,64)")
      ->check(NonEmptyText());
  app.add_option("--devices", f.devices,
                 "one tower per device: auto (every GPU, else every core) | gpu (every GPU) | cpu:0,cpu:1 | gpu:0,gpu:1");
  app.add_option("--logical-gpus", f.logical_gpus, "logical GPUs (devices, towers) per physical GPU")
      ->check(CLI::Range(1, 64));
  app.add_option("--gpu-memory-mb", f.gpu_memory_mb, "memory limit per logical GPU in MiB (0: an even share)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_flag("--allow-tf32", f.allow_tf32, "float32 MatMul may use TF32 tensor cores (faster, 10-bit mantissa)");
  app.add_option("--cuda-graphs", f.cuda_graphs,
                 "each GPU's kernels of a step recorded once as a CUDA graph and replayed: auto (on CUDA GPUs) | on | "
                 "off (kernel by kernel)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--variables", f.variables,
                 "auto: one copy on the first tower's device (default) | cpu: one copy on /device:CPU:0 "
                 "(TF1 style) | mirrored: one copy per tower, all-reduced")
      ->check(CLI::IsMember({"auto", "cpu", "mirrored"}));
  app.add_option("--batch-size", f.batch_size, "examples per tower per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--epochs", f.epochs, "passes over --data (default 1)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--steps", f.steps, "train until the global step reaches N")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--optimizer", f.optimizer,
                 "sgd | momentum (0.9) | adam | rmsprop (decay 0.9, epsilon 1e-10) | adagrad (accumulators from 0.1)")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "rmsprop", "adagrad"}));
  app.add_option("--lr", f.lr,
                 "learning rate (default: sgd 0.1, momentum 0.01, adam 0.001, rmsprop 0.001, adagrad 0.01)")
      ->check(PositiveFiniteNumber());
  app.add_option("--lr-schedule", f.lr_schedule,
                 "constant (default) | linear: the rate decays linearly to 0 at the last step (--steps or the "
                 "epochs' steps)")
      ->check(CLI::IsMember({"constant", "linear"}));
  app.add_option("--l2", f.l2, "L2 weight decay on the kernels")->check(NonNegativeFiniteNumber());
  app.add_option("--logdir", f.logdir, "where TensorBoard events and checkpoints go")
      ->required()
      ->check(NonEmptyText());
  app.add_option("--seed", f.seed, "graph seed: initial weights, shuffling, dropout")->check(AnyInteger());
  app.add_flag("--log-device-placement", f.log_device_placement, "print the device of every op");
  app.add_flag("--allow-soft-placement", f.allow_soft_placement,
               "move ops without a kernel on their device (always on with GPU towers)");
  app.add_flag("--resume", f.resume, "continue from the newest valid checkpoint in --logdir");
  app.add_option("--trace", f.trace, "write a Chrome trace (Perfetto) of a few steps to FILE")
      ->check(NonEmptyText());
  app.add_option("--trace-steps", f.trace_steps, "steps traced after the first three")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  app.add_flag("--skip-corrupt-records", f.skip_corrupt, "skip records with bad CRCs (counted, logged)");
  app.add_flag("--check-numerics", f.check_numerics, "stop at the first op producing NaN or Inf, naming it");
  app.add_option("--input", f.input,
                 "input pipeline: queue (TF1's reader, shuffle queue) or dataset (tf.data's, its position "
                 "checkpointed)")
      ->check(CLI::IsMember({"queue", "dataset"}));
  app.add_option("--input-threads", f.input_threads,
                 "threads reading and parsing: queue runner threads (default 1), or the dataset's files read at "
                 "once and parse calls (default: 1 file, calls autotuned)")
      ->check(CLI::Range(1, 64));
  app.add_option("--min-after-dequeue", f.min_after_dequeue, "shuffle buffer: records kept in the queue")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app.add_option("--intra-op-threads", f.intra_op_threads, "threads for MatMul/Conv2D, shared by CPU devices (0: all)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--inter-op-threads", f.inter_op_threads,
                 "threads running a step's independent ops, the calling thread included (0: one per core)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--checkpoint-every-steps", f.checkpoint_every_steps, "also checkpoint every N steps (0: off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--checkpoint-every-secs", f.checkpoint_every_secs, "checkpoint every N seconds (0: off)")
      ->check(NonNegativeFiniteNumber());
  app.add_option("--keep-checkpoints", f.keep_checkpoints, "checkpoints kept")->check(CLI::Range(1, 1 << 20));
  app.add_option("--summary-every-steps", f.summary_every_steps, "TensorBoard scalars every N steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--log-every-secs", f.log_every_secs, "progress line period when stdout is not a terminal")
      ->check(NonNegativeFiniteNumber());
  app.add_option("--on-nan-loss", f.on_nan_loss,
                 "stop: a NaN or infinite loss ends the run with an error naming the step, the newest "
                 "checkpoint kept (default) | continue: train on")
      ->check(CLI::IsMember({"stop", "continue"}));
  app.add_option("--collective-timeout", f.collective_timeout,
                 "several processes (mpirun): seconds a rank waits for the others in a collective before the "
                 "job ends with an error naming the missing rank and the step (0: forever)")
      ->check(NonNegativeFiniteNumber());
  app.add_option("--allreduce", f.allreduce,
                 "several processes on one host: auto: gradient buckets summed in memory the ranks share, each "
                 "rank its share (default; MPI's with --deterministic past 2 ranks) | mpi: MPI's all-reduce")
      ->check(CLI::IsMember({"auto", "mpi"}));
  app.add_option("--bind-cores", f.bind_cores,
                 "several processes on one host: auto: each rank runs on its share of the host's cores unless "
                 "its launcher bound it (default) | none: every rank may run on every core")
      ->check(CLI::IsMember({"auto", "none"}));
  app.add_flag("--deterministic", f.deterministic,
               "two runs with the same --seed, data and --devices are bit-identical (one input thread, "
               "towers take their batches in order; slower)");
  OneLineErrors(app, "train");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  // Launched as one of several processes (mpirun): the job's world is
  // joined once the flags and data are checked (every rank checks alike).
  const dist::Launch launch = dist::DetectLaunch();
  const int ranks = launch.multi_process ? launch.size : 1;
  // Before any thread starts: every thread inherits the binding.
  HostShare share = ThisHostShare(launch);
  const std::string binding = BindToHostShare(&share, f.bind_cores == "auto");
  TrainConfig config;
  DataFiles data;
  if (Status s = Configure(f, share, /*writes_trace=*/launch.rank == 0, &config, &data); !s.ok()) return UsageError(s);
  if (f.logical_gpus > 1 && config.max_gpus == 0 && launch.rank == 0) {
    std::fprintf(stderr, "towerflow train: note: --logical-gpus %d changes nothing: every tower is on a CPU (%s)\n",
                 f.logical_gpus, f.devices == "auto" ? NoGpuReason().c_str() : ("--devices " + f.devices).c_str());
  }
  std::vector<std::string> eval_files;
  if (!f.eval_data.empty()) {
    auto eval = OpenData("--eval-data", f.eval_data, f.skip_corrupt);
    if (!eval.ok()) return UsageError(eval.status());
    ModelConfig probe = config.model;
    if (Status s = CheckSchema(eval->first_record, eval->files[eval->first_file], &probe); !s.ok()) {
      return UsageError(s);
    }
    if (probe.n_features != config.model.n_features) {
      return UsageError(errors::InvalidArgument("--eval-data ", eval->files[eval->first_file], ": x has ", probe.n_features,
                                                " features per row but --data has ", config.model.n_features));
    }
    eval_files = eval->files;
  }
  const int64_t per_step = config.batch_size * static_cast<int64_t>(config.devices.size()) * ranks;
  if (f.steps > 0) {
    config.total_steps = f.steps;
  } else {
    config.epochs = f.epochs > 0 ? f.epochs : 1;
    auto records = CountRecords(data, config.skip_corrupt);
    if (!records.ok()) return Fail(records.status());
    config.records = *records;
    config.total_steps = config.epochs * config.records / per_step;
    if (config.total_steps == 0) {
      return UsageError(errors::InvalidArgument("--data has ", config.records, " records: fewer than one step of ",
                                                per_step, " (--batch-size x towers", ranks > 1 ? " x ranks" : "",
                                                ") in ", config.epochs, " epoch(s)"));
    }
  }

  dist::World* world = nullptr;
  if (launch.multi_process) {
    auto started =
        dist::World::Start({.collective_timeout_seconds = f.collective_timeout,
                            // A shared round adds in rank order, MPI in its own: with more than 2
                            // ranks, a round that falls back would change the bits of a
                            // --deterministic run.
                            .share_memory = f.allreduce == "auto" && !(f.deterministic && ranks > 2),
                            .on_timeout = SayTimeout});
    if (!started.ok()) return UsageError(started.status());
    world = *started;
  }
  const bool chief = world == nullptr || world->rank() == 0;
  // From here on a rank that fails ends the whole job (the launcher stops the
  // others), and one that succeeds leaves it with the others.
  auto finish = [&](int code) {
    if (world != nullptr) {
      if (code != 0) world->Abort(code);
      world->Finalize();
    }
    return code;
  };
  auto fail = [&](const Status& status) {
    if (world == nullptr) return Fail(status);
    // The step it was at (0: before training), which errors from the input
    // or a kernel do not say.
    if (TimeoutSaid(status)) return finish(1);
    {
      // Said once: a timeout that reaches here before the world's hook has
      // said it (another waiter of the same timeout) keeps the hook quiet.
      std::lock_guard<std::mutex> lock(g_timeout_mu);
      if (status.code() == Code::kDeadlineExceeded && g_timeout_said.empty()) g_timeout_said = status.message();
      std::fprintf(stderr, "towerflow train: rank %d of %d (step %lld): %s\n", world->rank(), world->size(),
                   static_cast<long long>(world->step()), status.ToString().c_str());
    }
    return finish(1);
  };

  std::string shared_gpu;
  if (world != nullptr) {
    if (Status s = ChooseCrossProcessDevice(*world, f.logical_gpus, &config, &shared_gpu); !s.ok()) return fail(s);
  }
  ArmCleanStop();
  if (chief) {
    std::printf("towerflow train: model %s, %zu tower(s) on %s, batch %lld per tower, %lld steps%s\n",
                config.model.name.c_str(), config.devices.size(), f.devices.c_str(),
                static_cast<long long>(config.batch_size), static_cast<long long>(config.total_steps),
                config.epochs > 0 ? (" (" + std::to_string(config.epochs) + " epochs of " +
                                     std::to_string(config.records) + " records)").c_str()
                                  : "");
    if (world != nullptr) std::printf("%s\n", DescribeWorld(*world, config, binding).c_str());
    if (!shared_gpu.empty()) std::printf("note: %s\n", shared_gpu.c_str());
    std::fflush(stdout);
  }
  auto result = Train(config);
  if (!result.ok()) return fail(result.status());
  // Every rank leaves the job together here: what rank 0 does next (the
  // evaluation, its output) needs no other rank, and a rank left waiting for
  // an evaluation would wait untimed. A failure after this is rank 0's alone.
  // Not after Ctrl-C (the ranks agreed on it): mpirun ends a job it was asked
  // to stop once a rank exits, so the others wait in Finalize until rank 0
  // has written its lines (no evaluation follows a stop).
  const bool multi_process = world != nullptr;
  if (world != nullptr && !result->interrupted) {
    world->Finalize();
    world = nullptr;
  }
  if (!chief) return finish(0);
  if (result->interrupted) std::printf("interrupted at step %lld\n", static_cast<long long>(result->global_step));
  std::printf("checkpoint: %s\nTensorBoard: tensorboard --logdir %s\n", result->checkpoint.c_str(),
              config.logdir.c_str());
  if (!config.trace_file.empty()) {
    std::printf("trace: %s%s (open in https://ui.perfetto.dev)\n", config.trace_file.c_str(),
                multi_process ? " (every rank's, as processes \"rank r: <device>\")" : "");
  }
  std::optional<EvalResult> eval;
  if (!eval_files.empty() && !result->interrupted) {
    auto evaluated = Evaluate(eval_files, config.model, result->checkpoint,
                              {.skip_corrupt = config.skip_corrupt,
                               .intra_op_threads = config.intra_op_threads,
                               .variable_scope = CheckpointVariableScope(config),
                               .max_gpus = config.max_gpus,
                               .visible_gpus = config.visible_gpus,
                               .gpu_memory_limit_mb = config.gpu_memory_limit_mb,
                               .allow_tf32 = config.allow_tf32});
    if (!evaluated.ok()) return fail(evaluated.status());
    eval = *evaluated;
    std::printf("test: %lld examples, loss %.4f, accuracy %.4f\n", static_cast<long long>(eval->examples),
                eval->loss, eval->accuracy);
  }
  std::printf("%s\n", TrainJsonLine(*result, config, eval ? &*eval : nullptr).c_str());
  std::fflush(stdout);
  return finish(0);
}

}  // namespace tw::cli
