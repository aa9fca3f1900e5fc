// Gradients of the math ops (math_grad.cc): every math GradCheckCase against
// finite differences, plus hand-computed gradients where shapes are only known
// at run time and where Max / Maximum meet ties.
#include <gtest/gtest.h>

#include <set>

#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/gradient_checker.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

using Axes = std::vector<int32_t>;

std::vector<GradCheckCase> MathCases() {
  std::vector<GradCheckCase> cases;
  AddMathGradChecks(cases);
  return cases;
}

TEST(MathGradTest, EveryCaseMatchesFiniteDifferences) {
  for (const GradCheckCase& c : MathCases()) {
    for (uint64_t seed : {1u, 2u}) {
      SCOPED_TRACE(c.op + " " + c.name + " seed " + std::to_string(seed));
      auto r = CheckGradient(c, seed);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_GT(r->elements, 0);
      EXPECT_LT(r->max_error, c.tolerance);
    }
  }
}

TEST(MathGradTest, CasesCoverEveryDifferentiableOp) {
  std::set<std::string> covered;
  for (const GradCheckCase& c : MathCases()) covered.insert(c.op);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Maximum", "Neg", "Square", "Sqrt", "Exp", "Log", "Log1p",
                         "Sigmoid", "Tanh", "AddN", "MatMul", "Sum", "Mean", "Max"}) {
    EXPECT_TRUE(covered.count(op)) << op << " has no gradient check";
    EXPECT_NE(GradientRegistry::Global().Find(op), nullptr) << op;
  }
  for (const char* op : {"Equal", "GreaterEqual", "ArgMax"}) {
    EXPECT_TRUE(GradientRegistry::Global().IsNoGradient(op)) << op;
  }
}

// Runs d(loss)/d(xs) with `feeds`; fails the test on error.
std::vector<Tensor> GradValues(const Scope& s, const Output& loss, const std::vector<Output>& xs,
                               const FeedList& feeds) {
  auto grads = Gradients(s, {loss}, xs);
  EXPECT_TRUE(grads.ok()) << grads.status().ToString();
  if (!grads.ok()) return {};
  Session sess(s.graph());
  auto r = sess.Run(feeds, *grads);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Tensor>{};
}

// Bias add with an unknown batch: db sums dz over the batch, dx is dz.
TEST(MathGradTest, BroadcastWithUnknownBatch) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat64, PartialShape({-1, 2}));
  Output b = Placeholder(s, kFloat64, PartialShape({2}));
  Output w = Const(s, Tensor::FromVector<double>({1, 10, 100, 1000, 5, 50}, {3, 2}));
  Output loss = Sum(s, Mul(s, Add(s, x, b), w), Axes{});
  auto v = GradValues(s, loss, {x, b},
                      {{x, Tensor::FromVector<double>({0, 0, 0, 0, 0, 0}, {3, 2})},
                       {b, Tensor::Vec<double>({0, 0})}});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].ToVector<double>(), (std::vector<double>{1, 10, 100, 1000, 5, 50}));
  EXPECT_EQ(v[1].ToVector<double>(), (std::vector<double>{106, 1060}));
}

// Mean over a batch whose size is only known at run time divides by it.
TEST(MathGradTest, MeanWithUnknownDimensions) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat64, PartialShape({-1, 3}));
  Output per_row = Sum(s, x, Axes{1});
  Output loss = Mean(s, per_row, Axes{0});
  auto v = GradValues(s, loss, {x}, {{x, Tensor(kFloat64, {4, 3})}});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].shape(), TensorShape({4, 3}));
  EXPECT_EQ(v[0].ToVector<double>(), std::vector<double>(12, 0.25));

  Output mean_all = Mean(s, x, Axes{});
  auto v2 = GradValues(s, mean_all, {x}, {{x, Tensor(kFloat64, {2, 3})}});
  ASSERT_EQ(v2.size(), 1u);
  EXPECT_EQ(v2[0].ToVector<double>(), std::vector<double>(6, 1.0 / 6));
}

// Two unknown kept dimensions: the keep_dims shape is computed at run time.
TEST(MathGradTest, SumWithSeveralUnknownDimensions) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat64, PartialShape({-1, -1, 2}));
  Output loss = Sum(s, Square(s, Sum(s, x, Axes{2})), Axes{});
  // y[i,j] = x[i,j,0] + x[i,j,1]; d loss/d x[i,j,k] = 2 y[i,j].
  auto v = GradValues(s, loss, {x}, {{x, Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2})}});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].ToVector<double>(), (std::vector<double>{6, 6, 14, 14, 22, 22, 30, 30}));
}

// Ties share a Max's gradient equally; Maximum gives a tie to x.
TEST(MathGradTest, Ties) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat64, PartialShape({3}));
  auto v = GradValues(s, Max(s, x, Axes{}), {x}, {{x, Tensor::Vec<double>({1, 3, 3})}});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].ToVector<double>(), (std::vector<double>{0, 0.5, 0.5}));

  Output a = Placeholder(s, kFloat64, PartialShape({2}));
  Output b = Placeholder(s, kFloat64, PartialShape({2}));
  auto m = GradValues(s, Sum(s, Maximum(s, a, b), Axes{}), {a, b},
                      {{a, Tensor::Vec<double>({2, 1})}, {b, Tensor::Vec<double>({2, 3})}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].ToVector<double>(), (std::vector<double>{1, 0}));
  EXPECT_EQ(m[1].ToVector<double>(), (std::vector<double>{0, 1}));
}

// A comparison feeding a Cast contributes no gradient, and is no error.
TEST(MathGradTest, NoGradientThroughComparisons) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat64, PartialShape({2}));
  Output mask = Cast(s, GreaterEqual(s, x, Const(s, 0.0)), kFloat64);
  Output loss = Sum(s, Mul(s, x, mask), Axes{});
  auto v = GradValues(s, loss, {x}, {{x, Tensor::Vec<double>({-1, 2})}});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].ToVector<double>(), (std::vector<double>{0, 1}));
}

// Identity's gradient is the incoming gradient itself, as TF's _IdGrad: no
// node is added (a variable's update then reads its gradient's producer).
TEST(MathGradTest, IdentityPassesTheGradientThrough) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat64, PartialShape({2}));
  Output y = Identity(s, x);
  Output loss = Sum(s, Square(s, y), Axes{});
  auto through_identity = Gradients(s, {loss}, {x});
  auto at_identity = Gradients(s, {loss}, {y});
  ASSERT_TRUE(through_identity.ok()) << through_identity.status().ToString();
  ASSERT_TRUE(at_identity.ok()) << at_identity.status().ToString();
  EXPECT_NE((*through_identity)[0].node->op(), "Identity");
  EXPECT_EQ((*through_identity)[0].node->op(), (*at_identity)[0].node->op());
  auto v = GradValues(s, loss, {x}, {{x, Tensor::Vec<double>({-1, 3})}});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].ToVector<double>(), (std::vector<double>{-2, 6}));
}

}  // namespace
}  // namespace tw
