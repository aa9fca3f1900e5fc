// The training update kernels against hand-computed values (or TensorFlow's
// kernels' own) over two steps, the vectorised momentum update against its
// scalar formula, and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "towerflow/core/denormal.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/kernels/internal/momentum_update.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

Initializer Values(std::vector<double> v) {
  return [v](const Scope& s, const TensorShape& shape, DataType) { return Const(s, Tensor::Vec<double>(v)); };
}

Variable Var(const Scope& s, const std::string& name, std::vector<double> v) {
  return GetVariable(s, name, TensorShape{static_cast<int64_t>(v.size())},
                     {.dtype = kFloat64, .initializer = Values(v)});
}

// Runs `op` feeding `grad` with `g` (plus extra feeds) and returns the variable.
std::vector<double> Step(Session& session, const Output& op, const Output& grad, std::vector<double> g,
                         FeedList extra = {}) {
  extra.push_back({grad, Tensor::Vec<double>(g)});
  auto r = session.Run(extra, {op});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return (*r)[0].ToVector<double>();
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(TrainingKernels, GradientDescent) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "var", {1, 2});
  Output grad = Placeholder(root, kFloat64, PartialShape{2});
  Output step = ApplyGradientDescent(root, var.ref, ScalarLike(root, 0.5, kFloat64), grad);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  // var -= 0.5 * delta: [1, 2] - 0.5 * [1, -2] = [0.5, 3]; then - 0.5 * [2, 2].
  ExpectNear(Step(session, step, grad, {1, -2}), {0.5, 3});
  ExpectNear(Step(session, step, grad, {2, 2}), {-0.5, 2});
}

TEST(TrainingKernels, GradientDescentFloat) {
  Graph g;
  Scope root(g);
  Variable var = GetVariable(root, "var", TensorShape{3}, {.initializer = [](const Scope& s, const TensorShape& shape, DataType) {
    return Const(s, {1.f, 2.f, 3.f}, shape);
  }});
  Output step = ApplyGradientDescent(root, var.ref, Const(root, 0.25f), Const(root, {4.f, -4.f, 8.f}, TensorShape{3}));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  auto r = session.Run({step});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{0, 3, 1}));
  r = session.Run({step});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{-1, 4, -1}));
}

void CheckMomentum(bool nesterov, const std::vector<double>& after1, const std::vector<double>& after2) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "var", {1, 2});
  Variable accum = Var(root, "accum", {0, 0});
  Output grad = Placeholder(root, kFloat64, PartialShape{2});
  Output step = ApplyMomentum(root, var.ref, accum.ref, ScalarLike(root, 0.1, kFloat64), grad,
                              ScalarLike(root, 0.9, kFloat64), nesterov);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  ExpectNear(Step(session, step, grad, {1, -1}), after1);
  ExpectNear(Step(session, step, grad, {1, 2}), after2);
  auto a = session.Run({accum.value});
  ASSERT_TRUE(a.ok());
  // accum = 0.9 * [1, -1] + [1, 2].
  ExpectNear((*a)[0].ToVector<double>(), {1.9, 1.1});
}

TEST(TrainingKernels, Momentum) {
  // accum = [1, -1]; var -= 0.1 * accum -> [0.9, 2.1].
  // accum = [1.9, 1.1]; var -= 0.1 * accum -> [0.71, 1.99].
  CheckMomentum(false, {0.9, 2.1}, {0.71, 1.99});
}

TEST(TrainingKernels, MomentumNesterov) {
  // var -= 0.1 * g + 0.9 * 0.1 * accum: [1, 2] - [0.19, -0.19] = [0.81, 2.19];
  // then - [0.1 + 0.171, 0.2 + 0.099] = [0.539, 1.891].
  CheckMomentum(true, {0.81, 2.19}, {0.539, 1.891});
}

// The update's loop runs on the host's widest vectors (cpu_clones.h): over
// lengths that leave every remainder, each element equals TF's formula written
// out here as scalar code, bit for bit (no fused multiply-add, same order).
TEST(TrainingKernels, MomentumOnVectorsEqualsTheScalarFormulaBitForBit) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float lr = 0.0137f, momentum = 0.9f;
  for (bool nesterov : {false, true}) {
    for (int64_t n : {1, 7, 16, 33, 1000, 4099}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << (nesterov ? " nesterov" : ""));
      std::vector<float> v(static_cast<size_t>(n)), a(v.size()), g(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        v[i] = uniform(rng);
        a[i] = uniform(rng);
        g[i] = uniform(rng);
      }
      Graph graph;
      Scope root(graph);
      auto init = [](std::vector<float> x) {
        return [x](const Scope& s, const TensorShape& shape, DataType) { return Const(s, Tensor::FromVector<float>(x, shape)); };
      };
      Variable var = GetVariable(root, "var", TensorShape{n}, {.initializer = init(v)});
      Variable accum = GetVariable(root, "accum", TensorShape{n}, {.initializer = init(a)});
      Output step = ApplyMomentum(root, var.ref, accum.ref, Const(root, lr), Const(root, Tensor::FromVector<float>(g, {n})),
                                  Const(root, momentum), nesterov);
      ASSERT_TRUE(root.ok()) << root.status().ToString();
      Session session(graph);
      ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
      auto r = session.Run({step, accum.value});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (size_t i = 0; i < v.size(); ++i) {
        const float acc = a[i] * momentum + g[i];
        a[i] = acc;
        if (nesterov) {
          const float delta = g[i] * lr + acc * momentum * lr;
          v[i] -= delta;
        } else {
          const float delta = acc * lr;
          v[i] -= delta;
        }
      }
      EXPECT_EQ((*r)[0].ToVector<float>(), v);
      EXPECT_EQ((*r)[1].ToVector<float>(), a);
    }
  }
}

// The divided form (the towers' mean fused into the update) against the
// formula with g / divisor written out as scalar code, bit for bit: a
// power-of-two divisor multiplies by its reciprocal, others divide; gradients
// from tiny to huge, under the engine's flush-to-zero mode.
template <typename T>
void ExpectDividedUpdateIsExact() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<T> mantissa(T(-1), T(1));
  std::uniform_int_distribution<int> exponent(-140, 100);
  const T lr = T(0.0137), momentum = T(0.9);
  ScopedFlushDenormal flush;
  for (T divisor : {T(2), T(4), T(0.5), T(-8), T(3), T(10)}) {
    for (bool nesterov : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "divisor " << divisor << (nesterov ? " nesterov" : ""));
      const size_t n = 1027;
      std::vector<T> v(n), a(n), g(n);
      for (size_t i = 0; i < n; ++i) {
        v[i] = mantissa(rng);
        a[i] = mantissa(rng);
        g[i] = std::ldexp(mantissa(rng), exponent(rng));
      }
      std::vector<T> want_v = v, want_a = a;
      const volatile T d = divisor;
      for (size_t i = 0; i < n; ++i) {
        const T gi = g[i] / d;
        const T acc = want_a[i] * momentum + gi;
        want_a[i] = acc;
        if (nesterov) {
          const T delta = gi * lr + acc * momentum * lr;
          want_v[i] -= delta;
        } else {
          const T delta = acc * lr;
          want_v[i] -= delta;
        }
      }
      momentum_update::ApplyDivided(v.data(), a.data(), g.data(), static_cast<int64_t>(n), lr, momentum, nesterov,
                                    divisor);
      EXPECT_EQ(v, want_v);
      EXPECT_EQ(a, want_a);
    }
  }
}

TEST(TrainingKernels, DividedMomentumUpdateEqualsTheScalarFormulaBitForBit) {
  ExpectDividedUpdateIsExact<float>();
  ExpectDividedUpdateIsExact<double>();
}

TEST(TrainingKernels, AdamWithBiasCorrection) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "var", {1, -1});
  Variable m = Var(root, "m", {0, 0});
  Variable v = Var(root, "v", {0, 0});
  Output b1p = Placeholder(root, kFloat64, PartialShape(TensorShape{}));
  Output b2p = Placeholder(root, kFloat64, PartialShape(TensorShape{}));
  Output grad = Placeholder(root, kFloat64, PartialShape{2});
  Output step = ApplyAdam(root, var.ref, m.ref, v.ref, b1p, b2p, ScalarLike(root, 0.1, kFloat64),
                          ScalarLike(root, 0.9, kFloat64), ScalarLike(root, 0.999, kFloat64),
                          ScalarLike(root, 1e-8, kFloat64), grad);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  // Step 1, g = [0.5, -2]: m = [0.05, -0.2], v = [0.00025, 0.004],
  // lr_t = 0.1 * sqrt(0.001) / 0.1 = 0.0316227766; m / sqrt(v) = [+-3.16227766], so
  // each element moves by lr_t * 3.16227766 = 0.1 (less a hair for epsilon).
  ExpectNear(Step(session, step, grad, {0.5, -2}, {{b1p, Tensor::Scalar(0.9)}, {b2p, Tensor::Scalar(0.999)}}),
             {0.9000000632455132, -0.9000000158113858}, 1e-12);
  // Step 2, g = [0.5, 1]: m = [0.095, -0.08], v = [0.00049975, 0.004996],
  // lr_t = 0.1 * sqrt(1 - 0.998001) / (1 - 0.81) = 0.0235316725;
  // var -= lr_t * m / (sqrt(v) + 1e-8) = [0.1000000447, -0.0266336998].
  ExpectNear(Step(session, step, grad, {0.5, 1}, {{b1p, Tensor::Scalar(0.81)}, {b2p, Tensor::Scalar(0.998001)}}),
             {0.800000107978038, -0.8733663156134273}, 1e-12);
  auto slots = session.Run({m.value, v.value});
  ASSERT_TRUE(slots.ok());
  ExpectNear((*slots)[0].ToVector<double>(), {0.095, -0.08});
  ExpectNear((*slots)[1].ToVector<double>(), {0.00049975, 0.004996});
}

// The adaptive updates over two steps, against TensorFlow 2.20's own kernels
// (tf.raw_ops.ResourceApplyRMSProp, ...CenteredRMSProp, ...Adagrad) on the same
// float64 values: var [1, 2], grads [0.5, -2] then [1, 1], lr 0.1, rho 0.9,
// momentum 0.5, epsilon 1e-10; ms from ones, mg and mom from zeros, Adagrad's
// accumulator from 0.1.
TEST(TrainingKernels, RMSPropMatchesTensorFlow) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "var", {1, 2});
  Variable ms = Var(root, "ms", {1, 1});
  Variable mom = Var(root, "mom", {0, 0});
  Output grad = Placeholder(root, kFloat64, PartialShape{2});
  auto c = [&](double v) { return ScalarLike(root, v, kFloat64); };
  Output step = ApplyRMSProp(root, var.ref, ms.ref, mom.ref, c(0.1), c(0.9), c(0.5), c(1e-10), grad);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  ExpectNear(Step(session, step, grad, {0.5, -2}), {0.9480124755118065, 2.175411603854659}, 1e-15);
  ExpectNear(Step(session, step, grad, {1, 1}), {0.8184626386575627, 2.174381754843871}, 1e-15);
  auto slots = session.Run({ms.value, mom.value});
  ASSERT_TRUE(slots.ok());
  ExpectNear((*slots)[0].ToVector<double>(), {0.9325, 1.2699999999999998}, 1e-15);
  ExpectNear((*slots)[1].ToVector<double>(), {0.1295498368542437, 0.00102984901078823}, 1e-15);
}

TEST(TrainingKernels, CenteredRMSPropMatchesTensorFlow) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "var", {1, 2});
  Variable mg = Var(root, "mg", {0, 0});
  Variable ms = Var(root, "ms", {1, 1});
  Variable mom = Var(root, "mom", {0, 0});
  Output grad = Placeholder(root, kFloat64, PartialShape{2});
  auto c = [&](double v) { return ScalarLike(root, v, kFloat64); };
  Output step = ApplyCenteredRMSProp(root, var.ref, mg.ref, ms.ref, mom.ref, c(0.1), c(0.9), c(0.5), c(1e-10), grad);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  ExpectNear(Step(session, step, grad, {0.5, -2}), {0.9479420793732862, 2.1781741612678793}, 1e-15);
  ExpectNear(Step(session, step, grad, {1, 1}), {0.8171694894040636, 2.1783011564580685}, 1e-15);
  auto slots = session.Run({mg.value, ms.value, mom.value});
  ASSERT_TRUE(slots.ok());
  ExpectNear((*slots)[0].ToVector<double>(), {0.14499999999999996, -0.07999999999999999}, 1e-15);
  ExpectNear((*slots)[1].ToVector<double>(), {0.9325, 1.2699999999999998}, 1e-15);
  ExpectNear((*slots)[2].ToVector<double>(), {1.307725899692226e-01, -1.269951901890637e-04}, 1e-15);
}

TEST(TrainingKernels, AdagradMatchesTensorFlow) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "var", {1, 2});
  Variable accum = Var(root, "accum", {0.1, 0.1});
  Output grad = Placeholder(root, kFloat64, PartialShape{2});
  Output step = ApplyAdagrad(root, var.ref, accum.ref, ScalarLike(root, 0.1, kFloat64), grad);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  ExpectNear(Step(session, step, grad, {0.5, -2}), {0.9154845745271484, 2.098772959664959}, 1e-15);
  ExpectNear(Step(session, step, grad, {1, 1}), {0.8294182779447613, 2.0544922153879543}, 1e-15);
  auto a = session.Run({accum.value});
  ASSERT_TRUE(a.ok());
  ExpectNear((*a)[0].ToVector<double>(), {1.35, 5.1}, 1e-15);
}

// update_slots = false: the accumulator is read, never written.
TEST(TrainingKernels, AdagradWithoutSlotUpdatesKeepsTheAccumulator) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "var", {1, 2});
  Variable accum = Var(root, "accum", {4, 16});
  Output grad = Placeholder(root, kFloat64, PartialShape{2});
  Output step = ApplyAdagrad(root, var.ref, accum.ref, ScalarLike(root, 0.5, kFloat64), grad, /*update_slots=*/false);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  // var -= 0.5 * g / sqrt(accum): [1 - 0.5 * 2 / 2, 2 - 0.5 * 8 / 4].
  ExpectNear(Step(session, step, grad, {2, 8}), {0.5, 1});
  auto a = session.Run({accum.value});
  ASSERT_TRUE(a.ok());
  ExpectNear((*a)[0].ToVector<double>(), {4, 16});
}

// The schemas' shape checks at graph construction: a slot of another shape,
// a hyper-parameter that is not a scalar.
TEST(TrainingKernels, AdaptiveUpdatesCheckShapesWhenBuilt) {
  {
    Graph g;
    Scope root(g);
    Variable var = Var(root, "var", {1, 2});
    Variable ms = Var(root, "ms", {1, 1, 1});
    Variable mom = Var(root, "mom", {0, 0});
    auto c = [&](double v) { return ScalarLike(root, v, kFloat64); };
    ApplyRMSProp(root, var.ref, ms.ref, mom.ref, c(0.1), c(0.9), c(0), c(1e-10), Const(root, Tensor::Vec<double>({1, 1})));
    ASSERT_FALSE(root.ok());
    EXPECT_NE(root.status().message().find("input 1 has shape [3]"), std::string::npos) << root.status().ToString();
  }
  {
    Graph g;
    Scope root(g);
    Variable var = Var(root, "var", {1, 2});
    Variable accum = Var(root, "accum", {1, 1});
    ApplyAdagrad(root, var.ref, accum.ref, Const(root, Tensor::Vec<double>({0.1, 0.1})),
                 Const(root, Tensor::Vec<double>({1, 1})));
    ASSERT_FALSE(root.ok());
    EXPECT_NE(root.status().message().find("input 2 must be a scalar"), std::string::npos) << root.status().ToString();
  }
}

TEST(TrainingKernels, GradientOfAnotherShapeIsInvalidArgument) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "dense/kernel", {1, 2});
  Output grad = Placeholder(root, kFloat64);
  Output step = ApplyGradientDescent(root, var.ref, ScalarLike(root, 0.5, kFloat64), grad);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  auto r = session.Run({{grad, Tensor::Vec<double>({1, 2, 3})}}, {step});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("variable dense/kernel has shape [2]"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("[3]"), std::string::npos) << r.status().message();

  // Known at graph time, the builder itself fails.
  ApplyGradientDescent(root, var.ref, ScalarLike(root, 0.5, kFloat64), Const(root, Tensor::Vec<double>({1})));
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
}

TEST(TrainingKernels, UninitializedSlotIsFailedPrecondition) {
  Graph g;
  Scope root(g);
  Variable var = Var(root, "w", {1, 2});
  Variable accum = Var(root, "w/Momentum", {0, 0});
  Output step = ApplyMomentum(root, var.ref, accum.ref, ScalarLike(root, 0.1, kFloat64),
                              Const(root, Tensor::Vec<double>({1, 1})), ScalarLike(root, 0.9, kFloat64));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g);
  ASSERT_TRUE(session.Run(var.initializer).ok());
  Status s = session.Run(step.node);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("Attempting to use uninitialized value w/Momentum"), std::string::npos) << s.message();
}

TEST(TrainingKernels, LargeVariableSplitsOverThreads) {
  // 100k elements: above the ParallelFor threshold, so shards run on the
  // intra-op threads; every element must still see exactly one update.
  constexpr int64_t n = 100000;
  Graph g;
  Scope root(g);
  Variable var = GetVariable(root, "big", TensorShape{n}, {.dtype = kFloat64, .initializer = [](const Scope& s, const TensorShape&, DataType) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
    return Const(s, Tensor::Vec<double>(v));
  }});
  Output step = ApplyGradientDescent(root, var.ref, ScalarLike(root, 2.0, kFloat64),
                                     OnesLike(root, var.value));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g, {.intra_op_threads = 4});
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  auto r = session.Run({step});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto out = (*r)[0].ToVector<double>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], static_cast<double>(i) - 2.0) << i;
}

// The adaptive updates sharded over 4 intra-op threads (100k elements), each
// element updated once with its own values (gradient and slots vary by
// element), against the scalar formulas; and their run-time errors.
TEST(TrainingKernels, AdaptiveUpdatesSplitOverThreadsAndCheckAtRunTime) {
  constexpr int64_t n = 100000;
  auto ramp = [](double scale, double offset) {
    return [=](const Scope& s, const TensorShape&, DataType) {
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = offset + scale * static_cast<double>(i % 97);
      return Const(s, Tensor::Vec<double>(v));
    };
  };
  Graph g;
  Scope root(g);
  auto var = [&](const char* name, double scale, double offset) {
    return GetVariable(root, name, TensorShape{n}, {.dtype = kFloat64, .initializer = ramp(scale, offset)});
  };
  Variable w1 = var("w1", 0.01, -0.5), ms = var("ms", 0.02, 0.5), mom = var("mom", 0.001, 0);
  Variable w2 = var("w2", 0.01, -0.5), mg = var("mg", 0.001, -0.05), ms2 = var("ms2", 0.02, 0.5),
           mom2 = var("mom2", 0.001, 0);
  Variable w3 = var("w3", 0.01, -0.5), acc = var("acc", 0.03, 0.1);
  Output grad = Mul(root, w1.value, ScalarLike(root, 3.0, kFloat64));  // read before the updates (run apart)
  Output grad_value = Placeholder(root, kFloat64, PartialShape{n});
  auto c = [&](double v) { return ScalarLike(root, v, kFloat64); };
  Output rms = ApplyRMSProp(root, w1.ref, ms.ref, mom.ref, c(0.1), c(0.9), c(0.5), c(1e-6), grad_value);
  Output crms = ApplyCenteredRMSProp(root, w2.ref, mg.ref, ms2.ref, mom2.ref, c(0.1), c(0.9), c(0.5), c(1e-6),
                                     grad_value);
  Output ada = ApplyAdagrad(root, w3.ref, acc.ref, c(0.1), grad_value);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(g, {.intra_op_threads = 4});
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(g)).ok());
  auto gr = session.Run({grad});
  ASSERT_TRUE(gr.ok());
  const std::vector<double> gv = (*gr)[0].ToVector<double>();
  auto r = session.Run({{grad_value, (*gr)[0]}}, {rms, crms, ada});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto v_rms = (*r)[0].ToVector<double>(), v_crms = (*r)[1].ToVector<double>(), v_ada = (*r)[2].ToVector<double>();
  for (int64_t i = 0; i < n; ++i) {
    const double k = static_cast<double>(i % 97), g_ = gv[static_cast<size_t>(i)];
    const double w = -0.5 + 0.01 * k, m0 = 0.5 + 0.02 * k, mo0 = 0.001 * k;
    double m = m0 + (g_ * g_ - m0) * (1 - 0.9);
    double mo = mo0 * 0.5 + (g_ * 0.1) / std::sqrt(m + 1e-6);
    ASSERT_EQ(v_rms[static_cast<size_t>(i)], w - mo) << "RMSProp element " << i;
    const double mg0 = -0.05 + 0.001 * k;
    const double mgk = mg0 + (g_ - mg0) * (1 - 0.9);
    mo = mo0 * 0.5 + (g_ * 0.1) / std::sqrt((m - mgk * mgk) + 1e-6);
    ASSERT_EQ(v_crms[static_cast<size_t>(i)], w - mo) << "centered RMSProp element " << i;
    const double a = (0.1 + 0.03 * k) + g_ * g_;
    ASSERT_EQ(v_ada[static_cast<size_t>(i)], w - g_ * 0.1 * (1 / std::sqrt(a))) << "Adagrad element " << i;
  }
  // A gradient of another shape, fed past the static check, and an
  // uninitialized slot: errors naming them, the variables untouched.
  Status wrong = session.Run({{grad_value, Tensor::Vec<double>({1, 2})}}, {rms}).status();
  EXPECT_EQ(wrong.code(), Code::kInvalidArgument) << wrong.ToString();
  Session fresh(g, {.intra_op_threads = 4});
  ASSERT_TRUE(fresh.Run(w3.initializer).ok());
  Status uninit = fresh.Run({{grad_value, (*gr)[0]}}, {ada}).status();
  EXPECT_EQ(uninit.code(), Code::kFailedPrecondition);
  EXPECT_NE(uninit.message().find("Attempting to use uninitialized value acc"), std::string::npos) << uninit.message();
}

}  // namespace
}  // namespace tw
