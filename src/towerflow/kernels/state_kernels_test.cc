// Variables end to end through a Session: assignment, uninitialized reads,
// variable scopes and reuse, shape checks.
#include <gtest/gtest.h>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

// An initializer giving the values `v` (the test picks them to match the shape).
Initializer Values(std::vector<float> v) {
  return [v](const Scope& s, const TensorShape& shape, DataType) {
    return Const(s, v, shape);
  };
}

std::vector<float> Fetch(Session& session, const Output& out) {
  auto r = session.Run({out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return (*r)[0].ToVector<float>();
}

TEST(StateKernels, AssignAddSubUpdateTheVariable) {
  Graph g;
  Scope root(g);
  Variable v = GetVariable(root, "v", TensorShape{3}, {.initializer = Values({1, 2, 3})});
  Output set = Assign(root, v, Const(root, {10.f, 20.f, 30.f}, TensorShape{3}));
  Output add = AssignAdd(root, v, Const(root, {1.f, 1.f, 2.f}, TensorShape{3}));
  Output sub = AssignSub(root, v, Const(root, {0.5f, 0.5f, 0.5f}, TensorShape{3}));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(v.name, "v");
  EXPECT_EQ(v.ref.node->name(), "v");
  EXPECT_EQ(v.value.node->name(), "v/read");
  EXPECT_EQ(v.initializer->name(), "v/Assign");

  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  EXPECT_EQ(Fetch(session, v.value), (std::vector<float>{1, 2, 3}));
  // Assign's output is the ref: fetching it reads the new value.
  EXPECT_EQ(Fetch(session, set), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(Fetch(session, v.value), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(Fetch(session, add), (std::vector<float>{11, 21, 32}));
  EXPECT_EQ(Fetch(session, add), (std::vector<float>{12, 22, 34}));
  EXPECT_EQ(Fetch(session, sub), (std::vector<float>{11.5f, 21.5f, 33.5f}));
}

// Before the variable is assigned its initial value, after it its value: a
// second variable initialized from the first gets the first's initial value
// when both initialize in one run, the first's current value when it is
// initialized later, and the initial value when the first never is.
TEST(StateKernels, InitializedValueIsTheValueOnceAssignedElseTheInitialValue) {
  Graph g;
  Scope root(g);
  Variable a = GetVariable(root, "a", TensorShape{2}, {.initializer = Values({1, 2})});
  Output a_or_initial = InitializedValue(root, a);
  Variable b = GetVariable(root, "b", TensorShape{2}, {.initializer = [&](const Scope& s, const TensorShape&, DataType) {
                             return Mul(s, a_or_initial, Const(s, 10.f));
                           }});
  Output set = Assign(root, a, Const(root, {5.f, 6.f}, TensorShape{2}));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(a_or_initial.shape().ToString(), "[2]");
  {
    Session session(g);
    EXPECT_EQ(Fetch(session, a_or_initial), (std::vector<float>{1, 2}));  // a is not initialized
    ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
    EXPECT_EQ(Fetch(session, b.value), (std::vector<float>{10, 20}));
    ASSERT_TRUE(session.Run({set}).ok());
    EXPECT_EQ(Fetch(session, a_or_initial), (std::vector<float>{5, 6}));
    ASSERT_TRUE(session.Run(b.initializer).ok());  // b initialized again, after a changed
    EXPECT_EQ(Fetch(session, b.value), (std::vector<float>{50, 60}));
  }
  {
    Session session(g);  // b alone: a is never initialized
    ASSERT_TRUE(session.Run(b.initializer).ok());
    EXPECT_EQ(Fetch(session, b.value), (std::vector<float>{10, 20}));
  }
}

TEST(StateKernels, UninitializedReadIsFailedPrecondition) {
  Graph g;
  Scope root(g);
  Variable w = GetVariable(root.WithVariableScope("layer"), "w", TensorShape{2},
                           {.initializer = Values({1, 2})});
  Output initialized = IsVariableInitialized(root, w.ref);
  Output bump = AssignAdd(root, w, Const(root, {1.f, 1.f}, TensorShape{2}));
  ASSERT_TRUE(root.ok()) << root.status().ToString();

  Session session(g);
  auto read = session.Run({w.value});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(read.status().message().find("Attempting to use uninitialized value layer/w"), std::string::npos)
      << read.status().message();
  // An in-place update of an uninitialized variable fails the same way.
  auto bumped = session.Run({bump});
  ASSERT_FALSE(bumped.ok());
  EXPECT_EQ(bumped.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(bumped.status().message().find("layer/w"), std::string::npos);

  auto before = session.Run({initialized});
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_FALSE((*before)[0].scalar<bool>());
  ASSERT_TRUE(session.Run(w.initializer).ok());
  auto after = session.Run({initialized});
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE((*after)[0].scalar<bool>());
  EXPECT_EQ(Fetch(session, w.value), (std::vector<float>{1, 2}));
}

TEST(StateKernels, VariableScopeCreatesOnceAndReuseShares) {
  Graph g;
  Scope root(g);
  Variable k1 = GetVariable(root.WithVariableScope("dense"), "kernel", TensorShape{2, 3},
                            {.initializer = Values({1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(k1.name, "dense/kernel");
  EXPECT_EQ(k1.ref.node->name(), "dense/kernel");

  // A second tower opens "dense" again with reuse: same variable, same node, even
  // though the name scope is now "tower_1/dense".
  Scope tower = root.NewSubScope("tower_1");
  Variable k2 = GetVariable(tower.WithVariableScope("dense", Reuse::kReuse), "kernel", TensorShape{2, 3});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(k2.ref.node, k1.ref.node);
  EXPECT_EQ(k2.value.node, k1.value.node);
  Variable k3 = GetVariable(root.WithVariableScope("dense").WithReuseVariables(), "kernel", TensorShape{2, 3});
  EXPECT_EQ(k3.ref.node, k1.ref.node);
  EXPECT_TRUE(root.ok());
  EXPECT_EQ(TrainableVariables(g).size(), 1u);
  EXPECT_EQ(GlobalVariables(g).size(), 1u);
  // WithoutReuse turns reuse off again: a new variable in the same scope.
  Variable b = GetVariable(root.WithVariableScope("dense").WithReuseVariables().WithoutReuse(), "bias",
                           TensorShape{3});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(b.name, "dense/bias");
  EXPECT_EQ(GlobalVariables(g).size(), 2u);
}

TEST(StateKernels, CreatingTwiceWithoutReuseIsAlreadyExists) {
  Graph g;
  Scope root(g);
  GetVariable(root.WithVariableScope("dense"), "kernel", TensorShape{2}, {.initializer = Values({1, 2})});
  ASSERT_TRUE(root.ok());
  Variable again = GetVariable(root.WithVariableScope("dense"), "kernel", TensorShape{2});
  EXPECT_FALSE(again.valid());
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kAlreadyExists);
  EXPECT_EQ(root.status().message(),
            "Variable dense/kernel already exists, disallowed. Did you mean to set reuse=True in VarScope?");
}

TEST(StateKernels, ReusingAMissingVariableIsNotFound) {
  Graph g;
  Scope root(g);
  Variable v = GetVariable(root.WithVariableScope("dense", Reuse::kReuse), "kernel", TensorShape{2});
  EXPECT_FALSE(v.valid());
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kNotFound);
  EXPECT_EQ(root.status().message(),
            "Variable dense/kernel does not exist, or was not created with GetVariable(). "
            "Did you mean to set reuse=None in VarScope?");
}

TEST(StateKernels, ReusingWithAnotherShapeNamesBothShapes) {
  Graph g;
  Scope root(g);
  GetVariable(root.WithVariableScope("dense"), "kernel", TensorShape{2, 4},
              {.initializer = Values(std::vector<float>(8, 1.f))});
  GetVariable(root.WithVariableScope("dense", Reuse::kReuse), "kernel", TensorShape{3, 4});
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(root.status().message(),
            "Trying to share variable dense/kernel, but specified shape [3,4] and found shape [2,4].");
}

TEST(StateKernels, AssignOfAnotherShapeIsInvalidArgument) {
  Graph g;
  Scope root(g);
  Variable v = GetVariable(root, "v", TensorShape{2}, {.initializer = Values({1, 2})});
  // Known at graph time: the builder fails.
  Assign(root, v, Const(root, {1.f, 2.f, 3.f}, TensorShape{3}));
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("[3]"), std::string::npos) << root.status().message();
  EXPECT_NE(root.status().message().find("[2]"), std::string::npos) << root.status().message();

  // Known only at run time: the kernel fails, naming the variable and both shapes.
  Graph g2;
  Scope s(g2);
  Variable w = GetVariable(s, "w", TensorShape{2}, {.initializer = Values({1, 2})});
  Output feed = Placeholder(s, kFloat32);
  Output set = Assign(s, w, feed);
  Output reshape = Assign(s, w, feed, {.validate_shape = false});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(g2);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g2)).ok());
  auto r = session.Run({{feed, Tensor::Vec<float>({1, 2, 3})}}, {set});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("variable w has shape [2] but the value has shape [3]"),
            std::string::npos)
      << r.status().message();
  // validate_shape = false lets the variable take the new shape.
  auto ok = session.Run({{feed, Tensor::Vec<float>({7, 8, 9})}}, {reshape});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0].shape(), (TensorShape{3}));
  EXPECT_EQ(Fetch(session, w.value), (std::vector<float>{7, 8, 9}));
}

TEST(StateKernels, AssignDoesNotAliasTheAssignedValue) {
  Graph g;
  Scope root(g);
  Variable v = GetVariable(root, "v", TensorShape{2}, {.initializer = Values({1, 2})});
  Output bump = AssignAdd(root, v, Const(root, {5.f, 5.f}, TensorShape{2}));
  ASSERT_TRUE(root.ok());
  Session session(g);
  ASSERT_TRUE(session.Run(v.initializer).ok());
  ASSERT_TRUE(session.Run({bump}).ok());
  // Re-initializing must start from the constant again: AssignAdd changed the
  // variable's own buffer, not the Const's.
  ASSERT_TRUE(session.Run(v.initializer).ok());
  EXPECT_EQ(Fetch(session, v.value), (std::vector<float>{1, 2}));
}

TEST(StateKernels, NonTrainableAndLocalCollections) {
  Graph g;
  Scope root(g);
  Variable a = GetVariable(root, "a", TensorShape{1}, {.initializer = Values({1}), .trainable = false});
  Variable b = GetVariable(root, "b", TensorShape{1},
                           {.initializer = Values({2}), .trainable = false,
                            .collections = {collections::kLocalVariables}});
  Variable c = GetVariable(root, "c", TensorShape{1}, {.initializer = Values({3})});
  ASSERT_TRUE(root.ok());
  ASSERT_EQ(GlobalVariables(g).size(), 2u);
  EXPECT_EQ(GlobalVariables(g)[0].name, "a");
  EXPECT_EQ(GlobalVariables(g)[1].name, "c");
  ASSERT_EQ(TrainableVariables(g).size(), 1u);
  EXPECT_EQ(TrainableVariables(g)[0].name, "c");

  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  EXPECT_EQ(Fetch(session, c.value), (std::vector<float>{3}));
  auto local = session.Run({b.value});
  EXPECT_EQ(local.status().code(), Code::kFailedPrecondition);
  ASSERT_TRUE(session.Run(LocalVariablesInitializer(g)).ok());
  EXPECT_EQ(Fetch(session, b.value), (std::vector<float>{2}));
  EXPECT_EQ(Fetch(session, a.value), (std::vector<float>{1}));
}

TEST(StateKernels, SessionsHaveSeparateStorage) {
  Graph g;
  Scope root(g);
  Variable v = GetVariable(root, "v", TensorShape{1}, {.initializer = Values({1})});
  Output bump = AssignAdd(root, v, Const(root, {1.f}, TensorShape{1}));
  ASSERT_TRUE(root.ok());
  Session s1(g), s2(g);
  ASSERT_TRUE(s1.Run(GlobalVariablesInitializer(g)).ok());
  ASSERT_TRUE(s2.Run(GlobalVariablesInitializer(g)).ok());
  ASSERT_TRUE(s1.Run({bump}).ok());
  EXPECT_EQ(Fetch(s1, v.value), (std::vector<float>{2}));
  EXPECT_EQ(Fetch(s2, v.value), (std::vector<float>{1}));
}

}  // namespace
}  // namespace tw
