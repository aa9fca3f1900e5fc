// Fake GPUs with memory of their own (SessionOptions::fake_gpu_device_memory):
// the paths a CUDA GPU takes, on CPU-only CI. A training step on such a GPU
// gives the values of one on a host-memory fake GPU, bit for bit; its feeds
// cross to the GPU and its fetches come back in one transfer that waits for
// the GPU once per step; the step arena serves it by default (kAuto); towers
// on two such GPUs copy between them directly. Steps run with RunAsync, each
// launched before the previous one's fetches are read, take the same values
// and wait for the GPU only in PendingFetches::Wait.
#include <gtest/gtest.h>

#include <optional>

#include "towerflow/device/fake/fake_gpu.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/runtime/step_arena.h"
#include "towerflow/runtime/step_graph.h"
#include "towerflow/runtime/training_test_util.h"

namespace tw {
namespace {

using fusion_test::Random;

// A 30-16-4 MLP on GPU:0 (a second head on GPU:1 with `two_gpus`), with
// momentum; fetches: the loss, the logits' sum and the first weight's sum.
struct Model {
  Graph graph;
  Output x, labels, loss, logit_sum, w_sum;
  Node* train = nullptr;
  Node* init = nullptr;
  explicit Model(bool two_gpus) {
    Scope root(graph);
    Scope s = root.WithDevice("/device:GPU:0");
    x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({8, 30}));
    labels = Placeholder(root.WithOpName("labels"), kFloat32, PartialShape({8, 4}));
    const Initializer fixed = training_test::FixedValues();
    Variable w1 = GetVariable(s, "w1", {30, 16}, {.initializer = fixed});
    Variable w2 = GetVariable(s, "w2", {16, 4}, {.initializer = fixed});
    Variable b2 = GetVariable(s, "b2", {4}, {.initializer = fixed});
    Output h = Relu(s, MatMul(s, x, w1.value));
    if (two_gpus) {
      // h goes to GPU:1 and back: GPU-to-GPU copies.
      Scope g1 = root.WithDevice("/device:GPU:1");
      h = Relu(g1, Add(g1, h, Const(g1, 0.25f)));
    }
    Output logits = BiasAdd(s, MatMul(s, h, w2.value), b2.value);
    loss = Mean(s.WithOpName("loss"), SoftmaxCrossEntropyWithLogits(s, logits, labels).loss, {0});
    logit_sum = Sum(s, logits, {0, 1});
    w_sum = Sum(s, w1.value, {0, 1});
    train = train::Momentum({.learning_rate = 0.1, .momentum = 0.9}).Minimize(s, loss);
    init = GlobalVariablesInitializer(graph);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
  }
  FeedList Batch(uint64_t step) const {
    return {{x, Random<float>({8, 30}, 70 + step)}, {labels, training_test::OneHotLabels(8, 4, step)}};
  }
  std::vector<Output> Fetches() const { return {loss, logit_sum, w_sum}; }
};

struct Result {
  std::vector<std::vector<float>> fetched;  // per step: loss, logit sum, weight sum
  PlanCounts counts;
  int64_t host_waits = 0;
  int64_t waits_in_runs = 0;  // inside Run or RunAsync (not in Wait)
  StepGraphStats graph;       // the plan's first step graph, if any
  ArenaStats arena;
  bool has_arena = false;
};

Result Train(bool device_memory, bool two_gpus, bool pipelined = false, bool step_graphs = false) {
  Model m(two_gpus);
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = two_gpus ? 2 : 1};
  options.fake_gpu_device_memory = device_memory;
  if (step_graphs) options.cuda_graphs = SessionOptions::StepGraphMode::kOn;
  options.allow_soft_placement = true;  // Placeholders have no GPU kernel
  Session session(m.graph, options);
  EXPECT_TRUE(session.Run(m.init).ok());
  Result out;
  const int64_t waits_before = FakeGpuHostWaits(0);
  auto take = [&](const StatusOr<std::vector<Tensor>>& r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.fetched.push_back({(*r)[0].scalar<float>(), (*r)[1].scalar<float>(), (*r)[2].scalar<float>()});
  };
  // Pipelined: step k + 1 is run before step k's fetches are waited for.
  std::optional<PendingFetches> previous;
  for (int step = 0; step < 6; ++step) {
    const int64_t waits = FakeGpuHostWaits(0);
    if (!pipelined) {
      take(session.Run(m.Batch(static_cast<uint64_t>(step)), m.Fetches(), {m.train}));
      out.waits_in_runs += FakeGpuHostWaits(0) - waits;
      continue;
    }
    auto p = session.RunAsync(m.Batch(static_cast<uint64_t>(step)), m.Fetches(), {m.train});
    out.waits_in_runs += FakeGpuHostWaits(0) - waits;
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return out;
    if (previous) take(previous->Wait());
    previous = std::move(p).value();
  }
  if (previous) take(previous->Wait());
  out.host_waits = FakeGpuHostWaits(0) - waits_before;
  auto plan = session.impl().GetPlan(m.Batch(0), m.Fetches(), {m.train});
  EXPECT_TRUE(plan.ok());
  if (plan.ok()) {
    out.counts = CountItems(**plan);
    if (!(*plan)->step_graphs.empty()) out.graph = (*plan)->step_graphs[0]->stats();
    if ((*plan)->arena != nullptr) {
      out.has_arena = true;
      out.arena = (*plan)->arena->stats();
    }
  }
  return out;
}

TEST(DeviceMemoryTest, AStepOnAGpuWithItsOwnMemoryMatchesHostMemory) {
  const Result host = Train(false, false);
  const Result device = Train(true, false);
  EXPECT_EQ(host.fetched, device.fetched);
  EXPECT_LT(device.fetched.back()[0], device.fetched.front()[0]) << "the model learns";
  // Host memory: nothing to copy; device memory: the two feeds in, the three
  // fetches out in one transfer.
  EXPECT_EQ(host.counts.transfers, 0) << host.counts.ToString();
  EXPECT_EQ(device.counts.transfers, 3) << device.counts.ToString();
  EXPECT_EQ(device.counts.device_waits, 1) << device.counts.ToString();
  EXPECT_EQ(device.host_waits, 6) << "one wait for the GPU per step";
  EXPECT_EQ(host.host_waits, 0);
}

TEST(DeviceMemoryTest, PipelinedStepsWaitForTheGpuOnlyWhenTheirFetchesAreRead) {
  const Result waited = Train(true, false);
  const Result pipelined = Train(true, false, true);
  EXPECT_EQ(waited.fetched, pipelined.fetched);
  EXPECT_EQ(waited.waits_in_runs, 6);
  EXPECT_EQ(pipelined.waits_in_runs, 0) << "RunAsync never waits for the GPU";
  EXPECT_EQ(pipelined.host_waits, 6) << "each step's fetches, once, in Wait";
  EXPECT_EQ(pipelined.counts.device_waits, 1) << pipelined.counts.ToString();
  // Host memory: nothing is copied, the values are ready at once.
  const Result host = Train(false, false, true);
  EXPECT_EQ(host.fetched, waited.fetched);
  EXPECT_EQ(host.host_waits, 0);
}

// With step graphs (replayed by re-running on fake GPUs), a step run before
// the previous one's fetches are read still replays: the fetched values are
// host copies, no graph output is held.
TEST(DeviceMemoryTest, PipelinedStepsReplayTheirStepGraph) {
  const Result waited = Train(true, false);
  const Result graphs = Train(true, false, true, true);
  EXPECT_EQ(graphs.fetched, waited.fetched);
  EXPECT_EQ(graphs.waits_in_runs, 0);
  EXPECT_GT(graphs.graph.members, 0);
  EXPECT_EQ(graphs.graph.captures, 1);
  EXPECT_EQ(graphs.graph.replays, 3) << "6 steps: 2 warm-up, the capture, 3 replays";
  EXPECT_EQ(graphs.graph.held_outputs, 0);
}

TEST(DeviceMemoryTest, PendingFetchesAreWaitedForOnce) {
  Graph graph;
  Scope root(graph);
  Variable v = GetVariable(root.WithDevice("/device:GPU:0"), "v", {2}, {.initializer = training_test::FixedValues()});
  Output doubled = Mul(root.WithDevice("/device:GPU:0"), v.value, Const(root, 2.0f));
  Node* bump = AssignAdd(root.WithDevice("/device:GPU:0"), v, Const(root, std::vector<float>{1, 1}, TensorShape{2})).node;
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  SessionOptions options{.num_fake_gpus = 1};
  options.fake_gpu_device_memory = true;
  Session session(graph, options);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  auto before = session.Run({v.value});
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  // A variable's value and a product, fetched; the next step changes the
  // variable before the first step's fetches are read.
  auto first = session.RunAsync({}, {v.value, doubled});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->pending());
  ASSERT_TRUE(session.Run(bump).ok());
  auto values = first->Wait();
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  EXPECT_FALSE(first->pending());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ((*values)[0].flat<float>()[i], (*before)[0].flat<float>()[i]);
    EXPECT_EQ((*values)[1].flat<float>()[i], 2 * (*before)[0].flat<float>()[i]);
  }
  EXPECT_EQ(first->Wait().status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(PendingFetches().Wait().status().code(), Code::kFailedPrecondition);
  // A CPU session: a fetched variable is the caller's copy, as Run's.
  Graph cpu_graph;
  Scope c(cpu_graph);
  Variable w = GetVariable(c, "w", {2}, {.initializer = training_test::FixedValues()});
  Node* inc = AssignAdd(c, w, Const(c, std::vector<float>{1, 1}, TensorShape{2})).node;
  Session cpu(cpu_graph);
  ASSERT_TRUE(cpu.Run(GlobalVariablesInitializer(cpu_graph)).ok());
  auto read = cpu.RunAsync({}, {w.value});
  ASSERT_TRUE(read.ok());
  auto now = cpu.Run({w.value});
  ASSERT_TRUE(now.ok());
  const std::vector<float> was((*now)[0].flat<float>().begin(), (*now)[0].flat<float>().end());
  ASSERT_TRUE(cpu.Run(inc).ok());
  auto kept = read->Wait();
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(std::vector<float>((*kept)[0].flat<float>().begin(), (*kept)[0].flat<float>().end()), was);
  // A step that fails on the host fails in RunAsync.
  Output fed = Placeholder(c.WithOpName("fed"), kFloat32);
  EXPECT_FALSE(cpu.RunAsync({}, {Add(c, fed, Const(c, 1.0f))}).ok());
}

TEST(DeviceMemoryTest, TheArenaServesGpusWithTheirOwnMemoryByDefault) {
  const Result host = Train(false, false);
  const Result device = Train(true, false);
  EXPECT_FALSE(host.has_arena);
  ASSERT_TRUE(device.has_arena);
  EXPECT_EQ(device.arena.recordings, 2);
  EXPECT_EQ(device.arena.served_steps, 4);
  EXPECT_EQ(device.arena.fallbacks, 0);
  EXPECT_GT(device.arena.arena_allocations, 0);
}

TEST(DeviceMemoryTest, TwoGpusCopyBetweenThemselves) {
  const Result host = Train(false, true);
  const Result device = Train(true, true);
  EXPECT_EQ(host.fetched, device.fetched);
  EXPECT_EQ(device.counts.device_waits, 1) << device.counts.ToString();
  // Feeds in (2), h to GPU:1 and back (2), its gradient there and back (2:
  // gradients run on their forward op's device), the fetches out (1).
  EXPECT_EQ(device.counts.transfers, 7) << device.counts.ToString();
}

}  // namespace
}  // namespace tw
