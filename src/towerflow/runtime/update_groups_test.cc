// Update groups (update_groups.h, kernels/update_group.h): on a GPU (the fake
// GPUs here, which borrow the CPU twin) a step's momentum updates run as one
// item, with the values of the updates run apart, bit for bit; updates with
// other hyper-parameters, a fetched update, and updates ordered by an edge
// stay apart; a member's error names it; the global step's AssignAdd joins a
// group it alone waits for.
#include "towerflow/runtime/update_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/runtime/training_test_util.h"
#include "towerflow/train/adagrad.h"
#include "towerflow/train/adam.h"
#include "towerflow/train/gradient_descent.h"
#include "towerflow/train/momentum.h"
#include "towerflow/train/rmsprop.h"

namespace tw {
namespace {

using fusion_test::Random;
using ::testing::HasSubstr;

// The groups of a plan: each group item's member names.
std::vector<std::vector<std::string>> Groups(const ExecutorPlan& plan) {
  std::vector<std::vector<std::string>> out;
  for (const ExecutorPlan::Item& item : plan.items) {
    if (item.fused == nullptr || !item.fused->group) continue;
    out.emplace_back();
    for (const Node* n : item.fused->nodes) out.back().push_back(n->name());
  }
  return out;
}

using training_test::Mlp;

// A 20-16-3 MLP on /device:GPU:0 trained with momentum.
Mlp MakeMlp(bool nesterov) {
  return Mlp({20, 16, 3}, 8, "/device:GPU:0", {.learning_rate = 0.1, .momentum = 0.9, .use_nesterov = nesterov});
}

struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<float>> vars;
  std::vector<std::vector<std::string>> groups;
  int grouped_timings = 0;
};

Trained Train(Mlp& mlp, bool fuse) {
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = 1};
  options.fuse_kernels = fuse;
  Session session(mlp.graph, options);
  EXPECT_TRUE(session.Run(mlp.init).ok());
  Trained out;
  for (int step = 0; step < 5; ++step) {
    StepStats stats;
    auto r = session.Run(mlp.Batch(static_cast<uint64_t>(step)), {mlp.loss}, {mlp.train}, &stats);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.losses.push_back((*r)[0].scalar<float>());
    for (const auto& t : stats.nodes) out.grouped_timings += t.fused.size() == 4 && t.node->op() == "ApplyMomentum";
  }
  auto plan = session.impl().GetPlan(mlp.Batch(0), {mlp.loss}, {mlp.train});
  EXPECT_TRUE(plan.ok());
  if (plan.ok()) out.groups = Groups(**plan);
  for (const Variable& v : mlp.vars) {
    auto r = session.Run({v.value});
    EXPECT_TRUE(r.ok());
    if (r.ok()) out.vars.push_back((*r)[0].ToVector<float>());
  }
  return out;
}

TEST(UpdateGroupsTest, AStepsUpdatesRunAsOneItemWithTheSameValues) {
  for (bool nesterov : {false, true}) {
    Mlp mlp = MakeMlp(nesterov);
    const Trained grouped = Train(mlp, true);
    const Trained apart = Train(mlp, false);
    ASSERT_EQ(grouped.groups.size(), 1u) << "nesterov " << nesterov;
    EXPECT_EQ(grouped.groups[0].size(), 4u);
    EXPECT_THAT(grouped.groups[0][0], HasSubstr("update_w1"));
    EXPECT_EQ(grouped.grouped_timings, 5) << "one timing per step names the four updates";
    EXPECT_TRUE(apart.groups.empty());
    EXPECT_EQ(grouped.losses, apart.losses);
    EXPECT_EQ(grouped.vars, apart.vars);
    EXPECT_LT(grouped.losses.back(), grouped.losses.front());
  }
}

// Gradient descent, Adam, RMSProp (plain and centered) and Adagrad group as
// momentum does: a 20-16-3 MLP trained by each, grouped against apart, bit for
// bit.
struct OptimizerRun {
  std::vector<float> losses;
  std::vector<std::vector<float>> vars;
  std::vector<std::vector<std::string>> groups;
  int64_t global_step = -1;
};

// `optimizer`: "sgd", "adam", "momentum", "rmsprop", "centered" (RMSProp) or
// "adagrad"; with a global step on the GPU,
// bumped by the train op; `fetch_step` fetches the train op's output too.
OptimizerRun TrainWith(const std::string& optimizer, bool fuse, bool global_step = false, bool fetch_step = false) {
  Graph graph;
  Scope root(graph);
  Scope s = root.WithDevice("/device:GPU:0");
  Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({8, 20}));
  Output labels = Placeholder(root.WithOpName("labels"), kFloat32, PartialShape({8, 3}));
  const Initializer fixed = training_test::FixedValues();
  std::vector<Variable> vars = {GetVariable(s, "w1", {20, 16}, {.initializer = fixed}),
                                GetVariable(s, "b1", {16}, {.initializer = fixed}),
                                GetVariable(s, "w2", {16, 3}, {.initializer = fixed}),
                                GetVariable(s, "b2", {3}, {.initializer = fixed})};
  Output h = Relu(s, BiasAdd(s, MatMul(s, x, vars[0].value), vars[1].value));
  Output logits = BiasAdd(s, MatMul(s, h, vars[2].value), vars[3].value);
  Output loss = Mean(s, SoftmaxCrossEntropyWithLogits(s, logits, labels).loss, {0});
  Variable step;
  if (global_step) step = train::GetOrCreateGlobalStep(s);
  Variable* step_ptr = global_step ? &step : nullptr;
  Node* train = nullptr;
  if (optimizer == "adam") {
    train = train::Adam({.learning_rate = 0.01}).Minimize(s, loss, step_ptr);
  } else if (optimizer == "momentum") {
    train = train::Momentum({.learning_rate = 0.1, .momentum = 0.9}).Minimize(s, loss, step_ptr);
  } else if (optimizer == "rmsprop" || optimizer == "centered") {
    train = train::RMSProp({.learning_rate = 0.01, .momentum = 0.5, .centered = optimizer == "centered"})
                .Minimize(s, loss, step_ptr);
  } else if (optimizer == "adagrad") {
    train = train::Adagrad({.learning_rate = 0.1}).Minimize(s, loss, step_ptr);
  } else {
    train = train::GradientDescent({.learning_rate = 0.1}).Minimize(s, loss, step_ptr);
  }
  Node* init = GlobalVariablesInitializer(graph);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = 1};
  options.fuse_kernels = fuse;
  options.allow_soft_placement = true;
  Session session(graph, options);
  EXPECT_TRUE(session.Run(init).ok());
  OptimizerRun out;
  auto batch = [&](int step) {
    return FeedList{{x, Random<float>({8, 20}, 50u + static_cast<uint64_t>(step))},
                    {labels, training_test::OneHotLabels(8, 3, static_cast<uint64_t>(step))}};
  };
  std::vector<Output> fetches = {loss};
  if (fetch_step) fetches.push_back(Output(train));
  for (int i = 0; i < 5; ++i) {
    auto r = session.Run(batch(i), fetches, {train});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.losses.push_back((*r)[0].scalar<float>());
  }
  auto plan = session.impl().GetPlan(batch(0), fetches, {train});
  EXPECT_TRUE(plan.ok());
  if (plan.ok()) out.groups = Groups(**plan);
  for (const Variable& v : vars) {
    auto r = session.Run({v.value});
    EXPECT_TRUE(r.ok());
    if (r.ok()) out.vars.push_back((*r)[0].ToVector<float>());
  }
  if (global_step) {
    auto r = session.Run({step.value});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.global_step = (*r)[0].scalar<int64_t>();
  }
  return out;
}

TEST(UpdateGroupsTest, TheGlobalStepIsBumpedByTheGroup) {
  // Momentum and gradient descent: the train op (the step's AssignAdd, which
  // waits for every update) joins the updates' group as its last member;
  // the same values, and one step counted per run.
  for (const std::string optimizer : {"momentum", "sgd", "rmsprop", "centered", "adagrad"}) {
    SCOPED_TRACE(optimizer);
    const OptimizerRun grouped = TrainWith(optimizer, true, /*global_step=*/true);
    const OptimizerRun apart = TrainWith(optimizer, false, /*global_step=*/true);
    ASSERT_EQ(grouped.groups.size(), 1u);
    ASSERT_EQ(grouped.groups[0].size(), 5u) << "4 updates and the step";
    const std::string train_op = optimizer == "momentum"                              ? "Momentum"
                                 : optimizer == "rmsprop" || optimizer == "centered" ? "RMSProp"
                                 : optimizer == "adagrad"                            ? "Adagrad"
                                                                                     : "GradientDescent";
    EXPECT_EQ(grouped.groups[0][4], train_op);
    EXPECT_EQ(grouped.global_step, 5);
    EXPECT_EQ(apart.global_step, 5);
    EXPECT_EQ(grouped.losses, apart.losses);
    EXPECT_EQ(grouped.vars, apart.vars);
  }
  // Adam's step waits for its beta powers' updates too: it stays apart.
  const OptimizerRun adam = TrainWith("adam", true, /*global_step=*/true);
  ASSERT_EQ(adam.groups.size(), 1u);
  EXPECT_EQ(adam.groups[0].size(), 4u);
  EXPECT_EQ(adam.global_step, 5);
  // A fetched step's output is not a group's.
  const OptimizerRun fetched = TrainWith("momentum", true, /*global_step=*/true, /*fetch_step=*/true);
  ASSERT_EQ(fetched.groups.size(), 1u);
  EXPECT_EQ(fetched.groups[0].size(), 4u);
  EXPECT_EQ(fetched.global_step, 5);
}

TEST(UpdateGroupsTest, EveryOptimizersUpdatesGroupToo) {
  for (const std::string optimizer : {"sgd", "adam", "rmsprop", "centered", "adagrad"}) {
    SCOPED_TRACE(optimizer);
    const OptimizerRun grouped = TrainWith(optimizer, true);
    const OptimizerRun apart = TrainWith(optimizer, false);
    ASSERT_EQ(grouped.groups.size(), 1u);
    EXPECT_EQ(grouped.groups[0].size(), 4u) << "one update per variable, in one group";
    EXPECT_TRUE(apart.groups.empty());
    EXPECT_EQ(grouped.losses, apart.losses);
    EXPECT_EQ(grouped.vars, apart.vars);
    EXPECT_LT(grouped.losses.back(), grouped.losses.front());
  }
}

// Three variables updated by hand: a, b with one learning rate, c with another.
struct Updates {
  Graph graph;
  Output a, b, c;
  Node* init = nullptr;
  std::vector<Output> vars;
  explicit Updates(bool order_b_after_a = false) {
    Scope s = Scope(graph).WithDevice("/device:GPU:0");
    std::vector<Output> updates;
    Output lr = Const(s.WithOpName("lr"), 0.5f), lr2 = Const(s.WithOpName("lr2"), 0.25f);
    Output momentum = Const(s.WithOpName("momentum"), 0.9f);
    std::vector<Output> inits;
    for (int i = 0; i < 3; ++i) {
      const std::string name = std::string(1, static_cast<char>('a' + i));
      Output var = VariableV2(s.WithOpName(name), TensorShape{5}, kFloat32);
      Output acc = VariableV2(s.WithOpName(name + "_acc"), TensorShape{5}, kFloat32);
      inits.push_back(Assign(s, var, Const(s, Random<float>({5}, static_cast<uint64_t>(i)))));
      inits.push_back(Assign(s, acc, Const(s, Random<float>({5}, static_cast<uint64_t>(10 + i)))));
      Scope us = s.WithOpName("update_" + name);
      if (order_b_after_a && i == 1) us = us.WithControlDependencies({updates[0]});
      updates.push_back(ApplyMomentum(us, var, acc, i == 2 ? lr2 : lr, Const(s, Random<float>({5}, 20u + i)), momentum));
      vars.push_back(var);
    }
    a = updates[0];
    b = updates[1];
    c = updates[2];
    init = NoOp(s.WithOpName("init").WithControlDependencies(inits));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }
};

std::vector<std::vector<std::string>> GroupsOf(Updates& u, const std::vector<Output>& fetches,
                                               const std::vector<Node*>& targets) {
  Session session(u.graph, {.num_fake_gpus = 1});
  EXPECT_TRUE(session.Run(u.init).ok());
  auto plan = session.impl().GetPlan({}, fetches, targets);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(session.Run({}, fetches, targets).ok());
  return plan.ok() ? Groups(**plan) : std::vector<std::vector<std::string>>{};
}

TEST(UpdateGroupsTest, OnlyCompatibleUnorderedUnfetchedUpdatesGroup) {
  {
    Updates u;
    Node* all = NoOp(Scope(u.graph).WithOpName("all").WithControlDependencies({u.a, u.b, u.c}));
    // c has another learning rate: a and b group.
    EXPECT_EQ(GroupsOf(u, {}, {all}), (std::vector<std::vector<std::string>>{{"update_a", "update_b"}}));
    // A fetched update stays apart: no group of two is left.
    EXPECT_TRUE(GroupsOf(u, {u.a}, {all}).empty());
  }
  {
    // b waits for a: grouping them would be a cycle.
    Updates u(/*order_b_after_a=*/true);
    Node* all = NoOp(Scope(u.graph).WithOpName("all").WithControlDependencies({u.a, u.b, u.c}));
    EXPECT_TRUE(GroupsOf(u, {}, {all}).empty());
  }
}

// Two unordered updates of one variable (two towers each updating a shared
// variable) stay apart: a group's members run at once without atomics, and
// one of the two would be lost. Both land, as without groups.
TEST(UpdateGroupsTest, TwoUpdatesOfOneVariableStayApart) {
  Graph graph;
  Scope s = Scope(graph).WithDevice("/device:GPU:0");
  Output var = VariableV2(s.WithOpName("w"), TensorShape{5}, kFloat32);
  Output other = VariableV2(s.WithOpName("v"), TensorShape{5}, kFloat32);
  Node* init = NoOp(s.WithOpName("init").WithControlDependencies(
      {Assign(s, var, Const(s, Tensor::Vec(std::vector<float>(5, 1.0f)))).node,
       Assign(s, other, Const(s, Tensor::Vec(std::vector<float>(5, 1.0f)))).node}));
  Output lr = Const(s.WithOpName("lr"), 1.0f);
  Output first = ApplyGradientDescent(s.WithOpName("tower_0_update"), var, lr,
                                      Const(s, Tensor::Vec(std::vector<float>(5, 0.25f))));
  Output second = ApplyGradientDescent(s.WithOpName("tower_1_update"), var, lr,
                                       Const(s, Tensor::Vec(std::vector<float>(5, 0.5f))));
  Output third = ApplyGradientDescent(s.WithOpName("other_update"), other, lr,
                                      Const(s, Tensor::Vec(std::vector<float>(5, 0.5f))));
  Node* all = NoOp(s.WithOpName("all").WithControlDependencies({first.node, second.node, third.node}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(graph, {.num_fake_gpus = 1});
  ASSERT_TRUE(session.Run(init).ok());
  auto plan = session.impl().GetPlan({}, {}, {all});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // One of w's updates groups with v's; the other stays apart.
  ASSERT_EQ(Groups(**plan).size(), 1u);
  for (const std::vector<std::string>& g : Groups(**plan)) {
    const auto both = std::count(g.begin(), g.end(), "tower_0_update") + std::count(g.begin(), g.end(), "tower_1_update");
    EXPECT_LE(both, 1) << "a group updates w twice";
  }
  ASSERT_TRUE(session.Run({}, {}, {all}).ok());
  auto w = session.Run({var});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)[0].ToVector<float>(), std::vector<float>(5, 0.25f)) << "1 - 0.25 - 0.5: both updates land";
}

TEST(UpdateGroupsTest, UpdatesOrderedThroughAFusedProducerStayApart) {
  // b's delta is BiasAdd(MatMul(a's variable after a, w)): a MatMul absorbed
  // into its BiasAdd (the pair the fake GPU borrows), so the path from a to b
  // runs through a node without an item of its own. Grouping a and b would
  // make the group wait for itself.
  Graph graph;
  Scope s = Scope(graph).WithDevice("/device:GPU:0");
  Output alpha = Const(s.WithOpName("alpha"), 0.5f);
  Output var_a = VariableV2(s.WithOpName("a"), TensorShape{2, 3}, kFloat32);
  Output var_b = VariableV2(s.WithOpName("b"), TensorShape{2, 3}, kFloat32);
  Output w = Const(s.WithOpName("w"), Random<float>({3, 3}, 1));
  Node* init = NoOp(s.WithOpName("init").WithControlDependencies(
      {Assign(s, var_a, Const(s, Random<float>({2, 3}, 2))), Assign(s, var_b, Const(s, Random<float>({2, 3}, 3)))}));
  Output update_a = ApplyGradientDescent(s.WithOpName("update_a"), var_a, alpha, Const(s, Random<float>({2, 3}, 4)));
  Output delta_b = BiasAdd(s.WithOpName("delta_b"), MatMul(s.WithOpName("product"), update_a, w),
                           Const(s, Random<float>({3}, 5)));
  Output update_b = ApplyGradientDescent(s.WithOpName("update_b"), var_b, alpha, delta_b);
  Node* all = NoOp(s.WithOpName("all").WithControlDependencies({update_a, update_b}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = 1};
  options.collect_step_stats = true;
  Session session(graph, options);
  ASSERT_TRUE(session.Run(init).ok());
  auto plan = session.impl().GetPlan({}, {}, {all});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(Groups(**plan).empty());
  StepStats stats;
  auto r = session.Run({}, {}, {all}, &stats);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool fused = false;
  for (const auto& t : stats.nodes) fused |= t.fused_producer != nullptr && t.fused_producer->name() == "product";
  EXPECT_TRUE(fused) << "the MatMul runs inside its BiasAdd's item";
}

TEST(UpdateGroupsTest, AMembersErrorNamesIt) {
  Updates u;
  Node* all = NoOp(Scope(u.graph).WithOpName("all").WithControlDependencies({u.a, u.b}));
  Session session(u.graph, {.num_fake_gpus = 1});
  // Before the initializer: b's variable is uninitialized (so is a's: the first
  // member's error is the one reported).
  auto r = session.Run({}, {}, {all});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(r.status().ToString(), HasSubstr("update_a"));
  ASSERT_TRUE(session.Run(u.init).ok());
  ASSERT_TRUE(session.Run({}, {}, {all}).ok());
}

}  // namespace
}  // namespace tw
