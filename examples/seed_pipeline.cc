// The seed's program (SEED.md) in towerflow: multi-tower training from
// seed-schema TFRecords (`towerflow convert seed-synthetic`).
//
//   get_input     string_input_producer -> TFRecordReader -> parse_single_example
//                 -> decode_raw(int32) -> reshape x [2, F], labels [1, 2]
//   towers        one per --devices entry; each dequeues its own shuffle_batch
//                 (min_after_dequeue 1000, capacity 1000 + 4 * batch, 3 threads)
//   interface     an MLP on the flattened x, cast to float
//   compute_loss  softmax cross-entropy against the one-hot labels (+ L2 reg)
//   train         gradients averaged over the towers, one momentum update,
//                 under a Coordinator with the queue runners started
//
// The reader's record key ("<file>:<index>") travels through the batch as a
// third component, so the first three steps can print which records each tower
// took. --share-batch builds the seed's mistake on purpose (one dequeue outside
// the towers, fed to every tower): the session warns, and the printed keys show
// every tower with the same records.
//
// Ends with one JSON line: {steps, examples, seconds, examples_per_sec,
// final_loss, towers, devices}. Exit status 0, 1 on an error (printed as
// "towerflow: <Code>: <message>"), 2 on bad usage.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "towerflow/towerflow.h"

namespace {

struct Flags {
  std::string data;
  std::string devices = "cpu:0";
  int num_virtual_cpus = 0;  // 0: enough for the CPUs --devices names
  int num_fake_gpus = 0;
  int64_t batch_size = 100;
  int steps = 1000;
  int n_features = 64;
  int hidden = 64;
  double learning_rate = 0.05;
  double reg = 0.0;
  int log_every = 100;
  int intra_op_threads = 0;
  bool log_device_placement = false;
  bool allow_soft_placement = false;
  bool share_batch = false;
  bool mirrored = false;
};

// Device options that arrived with virtual devices; set only where the
// session has them, so the example also builds against older sessions.
template <typename O>
void SetDeviceCounts(O& options, int cpus, int fake_gpus) {
  if constexpr (requires { options.num_cpu_devices; }) options.num_cpu_devices = cpus;
  if constexpr (requires { options.num_fake_gpus; }) options.num_fake_gpus = fake_gpus;
}

// The seed's os.listdir(dir) for a directory, else a glob pattern.
std::vector<std::string> ListInputs(const std::string& data) {
  std::error_code ec;
  if (!std::filesystem::is_directory(data, ec)) return tw::io::Glob(data);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(data, ec)) {
    if (entry.is_regular_file(ec)) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct Example {
  tw::Output key, x, labels;
};

// The seed's get_input(), on the CPU, plus the record key.
Example GetInput(const tw::Scope& root, const std::vector<std::string>& files, int n_features) {
  tw::Scope s = root.WithDevice("/cpu:0").WithVariableScope("tfrecords_input");
  tw::io::Queue filenames = tw::train::StringInputProducer(s, files);
  auto [key, serialized] = tw::io::TFRecordReader(s).Read(filenames);
  auto features = tw::io::ParseSingleExample(
      s, serialized,
      {{"x", tw::io::FixedLenFeature(tw::kString)}, {"labels", tw::io::FixedLenFeature(tw::kString)}});
  tw::Output x = tw::Reshape(s, tw::io::DecodeRaw(s, features["x"], tw::kInt32), {2, n_features});
  tw::Output labels = tw::Reshape(s, tw::io::DecodeRaw(s, features["labels"], tw::kInt32), {1, 2});
  return {key, x, labels};
}

tw::Output Dense(const tw::Scope& scope, const std::string& name, tw::Output in, int64_t fan_in,
                 int64_t units, bool relu, std::vector<tw::Variable>* kernels) {
  tw::Scope s = scope.WithVariableScope(name);
  tw::Variable w = tw::GetVariable(s, "kernel", {fan_in, units});
  tw::Variable b = tw::GetVariable(s, "bias", {units}, {.initializer = tw::ZerosInitializer()});
  kernels->push_back(w);
  tw::Output z = tw::BiasAdd(s, tw::MatMul(s, in, w.value), b.value);
  return relu ? tw::Relu(s, z) : z;
}

// The seed's interface(x): x is int32 [batch, 2, F] with entries 0..15.
tw::Output Interface(const tw::Scope& s, const tw::Output& x, const Flags& flags,
                     std::vector<tw::Variable>* kernels) {
  const int width = 2 * flags.n_features;
  tw::Output flat = tw::Reshape(s, tw::Cast(s, x, tw::kFloat32), {-1, width});
  tw::Output scaled = tw::Mul(s, flat, tw::Const(s, 1.0f / 15.0f));
  tw::Output h1 = Dense(s, "hidden1", scaled, width, flags.hidden, true, kernels);
  tw::Output h2 = Dense(s, "hidden2", h1, flags.hidden, flags.hidden, true, kernels);
  return Dense(s, "logits", h2, flags.hidden, 2, false, kernels);
}

// The seed's compute_loss(logits, y_, reg): labels are one-hot int32 [batch, 1, 2].
tw::Output ComputeLoss(const tw::Scope& s, const tw::Output& logits, const tw::Output& labels, double reg,
                       const std::vector<tw::Variable>& kernels) {
  tw::Output y = tw::Reshape(s, tw::Cast(s, labels, tw::kFloat32), {-1, 2});
  tw::Output xent = tw::Mean(s, tw::SoftmaxCrossEntropyWithLogits(s, logits, y).loss, {0});
  if (reg <= 0) return xent;
  return tw::Add(s.WithOpName("total_loss"), xent, tw::train::L2Regularization(s, kernels, reg));
}

// "train-00001-of-00004.tfrecord:17" -> "00001:17": short enough to print 8 a line.
std::string ShortKey(const std::string& key) {
  const std::string base = std::filesystem::path(key).filename().string();
  const size_t dash = base.find('-');
  const size_t dot = base.find(".tfrecord:");
  if (dash == std::string::npos || dot == std::string::npos || dot < dash) return base;
  return base.substr(dash + 1, 5) + base.substr(dot + 9);
}

void PrintKeys(int step, const tw::train::ReplicaStep& replica, const std::vector<tw::Tensor>& keys) {
  std::vector<std::set<std::string>> sets;
  for (const tw::Tensor& t : keys) {
    auto v = t.ToVector<std::string>();
    sets.emplace_back(v.begin(), v.end());
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto v = keys[i].ToVector<std::string>();
    size_t shared = 0;
    for (const std::string& k : sets[i]) {
      for (size_t j = 0; j < sets.size(); ++j) shared += j != i && sets[j].count(k) ? 1 : 0;
    }
    std::printf("step %d %s (%s) keys:", step, replica.tower_scopes[i].c_str(), replica.devices[i].c_str());
    for (size_t k = 0; k < std::min<size_t>(v.size(), 8); ++k) std::printf(" %s", ShortKey(v[k]).c_str());
    std::printf(" ... (%zu records, %zu also in other towers)\n", v.size(), shared);
  }
}

int Train(const Flags& flags) {
  auto devices = tw::ParseDevices(flags.devices);
  if (!devices.ok()) return tw::Fail(devices.status());
  const std::vector<std::string> files = ListInputs(flags.data);
  if (files.empty()) {
    return tw::Fail(
        tw::errors::NotFound("--data ", flags.data, ": no files (a directory of TFRecord files, or a glob)"));
  }
  int cpus = flags.num_virtual_cpus;
  if (cpus == 0) {
    cpus = 1;
    for (const std::string& d : *devices) {
      if (d.rfind("/device:CPU:", 0) == 0) cpus = std::max(cpus, std::stoi(d.substr(12)) + 1);
    }
  }

  tw::Graph graph;
  tw::Scope root(graph);
  Example input = GetInput(root, files, flags.n_features);
  // The queue is built once, outside the towers; each tower dequeues its own batch.
  const int64_t min_after_dequeue = 1000;
  tw::train::ShuffleBatchSource batches(root.WithDevice("/cpu:0"), {input.x, input.labels, input.key},
                                        {.batch_size = flags.batch_size,
                                         .capacity = min_after_dequeue + 4 * flags.batch_size,
                                         .min_after_dequeue = min_after_dequeue,
                                         .num_threads = 3});
  tw::train::BatchSourceFn source = batches;
  if (flags.share_batch) {
    // The seed's first version: one dequeue right after get_input, every tower
    // fed the same tensors.
    tw::Batch once = batches.Next(root.WithDevice("/cpu:0"));
    source = [once](const tw::Scope&) { return once; };
  }
  tw::train::Momentum optimizer({.learning_rate = flags.learning_rate, .momentum = 0.9});
  tw::train::ReplicaStep step = tw::train::Replicate(
      root, *devices, source, optimizer,
      [&flags](const tw::Scope& tower, const tw::Batch& b) {
        std::vector<tw::Variable> kernels;
        tw::Output logits = Interface(tower, b[0], flags, &kernels);
        return ComputeLoss(tower, logits, b[1], flags.reg, kernels);
      },
      {.variable_placement = flags.mirrored ? tw::train::VariablePlacement::kMirrored
                                            : tw::train::VariablePlacement::kSingleDevice,
       .global_step = true});
  if (!root.ok()) return tw::Fail(root.status());

  tw::SessionOptions options{.intra_op_threads = flags.intra_op_threads,
                             .allow_soft_placement = flags.allow_soft_placement,
                             .log_device_placement = flags.log_device_placement};
  SetDeviceCounts(options, cpus, flags.num_fake_gpus);
  tw::Session session(graph, options);
  if (int rc = tw::Fail(session.Run(tw::GlobalVariablesInitializer(graph)))) return rc;
  if (int rc = tw::Fail(session.Run(tw::LocalVariablesInitializer(graph)))) return rc;
  tw::train::Coordinator coord;
  std::vector<std::thread> runners = tw::train::StartQueueRunners(session, coord);

  std::vector<tw::Output> keys;
  for (const tw::Batch& b : step.tower_batches) keys.push_back(b[2]);
  const int towers = static_cast<int>(step.devices.size());
  // Shared: one batch a step, whatever the number of towers.
  const int64_t examples_per_step = flags.batch_size * (flags.share_batch ? 1 : towers);
  // The first steps wait for the shuffle queue to fill min_after_dequeue
  // records; timing starts after them.
  const int warmup = std::min(3, flags.steps - 1);
  auto timed_from = std::chrono::steady_clock::now();
  float loss = 0;
  int done = 0;
  tw::Status status;
  for (int i = 1; i <= flags.steps && !coord.ShouldStop(); ++i) {
    std::vector<tw::Output> fetch = {step.loss};
    if (i <= 3) fetch.insert(fetch.end(), keys.begin(), keys.end());
    auto out = session.Run(fetch, {step.train_op});
    if (!out.ok()) {
      status = out.status();
      break;
    }
    loss = (*out)[0].scalar<float>();
    done = i;
    if (i <= 3) PrintKeys(i, step, std::vector<tw::Tensor>(out->begin() + 1, out->end()));
    if (i == warmup) timed_from = std::chrono::steady_clock::now();
    if (i % flags.log_every == 0 || i == flags.steps) std::printf("step %d loss %.4f\n", i, loss);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - timed_from).count();
  coord.RequestStop(status);
  // The coordinator keeps the first error: when an input thread failed (a bad
  // record, a wrong --n-features), the step only saw its closed queue.
  tw::Status joined = coord.Join(runners);
  if (!joined.ok()) return tw::Fail(joined);
  if (!status.ok()) return tw::Fail(status);
  const int timed_steps = done - warmup;
  std::string device_list;
  for (const std::string& d : step.devices) device_list += (device_list.empty() ? "\"" : ", \"") + d + "\"";
  std::printf(
      "{\"steps\": %d, \"examples\": %lld, \"seconds\": %.3f, \"examples_per_sec\": %.1f, "
      "\"final_loss\": %.4f, \"towers\": %d, \"devices\": [%s]}\n",
      done, static_cast<long long>(examples_per_step * done), seconds,
      timed_steps > 0 && seconds > 0 ? static_cast<double>(examples_per_step * timed_steps) / seconds : 0.0,
      loss, towers, device_list.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The seed's multi-tower program on seed-schema TFRecords", "seed_pipeline"};
  Flags f;
  app.add_option("--data", f.data, "directory of TFRecord files, or a glob")->required();
  app.add_option("--devices", f.devices, "one tower per device: cpu:0,cpu:1 or gpu:0,gpu:1");
  app.add_option("--num-virtual-cpus", f.num_virtual_cpus,
                 "CPU devices to create (0: as many as --devices names)")
      ->check(CLI::Range(0, 256));
  app.add_option("--num-fake-gpus", f.num_fake_gpus, "test-only GPU devices backed by host memory")
      ->check(CLI::Range(0, 64));
  app.add_option("--batch-size", f.batch_size, "examples per tower per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--steps", f.steps, "training steps")->check(CLI::Range(1, 1 << 30));
  app.add_option("--n-features", f.n_features, "F: x is int32 [2, F], as written by convert seed-synthetic")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--hidden", f.hidden, "units of the two hidden layers")->check(CLI::Range(1, 1 << 16));
  app.add_option("--learning-rate", f.learning_rate, "momentum SGD step size")->check(CLI::PositiveNumber);
  app.add_option("--reg", f.reg, "L2 weight decay on the kernels (0: none)")->check(CLI::NonNegativeNumber);
  app.add_option("--log-every", f.log_every, "print the loss every N steps")->check(CLI::Range(1, 1 << 30));
  app.add_option("--intra-op-threads", f.intra_op_threads,
                 "threads for MatMul, shared by the CPU devices (0: all)")
      ->check(CLI::Range(0, 1024));
  app.add_flag("--log-device-placement", f.log_device_placement, "print the device of every node");
  app.add_flag("--allow-soft-placement", f.allow_soft_placement, "move ops without a kernel on their device");
  app.add_flag("--share-batch", f.share_batch, "the seed's pitfall: one dequeue shared by all towers");
  app.add_flag("--mirrored", f.mirrored, "a variable copy per tower, kept equal by all-reduce");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return Train(f);
}
