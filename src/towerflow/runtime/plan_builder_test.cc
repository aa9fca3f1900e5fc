// What a step's plan runs (plan_builder.h, plan.h's CountItems): items,
// kernels, fusions and transfers per step, for one device and across devices
// and memories, and the errors of building a plan.
#include "towerflow/runtime/plan_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using ::testing::HasSubstr;

PlanCounts Counts(Session& session, const FeedList& feeds, const std::vector<Output>& fetches,
                  const std::vector<Node*>& targets = {}) {
  auto plan = session.impl().GetPlan(feeds, fetches, targets);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? CountItems(**plan) : PlanCounts{};
}

TEST(PlanBuilderTest, OneDeviceNeedsNoTransfers) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, PartialShape({-1, 3}));
  Output w = Const(s.WithOpName("w"), Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape{3, 2}));
  Output y = Relu(s, MatMul(s, x, w));
  Output unused = Neg(s, w);
  ASSERT_TRUE(s.ok());
  Session session(graph);
  const PlanCounts c = Counts(session, {{x, Tensor()}}, {y});
  // w, MatMul, Relu: the fed placeholder and the unused Neg are pruned.
  EXPECT_EQ(c.items, 3) << c.ToString();
  EXPECT_EQ(c.kernels, 3);
  EXPECT_EQ(c.transfers, 0);
  EXPECT_EQ(c.roots, 1);  // w; the feed is no item
  (void)unused;
}

TEST(PlanBuilderTest, EachCrossDeviceEdgeHasOneTransferSharedByItsReaders) {
  Graph graph;
  Scope s(graph);
  Scope cpu = s.WithDevice("/device:CPU:0");
  Scope gpu = s.WithDevice("/device:GPU:0");
  Output a = Const(cpu.WithOpName("a"), Tensor::FromVector<float>({1, 2}, TensorShape{2}));
  Output b = Neg(gpu.WithOpName("b"), a);       // a -> GPU: one transfer
  Output c = Sub(gpu.WithOpName("c"), b, a);    // reads both on the GPU: no new transfer
  Output d = Neg(cpu.WithOpName("d"), c);       // c -> CPU: one transfer
  Output e = Mul(cpu.WithOpName("e"), c, a);    // shares c's transfer
  ASSERT_TRUE(s.ok());
  Session session(graph, {.num_fake_gpus = 1});
  const PlanCounts c1 = Counts(session, {}, {d, e});
  EXPECT_EQ(c1.kernels, 5) << c1.ToString();
  EXPECT_EQ(c1.transfers, 2);
  EXPECT_EQ(c1.items, 7);
  EXPECT_EQ(c1.device_waits, 0) << "fake GPUs have host memory";
  // Fetching a GPU value from a host-memory device adds nothing.
  const PlanCounts c2 = Counts(session, {}, {c});
  EXPECT_EQ(c2.transfers, 1) << c2.ToString();
  auto r = session.Run({d, e});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ((*r)[1].ToVector<float>(), (std::vector<float>{-2, -8}));
}

TEST(PlanBuilderTest, FusedChainsCountAsOneItem) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, PartialShape({1, 4, 4, 1}));
  Output f = Const(s, Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape{2, 2, 1, 1}));
  Output y = BiasAdd(s, Conv2D(s, x, f), Const(s, Tensor::FromVector<float>({0.5f}, TensorShape{1})));
  ASSERT_TRUE(s.ok());
  Session fused(graph, {.fuse_kernels = true});
  Session apart(graph, {.fuse_kernels = false});
  const PlanCounts cf = Counts(fused, {{x, Tensor()}}, {y});
  const PlanCounts ca = Counts(apart, {{x, Tensor()}}, {y});
  EXPECT_EQ(cf.fused, 1) << cf.ToString();
  EXPECT_EQ(cf.items, ca.items - 1) << "Conv2D runs inside BiasAdd's item";
  EXPECT_EQ(ca.fused, 0);
}

TEST(PlanBuilderTest, ErrorsName) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32);
  Output y = Neg(s.WithOpName("y"), x);
  ASSERT_TRUE(s.ok());
  Session session(graph);
  auto twice = session.impl().GetPlan({{x, Tensor()}, {x, Tensor()}}, {y}, {});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("x:0 is fed more than once"));
  auto bad_fetch = session.impl().GetPlan({}, {Output(y.node, 3)}, {});
  ASSERT_FALSE(bad_fetch.ok());
  EXPECT_THAT(bad_fetch.status().message(), HasSubstr("fetch y:3 does not exist"));
}

TEST(PlanCountsTest, ToStringSaysWhatAStepRuns) {
  PlanCounts c{.items = 12, .kernels = 10, .fused = 1, .transfers = 2, .device_waits = 1, .roots = 3};
  EXPECT_EQ(c.ToString(), "12 items: 10 kernels (1 fused), 2 transfers (1 wait for a device), 3 roots");
}

}  // namespace
}  // namespace tw
