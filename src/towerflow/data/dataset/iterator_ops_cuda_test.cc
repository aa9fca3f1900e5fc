// PrefetchToDevice on a CUDA GPU: the IteratorGetNext runs on the GPU, its
// outputs are in the GPU's memory (copied there ahead by the iterator
// resource's thread through GpuDevice::CopyFromHost), and a GPU kernel reads
// them: the values the CPU pipeline gives. Closing the session while the copy
// thread runs ahead returns. Skipped when no GPU is visible (label cuda).
#include <gtest/gtest.h>

#include <chrono>

#include "towerflow/data/iterator_ops.h"
#include "towerflow/device/device_set.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"

namespace tw::data {
namespace {

Dataset Squares() {
  return Dataset::Range(64)
      .Map([](const Scope& s, const std::vector<Output>& x) { return std::vector<Output>{Cast(s, x[0], kFloat32)}; })
      .Batch(8, /*drop_remainder=*/true)
      .PrefetchToDevice("/gpu:0", 2);
}

TEST(IteratorOpsCudaTest, PrefetchToDeviceFeedsAGpuKernel) {
  if (VisibleCudaGpuCount() == 0) GTEST_SKIP() << "no GPU visible";
  Graph graph;
  Scope root(graph);
  GraphIterator it = MakeIterator(root.WithDevice("/device:CPU:0"), Squares());
  Output x = it.GetNext(root)[0];
  Output y = Mul(root.WithDevice("/device:GPU:0"), x, x);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph, {.max_gpus = 1});
  for (int b = 0; b < 8; ++b) {
    auto got = session.Run({y});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<float> want;
    for (int i = 0; i < 8; ++i) want.push_back(static_cast<float>((8 * b + i) * (8 * b + i)));
    EXPECT_EQ((*got)[0].ToVector<float>(), want) << "batch " << b;
  }
  EXPECT_EQ(session.PlacedDevice(*x.node), "/job:localhost/replica:0/task:0/device:GPU:0");
  EXPECT_EQ(session.Run({y}).status().code(), Code::kOutOfRange);
}

TEST(IteratorOpsCudaTest, ClosingTheSessionStopsTheCopyThread) {
  if (VisibleCudaGpuCount() == 0) GTEST_SKIP() << "no GPU visible";
  Graph graph;
  Scope root(graph);
  GraphIterator it = MakeIterator(root.WithDevice("/device:CPU:0"), Squares());
  Output x = it.GetNext(root)[0];
  ASSERT_TRUE(root.ok());
  const auto start = std::chrono::steady_clock::now();
  {
    Session session(graph, {.max_gpus = 1});
    ASSERT_TRUE(session.Run({x}).ok());  // the copy thread now runs ahead
    session.Close();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

}  // namespace
}  // namespace tw::data
