// Data-parallel towers on virtual CPU devices: one training step of the MLP
// 784-256-256-10 at batch 100 per tower with momentum SGD, for 1, 2 and 4
// towers on /device:CPU:0..N-1, variables pinned to CPU:0 or mirrored per tower.
// Each tower is fed its own placeholders (fixed data), so input cost does not
// count. The session gets N inter-op threads; one tower gets one intra-op
// thread (one core), N towers the session's default intra-op setting (0: the
// cores shared among the virtual devices, and a kernel whose device is left
// with one thread also splits over inter-op threads that are idle): on an
// N-core machine N towers should come close to N times the examples/s of one
// tower on one core. Reports steps/s and examples/s, and,
// because a shared machine may not give the benchmark all its cores, the
// process CPU time per example (what towers cost, whatever the contention) and
// the cores it kept busy on average (CPU time / wall time).
//
// TOWERFLOW_BENCH_AB (see RunAb) compares two settings in one process, steps
// of each side alternating, as the only comparison this shared VM resolves
// to a few percent.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/towerflow.h"

namespace {

constexpr int kBatch = 100;

// User + system CPU time of the whole process, in seconds.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

template <typename O>
void SetCpuDevices(O& options, int cpus) {
  if constexpr (requires { options.num_cpu_devices; }) options.num_cpu_devices = cpus;
}

// The TF tutorial's CNN (conv 5x5x32, pool, conv 5x5x64, pool, dense 1024,
// dense 10) on the same 784-pixel batches.
tw::Output Cnn(const tw::Scope& tower, const tw::Batch& b) {
  auto conv = [&](const std::string& name, const tw::Output& in, int64_t c, int64_t o) {
    tw::Scope s = tower.WithVariableScope(name);
    auto w = tw::GetVariable(s, "kernel", {5, 5, c, o});
    auto bias = tw::GetVariable(s, "bias", {o}, {.initializer = tw::ZerosInitializer()});
    return tw::MaxPool(s, tw::BiasAddRelu(s, tw::Conv2D(s, in, w.value, {.padding = "SAME"}), bias.value));
  };
  auto dense = [&](const std::string& name, const tw::Output& in, int64_t n, int64_t m, bool relu) {
    tw::Scope s = tower.WithVariableScope(name);
    auto w = tw::GetVariable(s, "kernel", {n, m});
    auto bias = tw::GetVariable(s, "bias", {m}, {.initializer = tw::ZerosInitializer()});
    tw::Output z = tw::MatMul(s, in, w.value);
    return relu ? tw::BiasAddRelu(s, z, bias.value) : tw::BiasAdd(s, z, bias.value);
  };
  tw::Output pooled = conv("conv2", conv("conv1", tw::Reshape(tower, b[0], {-1, 28, 28, 1}), 1, 32), 32, 64);
  tw::Output h = dense("dense", tw::Reshape(tower, pooled, {-1, 7 * 7 * 64}), 7 * 7 * 64, 1024, true);
  return tw::Mean(tower, tw::SparseSoftmaxCrossEntropyWithLogits(tower, dense("logits", h, 1024, 10, false), b[1]).loss,
                  {0});
}

tw::Output Mlp(const tw::Scope& tower, const tw::Batch& b) {
  tw::Output h = b[0];
  int64_t fan_in = 784;
  const int64_t widths[] = {256, 256, 10};
  for (int i = 0; i < 3; ++i) {
    tw::Scope s = tower.WithVariableScope("dense" + std::to_string(i));
    auto w = tw::GetVariable(s, "kernel", {fan_in, widths[i]});
    auto bias = tw::GetVariable(s, "bias", {widths[i]}, {.initializer = tw::ZerosInitializer()});
    h = tw::BiasAdd(s, tw::MatMul(s, h, w.value), bias.value);
    if (i < 2) h = tw::Relu(s, h);
    fan_in = widths[i];
  }
  return tw::Mean(tower, tw::SparseSoftmaxCrossEntropyWithLogits(tower, h, b[1]).loss, {0});
}

struct Towers {
  tw::Graph graph;
  tw::train::Momentum optimizer{{.learning_rate = 0.01, .momentum = 0.9}};
  tw::train::ReplicaStep step;
  std::unique_ptr<tw::Session> session;
  tw::FeedList feeds;

  Towers(int towers, tw::train::VariablePlacement placement,
         tw::train::AllReduceAlgorithm all_reduce = tw::train::AllReduceAlgorithm::kAuto, bool cnn = false,
         bool fuse = true) {
    graph.set_seed(1);
    tw::Scope root(graph);
    std::string devices;
    for (int i = 0; i < towers; ++i) devices += (i ? ",cpu:" : "cpu:") + std::to_string(i);
    auto placeholders = [](const tw::Scope& s) -> tw::Batch {
      return {tw::Placeholder(s.WithOpName("x"), tw::kFloat32, tw::PartialShape({kBatch, 784})),
              tw::Placeholder(s.WithOpName("labels"), tw::kInt32, tw::PartialShape({kBatch}))};
    };
    step = tw::train::Replicate(root, tw::Devices(devices), placeholders, optimizer, cnn ? Cnn : Mlp,
                                {.variable_placement = placement, .all_reduce = all_reduce});
    root.status().Check();
    tw::SessionOptions options{.inter_op_threads = towers, .intra_op_threads = towers == 1 ? 1 : 0};
    options.fuse_kernels = fuse;
    SetCpuDevices(options, towers);
    session = std::make_unique<tw::Session>(graph, options);
    session->Run(tw::GlobalVariablesInitializer(graph)).Check();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (const tw::Batch& b : step.tower_batches) {
      tw::Tensor x(tw::kFloat32, tw::TensorShape{kBatch, 784}), y(tw::kInt32, tw::TensorShape{kBatch});
      for (auto& v : x.flat<float>()) v = pixel(rng);
      for (auto& v : y.flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
      feeds.emplace_back(b[0], x);
      feeds.emplace_back(b[1], y);
    }
  }
};

void BM_TowersTrainStep(benchmark::State& state) {
  const int towers = static_cast<int>(state.range(0));
  // variables: 0 pinned to CPU:0, 1 mirrored with reduce-broadcast, 2 mirrored with the collective.
  const auto placement =
      state.range(1) ? tw::train::VariablePlacement::kMirrored : tw::train::VariablePlacement::kSingleDevice;
  Towers t(towers, placement,
           state.range(1) == 2 ? tw::train::AllReduceAlgorithm::kCollective : tw::train::AllReduceAlgorithm::kAuto);
  const double cpu_start = ProcessCpuSeconds();
  const auto wall_start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto out = t.session->Run(t.feeds, {}, {t.step.train_op});
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      return;
    }
  }
  const double cpu = ProcessCpuSeconds() - cpu_start;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  state.SetLabel(state.range(1) == 0 ? "cpu-pinned" : state.range(1) == 1 ? "mirrored" : "mirrored-collective");
  const double steps = static_cast<double>(state.iterations());
  state.counters["cpu_us_per_example"] = cpu * 1e6 / (steps * kBatch * towers);
  state.counters["cores_busy"] = cpu / wall;
  state.counters["steps_per_sec"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  state.counters["examples_per_sec"] =
      benchmark::Counter(steps * kBatch * towers, benchmark::Counter::kIsRate);
}

// TOWERFLOW_BENCH_TIMELINE=N: instead of benchmarking, runs N towers (pinned
// variables; mirrored with TOWERFLOW_BENCH_TIMELINE_MIRRORED, =collective for that
// all-reduce) for 300 warm-up steps (TOWERFLOW_BENCH_TIMELINE_AVERAGE=K: first
// the mean time of each node over K steps), then prints one step's node timeline per
// thread: when each thread was busy, and on what, to find serialization. Nodes
// under 5 us are left out unless TOWERFLOW_BENCH_TIMELINE_ALL is set.
int PrintTimeline(int towers) {
  const char* mirrored = std::getenv("TOWERFLOW_BENCH_TIMELINE_MIRRORED");  // "collective": that all-reduce
  Towers t(towers, mirrored ? tw::train::VariablePlacement::kMirrored : tw::train::VariablePlacement::kSingleDevice,
           mirrored && std::string(mirrored) == "collective" ? tw::train::AllReduceAlgorithm::kCollective
                                                             : tw::train::AllReduceAlgorithm::kAuto);
  for (int i = 0; i < 300; ++i) t.session->Run(t.feeds, {}, {t.step.train_op}).status().Check();
  tw::StepStats stats;
  const auto t0 = std::chrono::steady_clock::now().time_since_epoch().count();
  t.session->Run(t.feeds, {}, {t.step.train_op}, &stats).status().Check();
  const auto t1 = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char* k = std::getenv("TOWERFLOW_BENCH_TIMELINE_AVERAGE")) {
    // Mean time per node over K more steps, the nodes above 20 us.
    const int steps = std::max(1, std::atoi(k));
    std::map<std::string, double> total_us;
    double wall_us = 0;
    for (int i = 0; i < steps; ++i) {
      tw::StepStats s;
      const auto a = std::chrono::steady_clock::now();
      t.session->Run(t.feeds, {}, {t.step.train_op}, &s).status().Check();
      wall_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
      for (const auto& n : s.nodes) total_us[(n.transfer ? "transfer " : "") + n.node->name()] += (n.end_ns - n.start_ns) / 1e3;
    }
    std::printf("mean step wall %.1f us over %d steps\n", wall_us / steps, steps);
    for (const auto& [name, us] : total_us) {
      if (us / steps >= 20) std::printf("  %8.1f us %s\n", us / steps, name.c_str());
    }
  }
  std::map<int, std::vector<tw::StepStats::NodeTiming>> by_thread;
  for (const auto& n : stats.nodes) by_thread[n.thread].push_back(n);
  std::printf("step wall %.1f us, kernel time %.1f us, %zu timings\n", (t1 - t0) / 1e3, stats.kernel_ns / 1e3,
              stats.nodes.size());
  for (auto& [thread, nodes] : by_thread) {
    std::sort(nodes.begin(), nodes.end(), [](auto& a, auto& b) { return a.start_ns < b.start_ns; });
    int64_t busy = 0;
    for (const auto& n : nodes) busy += n.end_ns - n.start_ns;
    std::printf("thread %d: %zu nodes, busy %.1f us\n", thread, nodes.size(), busy / 1e3);
    for (const auto& n : nodes) {
      if (n.end_ns - n.start_ns < (std::getenv("TOWERFLOW_BENCH_TIMELINE_ALL") ? 0 : 5000)) continue;
      std::printf("  %8.1f +%7.1f us %s%s (%s) on %s\n", (n.start_ns - t0) / 1e3, (n.end_ns - n.start_ns) / 1e3,
                  n.transfer ? "transfer " : "", n.node->name().c_str(), n.node->op().c_str(),
                  n.device ? tw::DeviceNameOf(n.device).c_str() : "?");
    }
  }
  return 0;
}

// The round trip of one cache line between this thread and a new one (a
// counter handed back and forth), in ns. On a virtual machine whose vCPUs the
// host moves between core complexes it switches between about 90 ns (the
// cores share an L3) and about 330 ns (they do not), and every cache line a
// tower reads from the other core (shared weights, the other tower's
// activations in the fused update) costs accordingly: the A/B reports its
// chunks by the distance measured before them.
constexpr double kFarRoundTripNs = 200;
double CacheLineRoundTripNs() {
  constexpr int kTrips = 2000;
  alignas(64) std::atomic<int> flag{0};
  std::thread peer([&] {
    for (int i = 0; i < kTrips; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kTrips; ++i) {
    flag.store(2 * i + 1, std::memory_order_release);
    while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / kTrips;
  peer.join();
  return ns;
}

// One side of an A/B: its sessions, the first run on the calling thread and
// each other one on a thread of its own that lives as long as the side (so
// that per-thread state, such as oneDNN's primitive cache, stays warm).
class AbSide {
 public:
  explicit AbSide(std::vector<std::unique_ptr<Towers>> sessions) : sessions_(std::move(sessions)) {
    for (size_t k = 1; k < sessions_.size(); ++k) threads_.emplace_back([this, k] { Work(*sessions_[k]); });
  }
  ~AbSide() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& th : threads_) th.join();
  }

  // `steps` steps of every session, the sessions side by side.
  void Run(int steps) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      steps_ = steps;
      pending_ = static_cast<int>(threads_.size());
      ++generation_;
    }
    cv_.notify_all();
    Steps(*sessions_[0], steps);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  static void Steps(Towers& t, int steps) {
    for (int k = 0; k < steps; ++k) t.session->Run(t.feeds, {}, {t.step.train_op}).status().Check();
  }
  void Work(Towers& t) {
    int64_t seen = 0;
    for (;;) {
      int steps = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        steps = steps_;
      }
      Steps(t, steps);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) cv_.notify_all();
    }
  }

  std::vector<std::unique_ptr<Towers>> sessions_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t generation_ = 0;  // one more per Run
  int steps_ = 0;
  int pending_ = 0;  // threads still running this generation
  bool stop_ = false;
};

// TOWERFLOW_BENCH_AB=<a>:<b> (TOWERFLOW_BENCH_AB_TOWERS, default 2;
// TOWERFLOW_BENCH_AB_MODEL=cnn for the CNN): instead of benchmarking, two
// sessions that differ in one setting, each side one of pinned (variables on
// CPU:0), mirrored, nofuse (pinned, SessionOptions::fuse_kernels off),
// independent (N one-tower sessions run side by side on N threads, sharing
// nothing: what the cores allow), with "/<towers>" for a tower count of its
// own (pinned/1:pinned/2: one tower on one core against two towers, the
// scaling; pinned/1:independent/2 its ceiling), run in chunks of steps A, B, A,
// B, ... so that the machine's drift hits both alike. Prints each side's
// median step and the median ratio b/a of the pairs of chunks with its
// quartiles, each side's deciles of its chunks' mean step (a machine that
// switches between fast and slow phases shows as two clusters); for different
// tower counts also the median ratio of their examples/s; and all of it again
// for the pairs of chunks run while the two cores were near and far
// (CacheLineRoundTripNs).
int RunAb(const std::string& spec) {
  const size_t colon = spec.find(':');
  std::string sides[2] = {spec.substr(0, colon), colon == std::string::npos ? "" : spec.substr(colon + 1)};
  const char* towers_env = std::getenv("TOWERFLOW_BENCH_AB_TOWERS");
  const int default_towers = towers_env ? std::max(1, std::atoi(towers_env)) : 2;
  const char* model = std::getenv("TOWERFLOW_BENCH_AB_MODEL");
  const bool cnn = model != nullptr && std::string(model) == "cnn";
  // Per side, its sessions: one, or one one-tower session per core for "independent".
  std::unique_ptr<AbSide> t[2];
  int towers[2];
  for (int i = 0; i < 2; ++i) {
    towers[i] = default_towers;
    if (const size_t slash = sides[i].find('/'); slash != std::string::npos) {
      const std::string count = sides[i].substr(slash + 1);
      towers[i] = std::atoi(count.c_str());
      if (towers[i] < 1 || count.find_first_not_of("0123456789") != std::string::npos) {
        std::fprintf(stderr, "TOWERFLOW_BENCH_AB: side '%s' has no tower count of 1 or more after '/'\n",
                     sides[i].c_str());
        return 2;
      }
      sides[i].resize(slash);
    }
    if (sides[i] != "pinned" && sides[i] != "mirrored" && sides[i] != "nofuse" && sides[i] != "independent") {
      std::fprintf(stderr, "TOWERFLOW_BENCH_AB: side '%s' is not pinned, mirrored, nofuse or independent\n",
                   sides[i].c_str());
      return 2;
    }
    const bool independent = sides[i] == "independent";
    std::vector<std::unique_ptr<Towers>> sessions;
    for (int k = 0; k < (independent ? towers[i] : 1); ++k) {
      sessions.push_back(std::make_unique<Towers>(independent ? 1 : towers[i],
                                                  sides[i] == "mirrored" ? tw::train::VariablePlacement::kMirrored
                                                                         : tw::train::VariablePlacement::kSingleDevice,
                                                  tw::train::AllReduceAlgorithm::kAuto, cnn, sides[i] != "nofuse"));
    }
    t[i] = std::make_unique<AbSide>(std::move(sessions));
  }
  const int chunks = cnn ? 60 : 200, per_chunk = cnn ? 4 : 20;
  std::vector<double> us[2], ratio, examples_ratio, round_trip;
  for (int c = -1; c < chunks; ++c) {  // chunk -1 warms both up
    if (c >= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the pools' threads stop spinning
      CacheLineRoundTripNs();  // the helper thread's first run places it
      round_trip.push_back(CacheLineRoundTripNs());
    }
    for (int i = 0; i < 2; ++i) {
      const auto start = std::chrono::steady_clock::now();
      t[i]->Run(per_chunk);
      if (c >= 0) {
        us[i].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                        per_chunk);
      }
    }
    if (c >= 0) {
      ratio.push_back(us[1].back() / us[0].back());
      examples_ratio.push_back(towers[1] * us[0].back() / (towers[0] * us[1].back()));
    }
  }
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  };
  std::printf("%s: %s/%d median step %.1f us, %s/%d %.1f us; step b/a median ratio %.3f (quartiles %.3f, %.3f) over "
              "%d pairs of %d steps\n",
              cnn ? "CNN" : "MLP", sides[0].c_str(), towers[0], quantile(us[0], 0.5), sides[1].c_str(), towers[1],
              quantile(us[1], 0.5), quantile(ratio, 0.5), quantile(ratio, 0.25), quantile(ratio, 0.75), chunks,
              per_chunk);
  auto print_deciles = [&quantile](const std::vector<double>& v) {
    for (int d = 0; d <= 10; ++d) std::printf(" %.0f", quantile(v, d / 10.0));
    std::printf("\n");
  };
  // The chunks by the cores' distance measured before them.
  std::printf("cache-line round trip before each pair, deciles (ns):");
  print_deciles(round_trip);
  for (const bool far : {false, true}) {
    std::vector<double> side[2], examples;
    for (size_t c = 0; c < round_trip.size(); ++c) {
      if ((round_trip[c] >= kFarRoundTripNs) != far) continue;
      for (int i = 0; i < 2; ++i) side[i].push_back(us[i][c]);
      examples.push_back(examples_ratio[c]);
    }
    if (examples.empty()) continue;
    std::printf("%s (round trip %s %.0f ns): %zu pairs, median step %s/%d %.0f us, %s/%d %.0f us", far ? "far" : "near",
                far ? ">=" : "<", kFarRoundTripNs, examples.size(), sides[0].c_str(), towers[0], quantile(side[0], 0.5),
                sides[1].c_str(), towers[1], quantile(side[1], 0.5));
    if (towers[0] != towers[1]) std::printf(", examples/s b/a median ratio %.3f", quantile(examples, 0.5));
    std::printf("\n");
  }
  for (int i = 0; i < 2; ++i) {
    std::printf("%s/%d chunk's mean step, deciles (us):", sides[i].c_str(), towers[i]);
    print_deciles(us[i]);
  }
  if (towers[0] != towers[1]) {
    std::printf("examples/s b/a median ratio %.3f (quartiles %.3f, %.3f)\n", quantile(examples_ratio, 0.5),
                quantile(examples_ratio, 0.25), quantile(examples_ratio, 0.75));
  }
  return 0;
}

BENCHMARK(BM_TowersTrainStep)
    ->ArgNames({"towers", "variables"})
    ->ArgsProduct({{1, 2, 4}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  if (const char* n = std::getenv("TOWERFLOW_BENCH_TIMELINE")) return PrintTimeline(std::atoi(n));
  if (const char* ab = std::getenv("TOWERFLOW_BENCH_AB")) return RunAb(ab);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
