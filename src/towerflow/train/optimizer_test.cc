// Optimizers end to end: convergence on (w - 3)^2, hand-computed first steps,
// slots (named as TF names them) and global step, seeded initializers, and
// errors.
#include "towerflow/train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/train/adagrad.h"
#include "towerflow/train/adam.h"
#include "towerflow/train/gradient_descent.h"
#include "towerflow/train/momentum.h"
#include "towerflow/train/rmsprop.h"

namespace tw::train {
namespace {

float ReadScalar(Session& session, const Output& out) {
  auto r = session.Run({out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0].scalar<float>() : NAN;
}

struct Quadratic {
  Graph graph;
  Variable w;
  Output loss;
  Node* train = nullptr;
  Variable step;
};

// loss = (w - 3)^2 from w = 0, minimized by `opt` with a global step.
std::unique_ptr<Quadratic> BuildQuadratic(Optimizer& opt) {
  auto q = std::make_unique<Quadratic>();
  Scope root(q->graph);
  q->w = GetVariable(root, "w", TensorShape{}, {.initializer = ZerosInitializer()});
  q->loss = Square(root, Sub(root, q->w.value, Const(root, 3.0f)));
  q->step = GetOrCreateGlobalStep(root);
  q->train = opt.Minimize(root, q->loss, &q->step);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  return q;
}

// Runs `steps` training steps; returns w after the first two and at the end.
std::vector<float> Train(Quadratic& q, int steps) {
  Session session(q.graph, {.inter_op_threads = 1});
  EXPECT_TRUE(session.Run(GlobalVariablesInitializer(q.graph)).ok());
  std::vector<float> out;
  for (int i = 0; i < steps; ++i) {
    EXPECT_TRUE(session.Run(q.train).ok());
    if (i < 2) out.push_back(ReadScalar(session, q.w.value));
  }
  out.push_back(ReadScalar(session, q.w.value));
  auto gs = session.Run({q.step.value});
  EXPECT_TRUE(gs.ok());
  EXPECT_EQ((*gs)[0].scalar<int64_t>(), steps);
  return out;
}

TEST(Optimizer, GradientDescentConverges) {
  GradientDescent opt({.learning_rate = 0.1});
  auto q = BuildQuadratic(opt);
  std::vector<float> w = Train(*q, 100);
  // dL/dw = 2 (w - 3): w1 = 0 + 0.1 * 6 = 0.6; w2 = 0.6 + 0.1 * 4.8 = 1.08.
  EXPECT_FLOAT_EQ(w[0], 0.6f);
  EXPECT_FLOAT_EQ(w[1], 1.08f);
  EXPECT_NEAR(w[2], 3.0f, 1e-4);
}

TEST(Optimizer, MomentumConverges) {
  Momentum opt({.learning_rate = 0.05, .momentum = 0.9});
  auto q = BuildQuadratic(opt);
  std::vector<float> w = Train(*q, 300);
  // accum = -6, w1 = 0.3; g = -5.4, accum = -10.8, w2 = 0.3 + 0.54 = 0.84.
  EXPECT_FLOAT_EQ(w[0], 0.3f);
  EXPECT_FLOAT_EQ(w[1], 0.84f);
  EXPECT_NEAR(w[2], 3.0f, 1e-3);
  const Variable* slot = opt.GetSlot(q->graph, q->w, "momentum");
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->name, "w/Momentum");
  EXPECT_EQ(TrainableVariables(q->graph).size(), 1u);  // slots are not trainable
}

// A learning rate computed in the graph: 0.1 / (1 + global_step), read before
// the step's update (the increment waits for the updates).
TEST(Optimizer, ALearningRateTensorOfTheGlobalStepIsReadEachStep) {
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kind);
    auto q = std::make_unique<Quadratic>();
    Scope root(q->graph);
    q->w = GetVariable(root, "w", TensorShape{}, {.initializer = ZerosInitializer()});
    q->loss = Square(root, Sub(root, q->w.value, Const(root, 3.0f)));
    q->step = GetOrCreateGlobalStep(root);
    Output lr = Div(root, Const(root, 0.1f), Add(root, Const(root, 1.0f), Cast(root, q->step.value, kFloat32)));
    std::unique_ptr<Optimizer> opt;
    if (kind == 0) opt = std::make_unique<GradientDescent>(GradientDescentOptions{.learning_rate_tensor = lr});
    if (kind == 1) opt = std::make_unique<Momentum>(MomentumOptions{.momentum = 0.0, .learning_rate_tensor = lr});
    if (kind == 2) opt = std::make_unique<Adam>(AdamOptions{.learning_rate_tensor = lr});
    q->train = opt->Minimize(root, q->loss, &q->step);
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    std::vector<float> w = Train(*q, 2);
    if (kind < 2) {
      // w1 = 0 + 0.1 * 6 = 0.6; w2 = 0.6 + 0.05 * 4.8 = 0.84 (the rate of step 1).
      EXPECT_FLOAT_EQ(w[0], 0.6f);
      EXPECT_FLOAT_EQ(w[1], 0.84f);
    } else {
      // Adam's first step moves by about lr: 0.1, then about 0.05.
      EXPECT_NEAR(w[0], 0.1f, 1e-4);
      EXPECT_NEAR(w[1], 0.15f, 2e-3);
    }
  }
}

TEST(Optimizer, NesterovMomentumConverges) {
  Momentum opt({.learning_rate = 0.05, .momentum = 0.9, .use_nesterov = true});
  auto q = BuildQuadratic(opt);
  std::vector<float> w = Train(*q, 300);
  // w1 = 0 + 0.05 * 6 + 0.05 * 0.9 * 6 = 0.57.
  EXPECT_FLOAT_EQ(w[0], 0.57f);
  EXPECT_NEAR(w[2], 3.0f, 1e-3);
}

TEST(Optimizer, AdamConvergesWithBiasCorrection) {
  Adam opt({.learning_rate = 0.1});
  auto q = BuildQuadratic(opt);
  Session session(q->graph);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(q->graph)).ok());
  ASSERT_TRUE(session.Run(q->train).ok());
  // The first bias-corrected step moves by lr in the gradient's sign: m/sqrt(v) = 1.
  EXPECT_NEAR(ReadScalar(session, q->w.value), 0.1f, 1e-6);
  const Variable* b1p = opt.GetNonSlotVariable(q->graph, "beta1_power");
  ASSERT_NE(b1p, nullptr);
  EXPECT_EQ(b1p->name, "beta1_power");
  // beta1_power = beta1^(t+1) after t steps: updated once, after the variables.
  EXPECT_FLOAT_EQ(ReadScalar(session, b1p->value), 0.81f);
  ASSERT_TRUE(session.Run(q->train).ok());
  // Step 1 left m = 0.1 * -6 = -0.6, v = 0.001 * 36 = 0.036. Step 2, g = 2 (0.1 - 3) = -5.8:
  // m = 0.9 * -0.6 + 0.1 * -5.8 = -1.12; v = 0.999 * 0.036 + 0.001 * 33.64 = 0.069604;
  // lr_t = 0.1 * sqrt(1 - 0.998001) / 0.19 = 0.02353167; w += 0.02353167 * 1.12 / 0.2638257.
  EXPECT_NEAR(ReadScalar(session, q->w.value), 0.1f + 0.0998973f, 1e-5);
  EXPECT_FLOAT_EQ(ReadScalar(session, b1p->value), 0.729f);
  for (int i = 0; i < 498; ++i) ASSERT_TRUE(session.Run(q->train).ok());
  EXPECT_NEAR(ReadScalar(session, q->w.value), 3.0f, 1e-2);
  const Variable* m = opt.GetSlot(q->graph, q->w, "m");
  const Variable* v = opt.GetSlot(q->graph, q->w, "v");
  ASSERT_TRUE(m && v);
  EXPECT_EQ(m->name, "w/Adam");
  EXPECT_EQ(v->name, "w/Adam_1");
  auto gs = session.Run({q->step.value});
  ASSERT_TRUE(gs.ok());
  EXPECT_EQ((*gs)[0].scalar<int64_t>(), 500);
}

TEST(Optimizer, RMSPropConvergesWithTensorFlowsSlots) {
  RMSProp opt({.learning_rate = 0.01});
  auto q = BuildQuadratic(opt);
  Session session(q->graph);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(q->graph)).ok());
  const Variable* rms = opt.GetSlot(q->graph, q->w, "rms");
  const Variable* mom = opt.GetSlot(q->graph, q->w, "momentum");
  ASSERT_TRUE(rms && mom);
  EXPECT_EQ(rms->name, "w/RMSProp");
  EXPECT_EQ(mom->name, "w/RMSProp_1");
  EXPECT_EQ(opt.GetSlot(q->graph, q->w, "mg"), nullptr);  // not centered
  EXPECT_FLOAT_EQ(ReadScalar(session, rms->value), 1.0f);  // TF's start
  ASSERT_TRUE(session.Run(q->train).ok());
  // g = -6: ms = 1 + (36 - 1) * 0.1 = 4.5; w += 0.01 * 6 / sqrt(4.5).
  EXPECT_FLOAT_EQ(ReadScalar(session, q->w.value), 0.028284271f);
  EXPECT_FLOAT_EQ(ReadScalar(session, rms->value), 4.5f);
  for (int i = 0; i < 499; ++i) ASSERT_TRUE(session.Run(q->train).ok());
  EXPECT_NEAR(ReadScalar(session, q->w.value), 3.0f, 0.02);
}

TEST(Optimizer, CenteredRMSPropConvergesWithTensorFlowsSlots) {
  RMSProp opt({.learning_rate = 0.01, .momentum = 0.5, .centered = true});
  auto q = BuildQuadratic(opt);
  std::vector<float> w = Train(*q, 500);
  // g = -6: ms = 4.5, mg = -0.6; w += 0.01 * 6 / sqrt(4.5 - 0.36).
  EXPECT_FLOAT_EQ(w[0], 0.029488391f);
  EXPECT_NEAR(w[2], 3.0f, 0.02);
  const Variable* mg = opt.GetSlot(q->graph, q->w, "mg");
  const Variable* mom = opt.GetSlot(q->graph, q->w, "momentum");
  ASSERT_TRUE(mg && mom);
  EXPECT_EQ(mg->name, "w/RMSProp_1");
  EXPECT_EQ(mom->name, "w/RMSProp_2");
}

TEST(Optimizer, AdagradConvergesWithTensorFlowsSlot) {
  Adagrad opt({.learning_rate = 1.0});
  auto q = BuildQuadratic(opt);
  Session session(q->graph);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(q->graph)).ok());
  const Variable* accum = opt.GetSlot(q->graph, q->w, "accumulator");
  ASSERT_NE(accum, nullptr);
  EXPECT_EQ(accum->name, "w/Adagrad");
  EXPECT_FLOAT_EQ(ReadScalar(session, accum->value), 0.1f);
  ASSERT_TRUE(session.Run(q->train).ok());
  // accum = 0.1 + 36; w += 6 / sqrt(36.1).
  EXPECT_FLOAT_EQ(ReadScalar(session, q->w.value), 0.99861400f);
  for (int i = 0; i < 499; ++i) ASSERT_TRUE(session.Run(q->train).ok());
  EXPECT_NEAR(ReadScalar(session, q->w.value), 3.0f, 1e-3);
}

TEST(Optimizer, AdagradRefusesANonPositiveAccumulator) {
  for (double initial : {0.0, -1.0, std::nan("")}) {
    Graph g;
    Scope root(g);
    Variable w = GetVariable(root, "w", TensorShape{}, {.initializer = ZerosInitializer()});
    Adagrad opt({.initial_accumulator_value = initial});
    EXPECT_EQ(opt.Minimize(root, Square(root, w.value)), nullptr);
    ASSERT_FALSE(root.ok());
    EXPECT_NE(root.status().message().find("initial_accumulator_value must be positive"), std::string::npos)
        << root.status().ToString();
  }
}

TEST(Optimizer, SecondMinimizeReusesSlots) {
  Graph g;
  Scope root(g);
  Variable w = GetVariable(root, "w", TensorShape{}, {.initializer = ZerosInitializer()});
  Momentum opt({.learning_rate = 0.1});
  opt.Minimize(root.NewSubScope("tower_0"), Square(root, w.value));
  opt.Minimize(root.NewSubScope("tower_1"), Square(root, w.value));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(GlobalVariables(g).size(), 2u);  // w and one w/Momentum
  // Another optimizer object gets its own slot.
  Momentum other({.learning_rate = 0.1});
  other.Minimize(root, Square(root, w.value));
  ASSERT_TRUE(root.ok());
  ASSERT_NE(other.GetSlot(g, w, "momentum"), nullptr);
  EXPECT_EQ(other.GetSlot(g, w, "momentum")->name, "w/Momentum_1");
}

TEST(Optimizer, VariablesWithoutGradientsAreSkipped) {
  Graph g;
  Scope root(g);
  Variable w = GetVariable(root, "w", TensorShape{}, {.initializer = ConstantInitializer(1)});
  Variable u = GetVariable(root, "u", TensorShape{}, {.initializer = ConstantInitializer(5)});
  GradientDescent opt({.learning_rate = 0.5});
  auto grads = opt.ComputeGradients(root, Square(root, w.value));
  ASSERT_TRUE(grads.ok()) << grads.status().ToString();
  ASSERT_EQ(grads->size(), 2u);
  EXPECT_TRUE((*grads)[0].first.valid());
  EXPECT_FALSE((*grads)[1].first.valid());  // u does not reach the loss
  Node* train = opt.ApplyGradients(root, *grads);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  ASSERT_TRUE(session.Run(train).ok());
  EXPECT_FLOAT_EQ(ReadScalar(session, w.value), 0.0f);  // 1 - 0.5 * 2
  EXPECT_FLOAT_EQ(ReadScalar(session, u.value), 5.0f);
}

TEST(Optimizer, NoGradientsAtAllIsInvalidArgument) {
  Graph g;
  Scope root(g);
  Variable w = GetVariable(root, "w", TensorShape{}, {.initializer = ConstantInitializer(1)});
  Variable u = GetVariable(root, "u", TensorShape{}, {.initializer = ConstantInitializer(5)});
  GradientDescent opt;
  Node* train = opt.Minimize(root, Square(root, w.value), nullptr, {u});
  EXPECT_EQ(train, nullptr);
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("No gradients provided for any variable"), std::string::npos);
  EXPECT_NE(root.status().message().find("[u]"), std::string::npos) << root.status().message();
}

TEST(Optimizer, L2Regularization) {
  Graph g;
  Scope root(g);
  Variable a = GetVariable(root, "a", TensorShape{2}, {.initializer = ConstantInitializer(2)});
  Variable b = GetVariable(root, "b", TensorShape{}, {.initializer = ConstantInitializer(-1)});
  Output reg = L2Regularization(root, {a, b}, 0.5);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  // 0.5 * ((4 + 4) / 2 + 1 / 2) = 2.25.
  EXPECT_FLOAT_EQ(ReadScalar(session, reg), 2.25f);
}

// Two variables from random initializers, in a graph with graph seed `seed`.
std::vector<std::vector<float>> SeededInit(int64_t seed, bool set_graph_seed = true) {
  Graph g;
  if (set_graph_seed) g.set_seed(seed);
  Scope root(g);
  Variable k = GetVariable(root.WithVariableScope("dense"), "kernel", TensorShape{4, 3});  // Glorot by default
  Variable n = GetVariable(root, "n", TensorShape{6}, {.initializer = TruncatedNormalInitializer(1, 0.5)});
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  EXPECT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  auto r = session.Run({k.value, n.value});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return {(*r)[0].ToVector<float>(), (*r)[1].ToVector<float>()};
}

TEST(Optimizer, SeededInitializersReproduceAcrossGraphs) {
  auto first = SeededInit(42);
  auto second = SeededInit(42);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, SeededInit(43));
  // Without any seed the draws differ (12 floats colliding has probability ~0).
  EXPECT_NE(SeededInit(0, false)[0], SeededInit(0, false)[0]);
  // Glorot for [4, 3]: limit sqrt(6 / 7).
  const float limit = std::sqrt(6.0f / 7.0f);
  for (float x : first[0]) {
    EXPECT_LE(std::abs(x), limit);
  }
  // Truncated normal, mean 1, stddev 0.5: within 2 stddev of the mean.
  for (float x : first[1]) {
    EXPECT_GE(x, 0.0f);
    EXPECT_LE(x, 2.0f);
  }
}

}  // namespace
}  // namespace tw::train
