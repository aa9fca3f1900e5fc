// The GPU's fusions in GPU plans, on fake GPUs (which borrow the CPU twins of
// the CUDA backend's fused kernels: FusionDef::gpu_twin): a small CNN whose
// input is bytes scaled by 1/255, a convolution with its bias and ReLU and two
// dense layers, trained with momentum. Its GPU plan holds the four fused
// pairs (Cast+Mul, Conv2D+BiasAddRelu, MatMul+BiasAddRelu, MatMul+BiasAdd),
// all four inside the step graph; training with the step graph is bit for
// bit training without, and training unfused agrees to rounding (the CPU's
// fused convolution adds its bias in the convolution's own loop).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/runtime/step_graph.h"
#include "towerflow/runtime/training_test_util.h"

namespace tw {
namespace {

using Mode = SessionOptions::StepGraphMode;
constexpr int64_t kBatch = 8, kClasses = 4;

struct Trained {
  std::vector<std::vector<float>> fetched;  // per step the loss, then each variable
  std::map<std::string, int> fused;         // "Conv2D+BiasAddRelu" -> items
  int fused_in_graph = 0;                   // of those, run by the step graph
};

Trained Train(bool fuse, Mode graphs, int steps) {
  Graph graph;
  Scope root(graph);
  Scope s = root.WithDevice("/device:GPU:0");
  Output pixels = Placeholder(root.WithOpName("pixels"), kUInt8, PartialShape({kBatch, 64}));
  Output labels = Placeholder(root.WithOpName("labels"), kFloat32, PartialShape({kBatch, kClasses}));
  const Initializer fixed = training_test::FixedValues();
  Variable k = GetVariable(s, "conv", {3, 3, 1, 4}, {.initializer = fixed});
  Variable kb = GetVariable(s, "conv_bias", {4}, {.initializer = fixed});
  Variable w1 = GetVariable(s, "w1", {256, 16}, {.initializer = fixed});
  Variable b1 = GetVariable(s, "b1", {16}, {.initializer = fixed});
  Variable w2 = GetVariable(s, "w2", {16, kClasses}, {.initializer = fixed});
  Variable b2 = GetVariable(s, "b2", {kClasses}, {.initializer = fixed});
  Output x = Mul(s, Cast(s, pixels, kFloat32), Const(s, 1.0f / 255.0f));
  Output conv = BiasAddRelu(s, Conv2D(s, Reshape(s, x, {kBatch, 8, 8, 1}), k.value), kb.value);
  Output hidden = BiasAddRelu(s, MatMul(s, Reshape(s, conv, {kBatch, 256}), w1.value), b1.value);
  Output logits = BiasAdd(s, MatMul(s, hidden, w2.value), b2.value);
  Output loss = Mean(s, SoftmaxCrossEntropyWithLogits(s, logits, labels).loss, {0});
  Node* train = train::Momentum({.learning_rate = 0.05, .momentum = 0.9}).Minimize(s, loss);
  Node* init = GlobalVariablesInitializer(graph);
  EXPECT_TRUE(root.ok()) << root.status().ToString();

  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = 1};
  options.fake_gpu_device_memory = true;
  options.allow_soft_placement = true;  // Placeholders have no GPU kernel
  options.fuse_kernels = fuse;
  options.cuda_graphs = graphs;
  Session session(graph, options);
  EXPECT_TRUE(session.Run(init).ok());
  auto batch = [&](int step) {
    Tensor bytes(kUInt8, TensorShape{kBatch, 64});
    for (int64_t i = 0; i < bytes.NumElements(); ++i) {
      bytes.flat<uint8_t>()[i] = static_cast<uint8_t>((i * 37 + step * 11) % 256);
    }
    return FeedList{{pixels, bytes}, {labels, training_test::OneHotLabels(kBatch, kClasses, static_cast<uint64_t>(step))}};
  };
  Trained out;
  for (int step = 0; step < steps; ++step) {
    auto r = session.Run(batch(step), {loss}, {train});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    out.fetched.push_back({(*r)[0].scalar<float>()});
  }
  for (const Variable& v : {k, kb, w1, b1, w2, b2}) {
    auto r = session.Run({v.value});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    auto f = (*r)[0].flat<float>();
    out.fetched.emplace_back(f.begin(), f.end());
  }
  auto plan = session.impl().GetPlan(batch(0), {loss}, {train});
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return out;
  for (const auto& item : (*plan)->items) {
    if (item.fused == nullptr || item.fused->group) continue;
    std::string name;
    for (const Node* n : item.fused->nodes) name += n->op() + "+";
    ++out.fused[name + item.node->op()];
    out.fused_in_graph += item.absorbed;
  }
  return out;
}

TEST(GpuFusionsTest, TheGpusFusedPairsRunInItsStepGraph) {
  const Trained graph = Train(true, Mode::kOn, 6);
  const Trained plain = Train(true, Mode::kOff, 6);
  const Trained unfused = Train(false, Mode::kOff, 6);
  const std::map<std::string, int> expected = {
      {"Cast+Mul", 1}, {"Conv2D+BiasAddRelu", 1}, {"MatMul+BiasAddRelu", 1}, {"MatMul+BiasAdd", 1}};
  EXPECT_EQ(graph.fused, expected);
  EXPECT_EQ(graph.fused_in_graph, 4) << "every fused pair inside the step graph";
  EXPECT_EQ(plain.fused, expected);
  EXPECT_TRUE(unfused.fused.empty());
  EXPECT_EQ(graph.fetched, plain.fetched) << "bit for bit";
  ASSERT_EQ(unfused.fetched.size(), plain.fetched.size());
  for (size_t i = 0; i < plain.fetched.size(); ++i) {
    ASSERT_EQ(unfused.fetched[i].size(), plain.fetched[i].size());
    for (size_t j = 0; j < plain.fetched[i].size(); ++j) {
      EXPECT_NEAR(unfused.fetched[i][j], plain.fetched[i][j], 1e-4 + 1e-4 * std::abs(plain.fetched[i][j]))
          << "row " << i << " element " << j;
    }
  }
  EXPECT_LT(plain.fetched[5][0], plain.fetched[0][0]) << "the model learns";
}

}  // namespace
}  // namespace tw
