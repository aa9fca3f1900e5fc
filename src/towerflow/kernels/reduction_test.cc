// Sum, Mean, Max and ArgMax (reduction_kernels.cc) against hand-computed
// values: one axis, several axes, every axis, keep_dims, negative axes, empty
// inputs, large sharded reductions, and bad axes at build and run time.
#include <gtest/gtest.h>

#include <cmath>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

Tensor Eval(Graph& g, const Output& out, int intra_threads = 1) {
  SessionOptions opts;
  opts.intra_op_threads = intra_threads;
  Session sess(g, opts);
  auto r = sess.Run({out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0] : Tensor();
}

// Sum's builder also takes axes as an Output, so a bare {0} would be ambiguous.
using Axes = std::vector<int32_t>;

template <typename T>
Output C(const Scope& s, std::vector<T> v, TensorShape shape) {
  return Const(s, Tensor::FromVector<T>(v, shape));
}

// x = [[1,2,3],[4,5,6]].
TEST(ReductionTest, TwoByThree) {
  Graph g;
  Scope s(g);
  Output x = C<float>(s, {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s0 = Eval(g, Sum(s, x, Axes{0}));
  EXPECT_EQ(s0.shape(), TensorShape({3}));
  EXPECT_EQ(s0.ToVector<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(Eval(g, Sum(s, x, Axes{1})).ToVector<float>(), (std::vector<float>{6, 15}));
  EXPECT_EQ(Eval(g, Sum(s, x, Axes{-1})).ToVector<float>(), (std::vector<float>{6, 15}));
  Tensor all = Eval(g, Sum(s, x, Axes{}));
  EXPECT_EQ(all.rank(), 0);
  EXPECT_EQ(all.scalar<float>(), 21.0f);
  Tensor keep = Eval(g, Sum(s, x, Axes{1}, /*keep_dims=*/true));
  EXPECT_EQ(keep.shape(), TensorShape({2, 1}));
  EXPECT_EQ(keep.ToVector<float>(), (std::vector<float>{6, 15}));
  Tensor keep_all = Eval(g, Sum(s, x, Axes{}, true));
  EXPECT_EQ(keep_all.shape(), TensorShape({1, 1}));
  EXPECT_EQ(Eval(g, Mean(s, x, {0})).ToVector<float>(), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(Eval(g, Mean(s, x, {})).scalar<float>(), 3.5f);
  EXPECT_EQ(Eval(g, Max(s, x, {1})).ToVector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(Eval(g, Max(s, x, {0})).ToVector<float>(), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(Eval(g, Max(s, x, {})).scalar<float>(), 6.0f);
}

// x = 0..11 as [2,3,2].
TEST(ReductionTest, MiddleAndSeparatedAxes) {
  Graph g;
  Scope s(g);
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  Output x = C<float>(s, v, {2, 3, 2});
  Tensor mid = Eval(g, Sum(s, x, Axes{1}));
  EXPECT_EQ(mid.shape(), TensorShape({2, 2}));
  EXPECT_EQ(mid.ToVector<float>(), (std::vector<float>{6, 9, 24, 27}));
  Tensor outer = Eval(g, Sum(s, x, Axes{0, 2}));
  EXPECT_EQ(outer.shape(), TensorShape({3}));
  EXPECT_EQ(outer.ToVector<float>(), (std::vector<float>{14, 22, 30}));
  Tensor outer_keep = Eval(g, Max(s, x, {0, -1}, true));
  EXPECT_EQ(outer_keep.shape(), TensorShape({1, 3, 1}));
  EXPECT_EQ(outer_keep.ToVector<float>(), (std::vector<float>{7, 9, 11}));
  EXPECT_EQ(Eval(g, Mean(s, x, {0, 1})).ToVector<float>(), (std::vector<float>{5, 6}));
  // Size-1 dimensions in the middle do not disturb the collapsing.
  Output y = C<float>(s, v, {2, 1, 3, 1, 2});
  EXPECT_EQ(Eval(g, Sum(s, y, Axes{2})).ToVector<float>(), (std::vector<float>{6, 9, 24, 27}));
}

TEST(ReductionTest, IntegerTypesAndNegatives) {
  Graph g;
  Scope s(g);
  Output xi = C<int32_t>(s, {-5, -3, -9, 7}, {2, 2});
  EXPECT_EQ(Eval(g, Max(s, xi, {1})).ToVector<int32_t>(), (std::vector<int32_t>{-3, 7}));
  EXPECT_EQ(Eval(g, Sum(s, xi, Axes{0})).ToVector<int32_t>(), (std::vector<int32_t>{-14, 4}));
  EXPECT_EQ(Eval(g, Mean(s, C<int64_t>(s, {1, 2, 4}, {3}), {})).scalar<int64_t>(), 2);  // 7 / 3 truncates
  EXPECT_EQ(Eval(g, Max(s, C<float>(s, {-5, -3}, {2}), {})).scalar<float>(), -3.0f);
  EXPECT_EQ(Eval(g, Sum(s, C<double>(s, {0.5, 0.25}, {2}), Axes{0})).scalar<double>(), 0.75);
}

TEST(ReductionTest, EmptyInputs) {
  Graph g;
  Scope s(g);
  Output x = C<float>(s, {}, {0, 3});
  EXPECT_EQ(Eval(g, Sum(s, x, Axes{0})).ToVector<float>(), (std::vector<float>{0, 0, 0}));
  Tensor mean = Eval(g, Mean(s, x, {0}));
  EXPECT_TRUE(std::isnan(mean.data<float>()[0]));
  Tensor max = Eval(g, Max(s, x, {0}));
  EXPECT_TRUE(std::isinf(max.data<float>()[0]) && max.data<float>()[0] < 0);
  EXPECT_EQ(Eval(g, Sum(s, x, Axes{1})).shape(), TensorShape({0}));
}

TEST(ReductionTest, ShapeInference) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat32, PartialShape({-1, 4}));
  EXPECT_EQ(Sum(s, x, Axes{1}).shape(), PartialShape({-1}));
  EXPECT_EQ(Mean(s, x, {1}, true).shape(), PartialShape({-1, 1}));
  EXPECT_EQ(Max(s, x, {}).shape(), PartialShape(std::vector<int64_t>{}));
  EXPECT_EQ(ArgMax(s, x, 1).shape(), PartialShape({-1}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Reducing every axis of an input of unknown rank flattens it first.
  Output u = Placeholder(s, kFloat32);
  Output su = Sum(s, u, Axes{});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session sess(g);
  auto r = sess.Run({{u, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2})}}, {su});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].scalar<float>(), 10.0f);
}

TEST(ReductionTest, BadAxes) {
  Graph g;
  Scope s(g);
  Output x = C<float>(s, {1, 2, 3, 4}, {2, 2});
  EXPECT_FALSE(Sum(s, x, Axes{2}).valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_NE(s.status().message().find("[2,2]"), std::string::npos) << s.status().message();

  Graph g2;
  Scope s2(g2);
  Output y = C<float>(s2, {1, 2, 3, 4}, {2, 2});
  Output axes = Placeholder(s2, kInt32);
  Output z = SumOverAxes(s2, y, axes);
  ASSERT_TRUE(s2.ok());
  Session sess(g2);
  auto r = sess.Run({{axes, Tensor::Vec<int32_t>({-3})}}, {z});
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("[2,2]"), std::string::npos) << r.status().message();
  auto ok = sess.Run({{axes, Tensor::Vec<int32_t>({1})}}, {z});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0].ToVector<float>(), (std::vector<float>{3, 7}));
}

// Large reductions split over threads: a full sum in chunks, columns ([R,K])
// and rows ([K,R]). Values are small integers, so float sums are exact.
TEST(ReductionTest, LargeSharded) {
  Graph g;
  Scope s(g);
  const int64_t R = 3001, K = 37;
  std::vector<float> v(static_cast<size_t>(R * K));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 5);
  Output x = C<float>(s, v, {R, K});
  double total = 0;
  for (float f : v) total += f;
  EXPECT_EQ(Eval(g, Sum(s, x, Axes{}), 4).scalar<float>(), static_cast<float>(total));
  Tensor cols = Eval(g, Sum(s, x, Axes{0}), 4);
  Tensor rows = Eval(g, Sum(s, x, Axes{1}), 4);
  Tensor maxr = Eval(g, Max(s, x, {1}), 4);
  int64_t bad = 0;
  for (int64_t k = 0; k < K; ++k) {
    float want = 0;
    for (int64_t r = 0; r < R; ++r) want += v[static_cast<size_t>(r * K + k)];
    bad += cols.data<float>()[k] != want;
  }
  for (int64_t r = 0; r < R; ++r) {
    float want = 0, want_max = 0;
    for (int64_t k = 0; k < K; ++k) {
      want += v[static_cast<size_t>(r * K + k)];
      want_max = std::max(want_max, v[static_cast<size_t>(r * K + k)]);
    }
    bad += rows.data<float>()[r] != want;
    bad += maxr.data<float>()[r] != want_max;
  }
  EXPECT_EQ(bad, 0);
}

TEST(ArgMaxTest, Values) {
  Graph g;
  Scope s(g);
  Output x = C<float>(s, {1, 5, 3, 7, 2, 7}, {2, 3});
  Tensor rows = Eval(g, ArgMax(s, x, 1));
  EXPECT_EQ(rows.dtype(), kInt64);
  EXPECT_EQ(rows.ToVector<int64_t>(), (std::vector<int64_t>{1, 0}));  // ties: the first
  EXPECT_EQ(Eval(g, ArgMax(s, x, 0)).ToVector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(Eval(g, ArgMax(s, x, -1)).ToVector<int64_t>(), (std::vector<int64_t>{1, 0}));
  Output xi = C<int32_t>(s, {-4, -2, -8}, {3});
  Tensor flat = Eval(g, ArgMax(s, xi, 0));
  EXPECT_EQ(flat.rank(), 0);
  EXPECT_EQ(flat.scalar<int64_t>(), 1);
}

TEST(ArgMaxTest, BadDimension) {
  Graph g;
  Scope s(g);
  Output x = C<float>(s, {1, 2}, {2});
  EXPECT_FALSE(ArgMax(s, x, 1).valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_NE(s.status().message().find("[2]"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace tw
