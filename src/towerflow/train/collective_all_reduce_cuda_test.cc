// CollectiveAllReduce's GPU kernel (collective_all_reduce_cuda.cc) through
// Replicate: mirrored towers average their gradients with the collective by
// default (kAuto), placed on the GPUs, and train as reduce-broadcast trains
// them, to rounding, every tower's copies equal bit for bit. On 2 and 3
// logical GPUs of one physical GPU (NcclAllReducer's device-memory path), and
// where a machine has 2 GPUs, one tower on each (NCCL's own all-reduce, run
// only there). Small layers go through the reducer's buckets; a 4.4 MB kernel
// is reduced on its own. Skips without a GPU (label cuda).
#include <gtest/gtest.h>

#include <cmath>
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

constexpr int kBatch = 8, kOut = 3;

// The layers' widths: small (every gradient bucketed) or with a first kernel
// past the reducer's 4 MiB bucket size.
struct Widths {
  int64_t in = 5, hidden = 7;
};

tw::Batch PlaceholderBatch(const Scope& s, int64_t in) {
  return {Placeholder(s.WithOpName("x"), kFloat32, PartialShape({kBatch, in})),
          Placeholder(s.WithOpName("y"), kFloat32, PartialShape({kBatch, kOut}))};
}

// Two dense layers, random kernels: mirrored copies would differ if each drew
// its own initial value.
Output Model(const Scope& tower, const tw::Batch& b, Widths w) {
  const int64_t kIn = w.in, kHidden = w.hidden;
  Scope s1 = tower.WithVariableScope("hidden");
  Variable w1 = GetVariable(s1, "kernel", {kIn, kHidden}, {.initializer = RandomUniformInitializer(-0.1, 0.1)});
  Variable b1 = GetVariable(s1, "bias", {kHidden}, {.initializer = ZerosInitializer()});
  Scope s2 = tower.WithVariableScope("logits");
  Variable w2 = GetVariable(s2, "kernel", {kHidden, kOut}, {.initializer = RandomUniformInitializer(-0.1, 0.1)});
  Variable b2 = GetVariable(s2, "bias", {kOut}, {.initializer = ZerosInitializer()});
  Output h = Relu(tower, BiasAdd(tower, MatMul(tower, b[0], w1.value), b1.value));
  Output logits = BiasAdd(tower, MatMul(tower, h, w2.value), b2.value);
  return Mean(tower, SoftmaxCrossEntropyWithLogits(tower, logits, b[1]).loss, {0});
}

FeedList Feeds(const ReplicaStep& step, int round, int64_t in) {
  FeedList feeds;
  for (size_t i = 0; i < step.tower_batches.size(); ++i) {
    Tensor x(kFloat32, TensorShape{kBatch, in}), y(kFloat32, TensorShape{kBatch, kOut});
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

// `towers` towers on `towers` logical GPUs of one GPU, or (physical) one on
// each of the first `towers` GPUs.
Trained Train(int towers, bool physical, Widths w, AllReduceAlgorithm algorithm) {
  Graph graph;
  graph.set_seed(11);
  Scope root(graph);
  Momentum momentum({.learning_rate = 0.1, .momentum = 0.9});
  std::string devices;
  for (int i = 0; i < towers; ++i) devices += (i ? ",gpu:" : "gpu:") + std::to_string(i);
  ReplicaStep step = Replicate(
      root, Devices(devices), [&](const Scope& s) { return PlaceholderBatch(s, w.in); }, momentum,
      [&](const Scope& tower, const tw::Batch& b) { return Model(tower, b, w); },
                               {.variable_placement = VariablePlacement::kMirrored, .all_reduce = algorithm});
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  SessionOptions o;
  o.max_gpus = physical ? towers : 1;
  o.logical_gpus_per_gpu = physical ? 1 : towers;
  o.gpu_memory_limit_mb = 1024;
  o.allow_soft_placement = true;  // the placeholders stay on the host
  Session session(graph, o);
  EXPECT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  for (int round = 0; round < 6; ++round) {
    Status s = session.Run(Feeds(step, round, w.in), {}, {step.train_op}).status();
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

void ExpectCollectiveTrainsAsReduceBroadcast(int towers, bool physical, Widths w) {
  const Trained nccl = Train(towers, physical, w, AllReduceAlgorithm::kAuto);
  const Trained broadcast = Train(towers, physical, w, AllReduceAlgorithm::kReduceBroadcast);
  // kAuto on CUDA GPUs: the collective, on the GPU itself.
  EXPECT_NE(nccl.collective_device.find("GPU:1"), std::string::npos) << nccl.collective_device;
  EXPECT_EQ(broadcast.collective_device, "");
  const size_t per_tower = 4;  // two kernels, two biases
  ASSERT_EQ(nccl.values.size(), per_tower * static_cast<size_t>(towers));
  ASSERT_EQ(broadcast.values.size(), nccl.values.size());
  for (size_t v = 0; v < nccl.values.size(); ++v) {
    // Every tower's copy is the same bits as tower 0's.
    EXPECT_EQ(nccl.values[v], nccl.values[v % per_tower]) << "value " << v;
    ASSERT_EQ(nccl.values[v].size(), broadcast.values[v].size());
    int bad = 0;
    for (size_t k = 0; k < nccl.values[v].size() && bad < 5; ++k) {
      const float want = broadcast.values[v][k];
      if (std::abs(nccl.values[v][k] - want) > 1e-5f + 1e-5f * std::abs(want)) {
        ADD_FAILURE() << "value " << v << " element " << k << ": " << nccl.values[v][k] << " vs " << want;
        ++bad;
      }
    }
  }
}

TEST(CollectiveAllReduceCudaTest, MirroredTowersOnLogicalGpusTrainAsReduceBroadcast) {
  TW_SKIP_WITHOUT_GPU();
  for (int towers : {2, 3}) {
    SCOPED_TRACE(towers);
    ExpectCollectiveTrainsAsReduceBroadcast(towers, /*physical=*/false, Widths{});
  }
  SCOPED_TRACE("a 4.4 MB kernel");
  ExpectCollectiveTrainsAsReduceBroadcast(2, /*physical=*/false, Widths{.in = 1024, .hidden = 1100});
}

TEST(CollectiveAllReduceCudaTest, MirroredTowersOnTwoPhysicalGpusReduceWithNccl) {
  TW_SKIP_WITHOUT_GPU();
  if (VisibleCudaGpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs";
  ExpectCollectiveTrainsAsReduceBroadcast(2, /*physical=*/true, Widths{});
  ExpectCollectiveTrainsAsReduceBroadcast(2, /*physical=*/true, Widths{.in = 1024, .hidden = 1100});
}

}  // namespace
}  // namespace tw::train
