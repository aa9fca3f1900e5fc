// One training step of the MLP 784-256-256-10 at batch 100 with momentum SGD on
// one core (one inter-op and one intra-op thread), the [engine] benchmark.
// Reports examples/s and the framework overhead: step wall time minus the time
// spent inside kernels. A second case gives the device two threads.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "towerflow/towerflow.h"

namespace {

struct MlpStep {
  tw::Graph graph;
  std::unique_ptr<tw::Session> session;
  tw::Output x, labels, loss;
  tw::Node* train_op = nullptr;
  tw::Tensor x_data, y_data;

  explicit MlpStep(int threads, int batch = 100) {
    graph.set_seed(1);
    tw::Scope root(graph);
    x = tw::Placeholder(root.WithOpName("x"), tw::kFloat32, tw::PartialShape({-1, 784}));
    labels = tw::Placeholder(root.WithOpName("labels"), tw::kInt32, tw::PartialShape({-1}));
    tw::Output h = x;
    int64_t fan_in = 784;
    const int64_t widths[] = {256, 256, 10};
    for (int i = 0; i < 3; ++i) {
      tw::Scope s = root.WithVariableScope("dense" + std::to_string(i));
      auto w = tw::GetVariable(s, "kernel", {fan_in, widths[i]}, {.initializer = tw::GlorotUniformInitializer()});
      auto b = tw::GetVariable(s, "bias", {widths[i]}, {.initializer = tw::ZerosInitializer()});
      auto z = tw::MatMul(s, h, w.value);
      h = i < 2 ? tw::BiasAddRelu(s, z, b.value) : tw::BiasAdd(s, z, b.value);
      fan_in = widths[i];
    }
    loss = tw::Mean(root, tw::SparseSoftmaxCrossEntropyWithLogits(root, h, labels).loss, {0});
    tw::train::Momentum optimizer({.learning_rate = 0.01, .momentum = 0.9});
    train_op = optimizer.Minimize(root, loss);
    root.status().Check();
    tw::SessionOptions options{.inter_op_threads = 1, .intra_op_threads = threads, .collect_step_stats = true};
    // TOWERFLOW_BENCH_ARENA=on: intermediate tensors from the step arena
    // (runtime/step_arena.h), to compare with the allocator (the CPU default).
    if (const char* arena = std::getenv("TOWERFLOW_BENCH_ARENA"); arena != nullptr && std::string(arena) == "on") {
      options.step_arena = tw::SessionOptions::ArenaMode::kOn;
    }
    session = std::make_unique<tw::Session>(graph, options);
    session->Run(tw::GlobalVariablesInitializer(graph)).Check();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    x_data = tw::Tensor(tw::kFloat32, tw::TensorShape{batch, 784});
    y_data = tw::Tensor(tw::kInt32, tw::TensorShape{batch});
    for (auto& v : x_data.flat<float>()) v = pixel(rng);
    for (int i = 0; i < batch; ++i) y_data.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  }
};

void BM_MlpTrainStep(benchmark::State& state) {
  MlpStep mlp(static_cast<int>(state.range(0)));
  const tw::FeedList feeds = {{mlp.x, mlp.x_data}, {mlp.labels, mlp.y_data}};
  int64_t kernel_ns = 0;
  std::map<std::string, int64_t> per_op;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    tw::StepStats stats;
    auto out = mlp.session->Run(feeds, {}, {mlp.train_op}, &stats);
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      return;
    }
    kernel_ns += stats.kernel_ns;
    for (const auto& t : stats.nodes) per_op[t.node->op()] += t.end_ns - t.start_ns;
  }
  if (std::getenv("TOWERFLOW_BENCH_PROFILE")) {
    for (const auto& [op, ns] : per_op) {
      std::fprintf(stderr, "  %-36s %8.1f us/step\n", op.c_str(), static_cast<double>(ns) / static_cast<double>(state.iterations()) / 1000.0);
    }
  }
  const double wall_ns = static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  const double steps = static_cast<double>(state.iterations());
  state.counters["overhead_us_per_step"] = (wall_ns - static_cast<double>(kernel_ns)) / steps / 1000.0;
  state.counters["examples_per_sec"] = benchmark::Counter(steps * 100, benchmark::Counter::kIsRate);
  state.counters["kernel_us_per_step"] = static_cast<double>(kernel_ns) / steps / 1000.0;
}
BENCHMARK(BM_MlpTrainStep)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
