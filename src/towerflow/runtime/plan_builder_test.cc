// What a step's plan runs (plan_builder.h, plan.h's CountItems): items,
// kernels, fusions and transfers per step, for one device and across devices
// and memories, and the errors of building a plan.
#include "towerflow/runtime/plan_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/train/momentum.h"

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
  // MatMul, Relu: the fed placeholder and the unused Neg are pruned, and the
  // constant w is made when the plan is built (steps read it from the plan).
  EXPECT_EQ(c.items, 2) << c.ToString();
  EXPECT_EQ(c.kernels, 2);
  EXPECT_EQ(c.resolved, 1);
  EXPECT_EQ(c.transfers, 0);
  EXPECT_EQ(c.roots, 1);  // MatMul: its inputs are a feed and a constant
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
  // b, c, d, e and the two transfers; the constant a is made when the plan is
  // built (the transfer to the GPU and e read it from the plan).
  EXPECT_EQ(c1.kernels, 4) << c1.ToString();
  EXPECT_EQ(c1.resolved, 1);
  EXPECT_EQ(c1.transfers, 2);
  EXPECT_EQ(c1.items, 6);
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

// A Const built under control dependencies (an optimizer's learning rate
// under tf.control_dependencies) is made once too: its reader waits for the
// Const's control inputs itself. Here the reader adds the Const to v after
// the Assign the Const waits for: v = 10 + 5, every run.
TEST(PlanBuilderTest, AConstantWithControlInputsIsMadeOnceAndItsReaderWaits) {
  Graph graph;
  Scope s(graph);
  Output v = VariableV2(s.WithOpName("v"), TensorShape{}, kFloat32);
  Node* zero = Assign(s.WithOpName("zero"), v, Const(s, 0.0f)).node;
  Node* ten = Assign(s.WithOpName("ten"), v, Const(s, 10.0f)).node;
  Output five = Const(s.WithOpName("five").WithControlDependencies({ten}), 5.0f);
  Output add = AssignAdd(s.WithOpName("add"), v, five);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(graph, {.inter_op_threads = 2});
  const PlanCounts counts = Counts(session, {}, {}, {add.node});
  // ten and add run; five and the Consts the Assigns read are made once.
  EXPECT_EQ(counts.kernels, 2) << counts.ToString();
  EXPECT_EQ(counts.resolved, 3) << counts.ToString();
  EXPECT_EQ(counts.roots, 1) << counts.ToString();  // ten: add waits for it
  for (int run = 0; run < 50; ++run) {
    ASSERT_TRUE(session.Run(zero).ok());
    ASSERT_TRUE(session.Run(add.node).ok());
    auto got = session.Run({v});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)[0].scalar<float>(), 15.0f) << "run " << run;
  }
}

TEST(PlanBuilderTest, ConstantsAndVariablesAreMadeOnceWhenReadDirectly) {
  Graph graph;
  Scope s(graph);
  Output v = VariableV2(s.WithOpName("v"), TensorShape{2}, kFloat32);
  Node* init = Assign(s.WithOpName("init"), v, Const(s, Tensor::FromVector<float>({1, 2}, TensorShape{2}))).node;
  Output c = Const(s.WithOpName("c"), Tensor::FromVector<float>({10, 20}, TensorShape{2}));
  Output y = Add(s.WithOpName("y"), Identity(s, v), c);
  Output fetched_const = Const(s.WithOpName("fetched"), 7.0f);
  ASSERT_TRUE(s.ok());
  Session session(graph);
  ASSERT_TRUE(session.Run(init).ok());
  const PlanCounts counts = Counts(session, {}, {y, fetched_const});
  // v and c are resolved; the fetched constant stays an item.
  EXPECT_EQ(counts.resolved, 2) << counts.ToString();
  EXPECT_EQ(counts.kernels, 3);  // Identity, Add, the fetched Const
  for (int step = 0; step < 3; ++step) {
    auto r = session.Run({y, fetched_const});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{11, 22}));
    EXPECT_EQ((*r)[1].scalar<float>(), 7.0f);
  }
  // The variable is read at every step, through the reference the plan holds.
  ASSERT_TRUE(session.Run(Assign(s, v, Const(s, Tensor::FromVector<float>({5, 5}, TensorShape{2}))).node).ok());
  auto r = session.Run({y});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{15, 25}));
}

// The items of the MLP's training step on one (fake) GPU, as towerflow train
// builds its layers (BiasAddRelu): each hidden layer's gradient is one
// BiasAddReluGrad item (no ReluGrad, no BiasAddGrad), the updates and the
// global step one group item. Step graphs off, so that each kernel counts.
TEST(PlanBuilderTest, AnMlpTrainingStepOnAGpuRunsItsLayersGradientsAndUpdatesAsFewKernels) {
  Graph graph;
  Scope root(graph);
  Scope s = root.WithDevice("/device:GPU:0");
  Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({8, 20}));
  Output labels = Placeholder(root.WithOpName("labels"), kInt64, PartialShape({8}));
  Output h = x;
  std::vector<int64_t> widths = {20, 16, 16, 3};
  for (size_t l = 1; l < widths.size(); ++l) {
    Scope ls = s.WithVariableScope("layer" + std::to_string(l));
    Variable w = GetVariable(ls, "kernel", {widths[l - 1], widths[l]}, {.initializer = GlorotUniformInitializer()});
    Variable b = GetVariable(ls, "bias", {widths[l]}, {.initializer = ZerosInitializer()});
    Output z = MatMul(ls, h, w.value);
    h = l + 1 < widths.size() ? BiasAddRelu(ls, z, b.value) : BiasAdd(ls, z, b.value);
  }
  Output loss = SparseSoftmaxCrossEntropyMean(s, h, labels).loss;
  Variable step = train::GetOrCreateGlobalStep(s);
  Node* train = train::Momentum({.learning_rate = 0.1, .momentum = 0.9}).Minimize(s, loss, &step);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  SessionOptions options{.num_fake_gpus = 1};
  options.allow_soft_placement = true;
  options.cuda_graphs = SessionOptions::StepGraphMode::kOff;
  Session session(graph, options);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  Tensor xs(kFloat32, TensorShape{8, 20});
  for (int64_t i = 0; i < xs.NumElements(); ++i) xs.flat<float>()[static_cast<size_t>(i)] = 0.01f * (i % 17);
  const FeedList feeds = {{x, xs}, {labels, Tensor::Vec<int64_t>({0, 1, 2, 0, 1, 2, 0, 1})}};
  auto r = session.Run(feeds, {loss}, {train});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto plan = session.impl().GetPlan(feeds, {loss}, {train});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::map<std::string, int> ops;
  std::vector<std::string> group;
  for (const ExecutorPlan::Item& item : (*plan)->items) {
    if (item.node == nullptr || item.device->device_type() != "GPU") continue;
    ++ops[item.node->op()];
    if (item.fused != nullptr && item.fused->group) {
      for (const Node* n : item.fused->nodes) group.push_back(n->op());
    }
  }
  EXPECT_EQ(ops["BiasAddReluGrad"], 2);
  EXPECT_EQ(ops["ReluGrad"], 0);
  EXPECT_EQ(ops["BiasAddGrad"], 1);  // the logits' bias
  EXPECT_EQ(group, (std::vector<std::string>{"ApplyMomentum", "ApplyMomentum", "ApplyMomentum", "ApplyMomentum",
                                             "ApplyMomentum", "ApplyMomentum", "AssignAdd"}));
  EXPECT_EQ(ops["AssignAdd"], 0) << "the step counted in the group's item";
  const PlanCounts counts = CountItems(**plan);
  // The forward layers as 3 fused items (MatMul+BiasAddRelu twice,
  // MatMul+BiasAdd), the loss head, 2 BiasAddReluGrads and the logits'
  // BiasAddGrad, 5 backward MatMuls, 6 reads of the variables, the updates'
  // barrier and one group: 20, where the ReluGrad + BiasAddGrad pairs and the
  // step's own AssignAdd made 23.
  EXPECT_EQ(counts.kernels, 20) << counts.ToString();
}

TEST(PlanCountsTest, ToStringSaysWhatAStepRuns) {
  PlanCounts c{.items = 12, .kernels = 10, .resolved = 4, .fused = 1, .transfers = 2, .device_waits = 1, .roots = 3};
  EXPECT_EQ(c.ToString(), "12 items: 10 kernels (1 fused), 2 transfers (1 wait for a device), 3 roots; 4 resolved");
}

}  // namespace
}  // namespace tw
