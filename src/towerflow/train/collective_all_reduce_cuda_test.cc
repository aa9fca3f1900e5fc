// CollectiveAllReduce's GPU kernel (collective_all_reduce_cuda.cc) through
// Replicate: mirrored towers on 2 and 3 logical GPUs of one physical GPU
// (NcclAllReducer's device-memory path; on a machine with 2 GPUs, one tower on
// each: NCCL's) average their gradients with the collective by default
// (kAuto), placed on the GPUs, and train as reduce-broadcast trains them, to
// rounding, every tower's copies equal bit for bit. Skips without a GPU
// (label cuda).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/train/momentum.h"
#include "towerflow/train/replicate.h"

namespace tw::train {
namespace {

constexpr int kBatch = 8, kIn = 5, kHidden = 7, kOut = 3;

tw::Batch PlaceholderBatch(const Scope& s) {
  return {Placeholder(s.WithOpName("x"), kFloat32, PartialShape({kBatch, kIn})),
          Placeholder(s.WithOpName("y"), kFloat32, PartialShape({kBatch, kOut}))};
}

// Two dense layers, random kernels: mirrored copies would differ if each drew
// its own initial value.
Output Model(const Scope& tower, const tw::Batch& b) {
  Scope s1 = tower.WithVariableScope("hidden");
  Variable w1 = GetVariable(s1, "kernel", {kIn, kHidden}, {.initializer = RandomUniformInitializer(-1, 1)});
  Variable b1 = GetVariable(s1, "bias", {kHidden}, {.initializer = ZerosInitializer()});
  Scope s2 = tower.WithVariableScope("logits");
  Variable w2 = GetVariable(s2, "kernel", {kHidden, kOut}, {.initializer = RandomUniformInitializer(-1, 1)});
  Variable b2 = GetVariable(s2, "bias", {kOut}, {.initializer = ZerosInitializer()});
  Output h = Relu(tower, BiasAdd(tower, MatMul(tower, b[0], w1.value), b1.value));
  Output logits = BiasAdd(tower, MatMul(tower, h, w2.value), b2.value);
  return Mean(tower, SoftmaxCrossEntropyWithLogits(tower, logits, b[1]).loss, {0});
}

FeedList Feeds(const ReplicaStep& step, int round) {
  FeedList feeds;
  for (size_t i = 0; i < step.tower_batches.size(); ++i) {
    Tensor x(kFloat32, TensorShape{kBatch, kIn}), y(kFloat32, TensorShape{kBatch, kOut});
    for (int64_t k = 0; k < x.NumElements(); ++k) {
      x.flat<float>()[static_cast<size_t>(k)] =
          0.05f * static_cast<float>((k * 7 + static_cast<int64_t>(i) * 3 + round) % 23) - 0.5f;
    }
    for (int64_t r = 0; r < kBatch; ++r) {
      for (int c = 0; c < kOut; ++c) {
        y.flat<float>()[static_cast<size_t>(r * kOut + c)] = (r + static_cast<int64_t>(i) + round) % kOut == c ? 1.0f : 0.0f;
      }
    }
    feeds.emplace_back(step.tower_batches[i][0], x);
    feeds.emplace_back(step.tower_batches[i][1], y);
  }
  return feeds;
}

struct Trained {
  std::vector<std::vector<float>> values;  // every tower's copies, tower by tower
  std::string collective_device;           // where tower 1's CollectiveAllReduce ran ("" if none)
};

Trained Train(int towers, AllReduceAlgorithm algorithm) {
  Graph graph;
  graph.set_seed(11);
  Scope root(graph);
  Momentum momentum({.learning_rate = 0.1, .momentum = 0.9});
  std::string devices;
  for (int i = 0; i < towers; ++i) devices += (i ? ",gpu:" : "gpu:") + std::to_string(i);
  ReplicaStep step = Replicate(root, Devices(devices), PlaceholderBatch, momentum, Model,
                               {.variable_placement = VariablePlacement::kMirrored, .all_reduce = algorithm});
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  SessionOptions o;
  o.max_gpus = 1;
  o.logical_gpus_per_gpu = towers;
  o.gpu_memory_limit_mb = 1024;
  o.allow_soft_placement = true;  // the placeholders stay on the host
  Session session(graph, o);
  EXPECT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  for (int round = 0; round < 6; ++round) {
    Status s = session.Run(Feeds(step, round), {}, {step.train_op}).status();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  Trained t;
  if (const Node* p = graph.FindNode("all_reduce/device_1"); p != nullptr && p->op() == "CollectiveAllReduce") {
    t.collective_device = session.PlacedDevice(*p);
  }
  std::vector<Output> fetch;
  for (const auto& vars : step.tower_variables) {
    for (const Variable& v : vars) fetch.push_back(v.value);
  }
  auto r = session.Run(fetch);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) {
    for (const Tensor& x : *r) t.values.push_back(x.ToVector<float>());
  }
  return t;
}

TEST(CollectiveAllReduceCudaTest, MirroredTowersOnLogicalGpusTrainAsReduceBroadcast) {
  TW_SKIP_WITHOUT_GPU();
  for (int towers : {2, 3}) {
    SCOPED_TRACE(towers);
    const Trained nccl = Train(towers, AllReduceAlgorithm::kAuto);
    const Trained broadcast = Train(towers, AllReduceAlgorithm::kReduceBroadcast);
    // kAuto on CUDA GPUs: the collective, on the GPU itself.
    EXPECT_NE(nccl.collective_device.find("GPU:1"), std::string::npos) << nccl.collective_device;
    EXPECT_EQ(broadcast.collective_device, "");
    const size_t per_tower = 4;  // two kernels, two biases
    ASSERT_EQ(nccl.values.size(), per_tower * towers);
    ASSERT_EQ(broadcast.values.size(), nccl.values.size());
    for (size_t v = 0; v < nccl.values.size(); ++v) {
      // Every tower's copy is the same bits as tower 0's.
      EXPECT_EQ(nccl.values[v], nccl.values[v % per_tower]) << "value " << v;
      ASSERT_EQ(nccl.values[v].size(), broadcast.values[v].size());
      for (size_t k = 0; k < nccl.values[v].size(); ++k) {
        EXPECT_NEAR(nccl.values[v][k], broadcast.values[v][k], 1e-5f + 1e-5f * std::abs(broadcast.values[v][k]))
            << "value " << v << " element " << k;
      }
    }
  }
}

}  // namespace
}  // namespace tw::train
