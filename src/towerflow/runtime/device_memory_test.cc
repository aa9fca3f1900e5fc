// Fake GPUs with memory of their own (SessionOptions::fake_gpu_device_memory):
// the paths a CUDA GPU takes, on CPU-only CI. A training step on such a GPU
// gives the values of one on a host-memory fake GPU, bit for bit; its feeds
// cross to the GPU and its fetches come back in one transfer that waits for
// the GPU once per step; the step arena serves it by default (kAuto); towers
// on two such GPUs copy between them directly.
#include <gtest/gtest.h>

#include "towerflow/device/fake/fake_gpu.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/runtime/step_arena.h"
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
  ArenaStats arena;
  bool has_arena = false;
};

Result Train(bool device_memory, bool two_gpus) {
  Model m(two_gpus);
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = two_gpus ? 2 : 1};
  options.fake_gpu_device_memory = device_memory;
  options.allow_soft_placement = true;  // Placeholders have no GPU kernel
  Session session(m.graph, options);
  EXPECT_TRUE(session.Run(m.init).ok());
  Result out;
  const int64_t waits_before = FakeGpuHostWaits(0);
  for (int step = 0; step < 6; ++step) {
    auto r = session.Run(m.Batch(static_cast<uint64_t>(step)), m.Fetches(), {m.train});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    out.fetched.push_back({(*r)[0].scalar<float>(), (*r)[1].scalar<float>(), (*r)[2].scalar<float>()});
  }
  out.host_waits = FakeGpuHostWaits(0) - waits_before;
  auto plan = session.impl().GetPlan(m.Batch(0), m.Fetches(), {m.train});
  EXPECT_TRUE(plan.ok());
  if (plan.ok()) {
    out.counts = CountItems(**plan);
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
