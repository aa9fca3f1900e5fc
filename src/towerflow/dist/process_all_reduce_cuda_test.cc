// ProcessAllReduce's GPU kernel (NCCL between processes) against its CPU twin
// (MPI): two processes under mpirun, rank r on GPU r, reduce the same buckets
// on the GPU and on the CPU; the means must be the same bits (two ranks: one
// addition, one halving, whichever library does it). Needs two GPUs (NCCL
// refuses two ranks on one GPU) and a build with MPI: skips otherwise.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "towerflow/device/device_set.h"
#include "towerflow/dist/collective_ops.h"
#include "towerflow/dist/launch.h"
#include "towerflow/dist/mpirun_test_util.h"
#include "towerflow/dist/world.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw::dist {
namespace {

TEST(ProcessAllReduceRanks, DISABLED_GpuMatchesCpu) {
  auto started = World::Start({.collective_timeout_seconds = 120});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  const float r = static_cast<float>(w.rank());
  // This rank's three gradients, as constants of `scope`'s graph.
  auto gradients = [r](const Scope& scope) {
    std::vector<Output> values;
    for (int k = 0; k < 3; ++k) {
      std::vector<float> v(static_cast<size_t>(1000 + k));
      for (size_t i = 0; i < v.size(); ++i) v[i] = (r + 1) * 0.37f * static_cast<float>(i % 97 + k);
      values.push_back(Const(scope, Tensor::FromVector(v, TensorShape{static_cast<int64_t>(v.size())})));
    }
    return values;
  };
  Graph graph;
  Scope root(graph);
  std::vector<Output> values = gradients(root);
  // Two rounds of buckets: the GPU's (round 1), then the CPU's (round 2).
  const std::string gpu = "/device:GPU:" + std::to_string(w.rank());
  std::vector<Output> on_gpu = CrossProcessMean(root, values, {.device = gpu});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  SessionOptions options;
  options.max_gpus = -1;
  Session session(graph, options);
  auto g = session.Run(on_gpu);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Graph cpu_graph;
  Scope cpu_root(cpu_graph);
  std::vector<Output> on_cpu = CrossProcessMean(cpu_root, gradients(cpu_root));
  Session cpu_session(cpu_graph);
  auto c = cpu_session.Run(on_cpu);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_EQ((*g)[k].TotalBytes(), (*c)[k].TotalBytes());
    EXPECT_EQ(std::memcmp((*g)[k].raw_data(), (*c)[k].raw_data(), (*c)[k].TotalBytes()), 0) << "tensor " << k;
  }
  session.Close();
  cpu_session.Close();
  w.Finalize();
}

TEST(ProcessAllReduceCudaTest, NcclBetweenTwoProcessesMatchesMpi) {
  if (!BuiltWithMpi()) GTEST_SKIP() << "built without MPI";
  if (VisibleCudaGpuCount() < 2) GTEST_SKIP() << "NCCL between processes needs 2 GPUs, " << VisibleCudaGpuCount()
                                              << " visible";
  const std::string self = std::filesystem::canonical("/proc/self/exe").string();
  auto r = testing::RunShell(
      testing::MpirunCommand(2, self + " --gtest_color=no --gtest_also_run_disabled_tests "
                                       "--gtest_filter=ProcessAllReduceRanks.DISABLED_GpuMatchesCpu"),
      300);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace tw::dist
