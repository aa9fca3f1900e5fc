// GPU launcher threads (ExecutorOptions::launchers): every item of a GPU runs
// on that GPU's one thread, each GPU has its own, the values are those of a
// step without them, and a failure on a launcher fails the step naming the
// node. On fake GPUs, which follow the real ones here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using fusion_test::Random;
using ::testing::HasSubstr;

// Two towers, each a chain of MatMuls and Relus on its own GPU, summed on the CPU.
struct Towers {
  Graph graph;
  Output x, total;
  std::vector<Output> tower_out;
  Towers() {
    Scope s(graph);
    x = Placeholder(s.WithOpName("x"), kFloat32, PartialShape({64, 64}));
    for (int t = 0; t < 2; ++t) {
      Scope gpu = s.WithDevice("/device:GPU:" + std::to_string(t));
      Output h = x;
      for (int layer = 0; layer < 4; ++layer) {
        h = Relu(gpu, MatMul(gpu, h, Const(gpu, Random<float>({64, 64}, static_cast<uint64_t>(10 * t + layer)))));
      }
      tower_out.push_back(h);
    }
    total = Add(s.WithDevice("/device:CPU:0").WithOpName("total"), tower_out[0], tower_out[1]);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }
};

TEST(GpuLauncherTest, EachGpusItemsRunOnItsOwnThread) {
  Towers towers;
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = 2};
  Session session(towers.graph, options);
  const Tensor x = Random<float>({64, 64}, 99);
  for (int step = 0; step < 5; ++step) {
    StepStats stats;
    auto r = session.Run({{towers.x, x}}, {towers.total}, {}, &stats);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::map<std::string, std::set<int>> threads;  // device -> threads that ran its items
    for (const auto& t : stats.nodes) threads[DeviceNameOf(t.device)].insert(t.thread);
    const std::string gpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
    const std::string gpu1 = "/job:localhost/replica:0/task:0/device:GPU:1";
    ASSERT_EQ(threads[gpu0].size(), 1u) << "GPU:0's items changed threads in step " << step;
    ASSERT_EQ(threads[gpu1].size(), 1u) << "GPU:1's items changed threads in step " << step;
    EXPECT_NE(*threads[gpu0].begin(), *threads[gpu1].begin()) << "the two GPUs share a launcher";
  }
  // The plan pins kernels and copies into a GPU to its launcher.
  auto plan = session.impl().GetPlan({{towers.x, Tensor()}}, {towers.total}, {});
  ASSERT_TRUE(plan.ok());
  for (const ExecutorPlan::Item& item : (*plan)->items) {
    EXPECT_EQ(item.launcher, item.device->device_type() == kDeviceGpu ? item.device->index() : -1)
        << item.node->name() << (item.is_transfer() ? " (transfer)" : "");
  }
}

TEST(GpuLauncherTest, SameValuesWithAndWithoutLaunchers) {
  Towers towers;
  const Tensor x = Random<float>({64, 64}, 5);
  std::vector<float> results[2];
  for (bool launchers : {false, true}) {
    for (int inter : {1, 2}) {
      SessionOptions options{.inter_op_threads = inter, .intra_op_threads = 1, .gpu_launcher_threads = launchers,
                             .num_fake_gpus = 2};
      Session session(towers.graph, options);
      auto r = session.Run({{towers.x, x}}, {towers.total, towers.tower_out[1]});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      std::vector<float> v = (*r)[0].ToVector<float>();
      if (results[0].empty()) results[0] = v;
      EXPECT_EQ(v, results[0]) << "launchers " << launchers << ", inter-op threads " << inter;
    }
  }
}

TEST(GpuLauncherTest, AFailureOnALauncherFailsTheStep) {
  Graph graph;
  Scope s(graph);
  Output shape = Placeholder(s.WithOpName("shape"), kInt32, PartialShape({2}));
  Scope gpu = s.WithDevice("/device:GPU:0");
  Output y = Reshape(gpu.WithOpName("bad_reshape"), Neg(gpu, Const(gpu, Random<float>({4, 4}, 1))), shape);
  Output z = Neg(gpu.WithOpName("after"), y);
  ASSERT_TRUE(s.ok());
  Session session(graph, {.inter_op_threads = 2, .num_fake_gpus = 1, .allow_soft_placement = true});
  auto bad = session.Run({{shape, Tensor::FromVector<int32_t>({3, 3}, TensorShape{2})}}, {z});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().ToString(), HasSubstr("bad_reshape"));
  // The session stays usable.
  auto good = session.Run({{shape, Tensor::FromVector<int32_t>({2, 8}, TensorShape{2})}}, {z});
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)[0].dim(1), 8);
}

}  // namespace
}  // namespace tw
