// The gather and layout ops (graph/ops/gather_ops.cc, layout_ops.cc, their
// kernels and gradients): hand-computed values, the static shapes the graph
// knows, TF's rules at the edges (dropped negative segment ids, off_value rows
// for out-of-range one-hot indices, ties and non-finite rows in InTopK), run-time
// errors that name the bad index, and the numeric gradient checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/gather_ops.h"
#include "towerflow/graph/ops/layout_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/gradient_checker.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

Tensor Eval(Graph& g, const Output& out, const FeedList& feeds = {}) {
  Session sess(g);
  auto r = sess.Run(feeds, {out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0] : Tensor();
}

Status RunStatus(Graph& g, const Output& out, const FeedList& feeds) {
  Session sess(g);
  return sess.Run(feeds, {out}).status();
}

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

Output Iota(const Scope& s, TensorShape shape) {
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Const(s, Tensor::FromVector<float>(v, shape));
}

Output Ints(const Scope& s, const std::vector<int32_t>& v, const TensorShape& shape) {
  return Const(s, Tensor::FromVector<int32_t>(v, shape));
}

TEST(GatherOpsTest, GatherAlongEachAxis) {
  Graph g;
  Scope s(g);
  Output x = Iota(s, {3, 4});  // rows 0-3, 4-7, 8-11
  Output rows = Gather(s, x, Ints(s, {2, 0, 2}, {3}), 0);
  EXPECT_EQ(rows.shape(), PartialShape({3, 4}));
  EXPECT_EQ(Eval(g, rows).ToVector<float>(), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  Output cols = Gather(s, x, Ints(s, {3, 1, 0, 0}, {2, 2}), 1);
  EXPECT_EQ(cols.shape(), PartialShape({3, 2, 2}));
  EXPECT_EQ(Eval(g, cols).ToVector<float>(), (std::vector<float>{3, 1, 0, 0, 7, 5, 4, 4, 11, 9, 8, 8}));
  Output last = Gather(s, x, Const(s, Tensor::Scalar<int64_t>(2)), -1);
  EXPECT_EQ(last.shape(), PartialShape({3}));
  EXPECT_EQ(Eval(g, last).ToVector<float>(), (std::vector<float>{2, 6, 10}));
  Output words = Const(s, Tensor::Vec<std::string>({"a", "b", "c"}));
  EXPECT_EQ(Eval(g, Gather(s, words, Ints(s, {2, 2, 0}, {3}))).ToVector<std::string>(),
            (std::vector<std::string>{"c", "c", "a"}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

TEST(GatherOpsTest, GatherNamesAnIndexOutOfRange) {
  Graph g;
  Scope s(g);
  Output idx = Placeholder(s, kInt32, PartialShape({-1, -1}));
  Output out = Gather(s, Iota(s, {5, 2}), idx, 0);
  Status st = RunStatus(g, out, {{idx, Tensor::FromVector<int32_t>({0, 1, 2, 7}, {2, 2})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "indices[1,1] = 7 is not in [0, 5)")) << st.ToString();
  st = RunStatus(g, out, {{idx, Tensor::FromVector<int32_t>({-1, 0}, {1, 2})}});
  EXPECT_TRUE(Contains(st, "indices[0,0] = -1 is not in [0, 5)")) << st.ToString();
  Scope bad(g);
  Gather(bad, Iota(bad, {5, 2}), idx, 2);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status(), "axis 2 is out of range")) << bad.status().ToString();
}

TEST(GatherOpsTest, UnsortedSegmentSumDropsNegativeIdsAndRefusesLargeOnes) {
  Graph g;
  Scope s(g);
  Output ids = Placeholder(s, kInt64, PartialShape({4}));
  Output out = UnsortedSegmentSum(s, Iota(s, {4, 2}), ids, Const(s, 3));
  EXPECT_EQ(out.shape(), PartialShape({3, 2}));
  EXPECT_EQ(Eval(g, out, {{ids, Tensor::Vec<int64_t>({2, -1, 0, 2})}}).ToVector<float>(),
            (std::vector<float>{4, 5, 0, 0, 0 + 6, 1 + 7}));
  Status st = RunStatus(g, out, {{ids, Tensor::Vec<int64_t>({0, 3, 0, 0})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "segment_ids[1] = 3 is out of range [0, 3)")) << st.ToString();
}

TEST(GatherOpsTest, OneHotOnEveryAxisWithOutOfRangeIndices) {
  Graph g;
  Scope s(g);
  Output idx = Ints(s, {0, 2, -1, 3}, {2, 2});
  Output last = OneHot(s, idx, Const(s, 3), Const(s, 1.0f), Const(s, 0.0f));
  EXPECT_EQ(last.shape(), PartialShape({2, 2, 3}));
  EXPECT_EQ(Eval(g, last).ToVector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  Output first = OneHot(s, Ints(s, {1, 0, 2}, {3}), Const(s, 3), Const(s, 5), Const(s, -1), 0);
  EXPECT_EQ(first.shape(), PartialShape({3, 3}));
  // out[d, i] = index i is d.
  EXPECT_EQ(Eval(g, first).ToVector<int32_t>(), (std::vector<int32_t>{-1, 5, -1, 5, -1, -1, -1, -1, 5}));
  Output middle = OneHot(s, idx, Const(s, 2), Const(s, 1.0f), Const(s, 0.0f), 1);
  EXPECT_EQ(middle.shape(), PartialShape({2, 2, 2}));
  // [i, d, j]: row 0 holds indices {0, 2}, row 1 {-1, 3}.
  EXPECT_EQ(Eval(g, middle).ToVector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0}));
  Output depth = Placeholder(s, kInt32, PartialShape({}));
  Status st = RunStatus(g, OneHot(s, idx, depth, Const(s, 1.0f), Const(s, 0.0f)), {{depth, Tensor::Scalar<int32_t>(-2)}});
  EXPECT_TRUE(Contains(st, "depth must be non-negative, got: -2")) << st.ToString();
}

TEST(GatherOpsTest, SelectBroadcastsAllThree) {
  Graph g;
  Scope s(g);
  Output c = Const(s, Tensor::FromVector<bool>({true, false}, {2, 1}));
  Output out = SelectV2(s, c, Iota(s, {2, 3}), Const(s, -1.0f));
  EXPECT_EQ(out.shape(), PartialShape({2, 3}));
  EXPECT_EQ(Eval(g, out).ToVector<float>(), (std::vector<float>{0, 1, 2, -1, -1, -1}));
  Output same = SelectV2(s, Const(s, Tensor::Vec<bool>({false, true})), Const(s, Tensor::Vec<int32_t>({1, 2})),
                       Const(s, Tensor::Vec<int32_t>({3, 4})));
  EXPECT_EQ(Eval(g, same).ToVector<int32_t>(), (std::vector<int32_t>{3, 2}));
  Scope bad(g);
  SelectV2(bad, c, Iota(bad, {2, 3}), Iota(bad, {4}));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

TEST(GatherOpsTest, SelectOfTF1PicksWholeRowsOrElements) {
  Graph g;
  Scope s(g);
  Output t = Iota(s, {3, 2});
  Output e = Const(s, Tensor::FromVector<float>({-1, -2, -3, -4, -5, -6}, {3, 2}));
  Output rows = Select(s, Const(s, Tensor::Vec<bool>({true, false, true})), t, e);
  EXPECT_EQ(rows.shape(), PartialShape({3, 2}));
  EXPECT_EQ(Eval(g, rows).ToVector<float>(), (std::vector<float>{0, 1, -3, -4, 4, 5}));
  EXPECT_EQ(Eval(g, Select(s, Const(s, Tensor::Scalar<bool>(false)), t, e)).ToVector<float>(),
            Eval(g, e).ToVector<float>());
  Output c = Placeholder(s, kBool, PartialShape::Unknown());
  Output picked = Select(s, c, t, e);
  Session sess(g);
  auto r = sess.Run({{c, Tensor::FromVector<bool>({true, false, false, true, true, false}, {3, 2})}}, {picked});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{0, -2, -3, 3, 4, -6}));
  Status st = RunStatus(g, picked, {{c, Tensor::Vec<bool>({true, false})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "must be a scalar, a vector of t's first dimension")) << st.ToString();
  Scope bad(g);
  Select(bad, Const(bad, Tensor::Vec<bool>({true, false})), t, e);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

TEST(GatherOpsTest, InTopKCountsTiesForTheTargetAndRefusesNonFiniteRows) {
  Graph g;
  Scope s(g);
  const float inf = std::numeric_limits<float>::infinity();
  Output p = Const(s, Tensor::FromVector<float>({0.1f, 0.5f, 0.5f, 0.2f,    // target 2 ties the largest
                                                 0.4f, 0.3f, 0.2f, 0.1f,    // target 3 is the smallest
                                                 0.1f, inf, 0.3f, 0.2f,     // not finite
                                                 0.1f, 0.2f, 0.3f, 0.4f},   // target 4 is out of range
                                                {4, 4}));
  Output t = Ints(s, {2, 3, 0, 4}, {4});
  EXPECT_EQ(Eval(g, InTopK(s, p, t, Const(s, 1))).ToVector<bool>(), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(Eval(g, InTopK(s, p, t, Const(s, 4))).ToVector<bool>(), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(Eval(g, InTopK(s, p, t, Const(s, 0))).ToVector<bool>(), (std::vector<bool>{false, false, false, false}));
}

TEST(LayoutOpsTest, TransposeAndItsInverse) {
  Graph g;
  Scope s(g);
  Output x = Iota(s, {2, 3});
  Output t = Transpose(s, x, std::vector<int32_t>{1, 0});
  EXPECT_EQ(t.shape(), PartialShape({3, 2}));
  EXPECT_EQ(Eval(g, t).ToVector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Output y = Iota(s, {2, 3, 4});
  Output perm = Const(s, std::vector<int32_t>{2, 0, 1});
  Output z = Transpose(s, y, perm);
  EXPECT_EQ(z.shape(), PartialShape({4, 2, 3}));
  Tensor zv = Eval(g, z);
  EXPECT_EQ(zv.ToVector<float>()[1], 4.0f);   // z[0,0,1] = y[0,1,0]
  EXPECT_EQ(zv.ToVector<float>()[3], 12.0f);  // z[0,1,0] = y[1,0,0]
  EXPECT_EQ(zv.ToVector<float>()[6], 1.0f);   // z[1,0,0] = y[0,0,1]
  Output back = Transpose(s, z, InvertPermutation(s, perm));
  EXPECT_EQ(Eval(g, back).ToVector<float>(), Eval(g, y).ToVector<float>());
  Output p = Placeholder(s, kInt32, PartialShape({2}));
  Status st = RunStatus(g, Transpose(s, x, p), {{p, Tensor::Vec<int32_t>({1, 1})}});
  EXPECT_TRUE(Contains(st, "[1,1] is not a permutation of [0, 2)")) << st.ToString();
  // Negative entries count from the end, as TF's.
  EXPECT_EQ(Eval(g, Transpose(s, x, std::vector<int32_t>{-1, 0})).ToVector<float>(),
            (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Scope bad(g);
  Transpose(bad, y, std::vector<int32_t>{0, 1});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

TEST(LayoutOpsTest, TileRepeatsEveryAxis) {
  Graph g;
  Scope s(g);
  Output x = Iota(s, {2, 2});
  Output t = Tile(s, x, Const(s, std::vector<int32_t>{2, 3}));
  EXPECT_EQ(t.shape(), PartialShape({4, 6}));
  EXPECT_EQ(Eval(g, t).ToVector<float>(),
            (std::vector<float>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  EXPECT_EQ(Eval(g, Tile(s, x, Const(s, std::vector<int32_t>{0, 2}))).NumElements(), 0);
  Output m = Placeholder(s, kInt32, PartialShape({2}));
  Status st = RunStatus(g, Tile(s, x, m), {{m, Tensor::Vec<int32_t>({1, -1})}});
  EXPECT_TRUE(Contains(st, "multiples must be non-negative")) << st.ToString();
}

TEST(LayoutOpsTest, PadWithZerosOrAConstant) {
  Graph g;
  Scope s(g);
  Output x = Const(s, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}));
  Output p = Ints(s, {1, 0, 0, 2}, {2, 2});
  Output zeros = Pad(s, x, p);
  EXPECT_EQ(zeros.shape(), PartialShape({3, 4}));
  EXPECT_EQ(Eval(g, zeros).ToVector<float>(), (std::vector<float>{0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0}));
  EXPECT_EQ(Eval(g, Pad(s, x, p, Const(s, 9.0f))).ToVector<float>(),
            (std::vector<float>{9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9}));
  EXPECT_EQ(Eval(g, Pad(s, Const(s, Tensor::Vec<std::string>({"a"})), Ints(s, {1, 1}, {1, 2})))
                .ToVector<std::string>(),
            (std::vector<std::string>{"", "a", ""}));
  Output q = Placeholder(s, kInt32, PartialShape({2, 2}));
  Status st = RunStatus(g, Pad(s, x, q), {{q, Tensor::FromVector<int32_t>({0, 0, -1, 0}, {2, 2})}});
  EXPECT_TRUE(Contains(st, "paddings must be non-negative")) << st.ToString();
}

TEST(LayoutOpsTest, ReverseAlongAnyAxes) {
  Graph g;
  Scope s(g);
  Output x = Iota(s, {2, 3});
  EXPECT_EQ(Eval(g, Reverse(s, x, std::vector<int32_t>{1})).ToVector<float>(), (std::vector<float>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(Eval(g, Reverse(s, x, std::vector<int32_t>{0})).ToVector<float>(), (std::vector<float>{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(Eval(g, Reverse(s, x, std::vector<int32_t>{-1, 0})).ToVector<float>(),
            (std::vector<float>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(Eval(g, Reverse(s, x, std::vector<int32_t>{})).ToVector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  // A middle axis of a [2,3,2] image: the rows of each picture flipped.
  Output y = Iota(s, {2, 3, 2});
  EXPECT_EQ(Eval(g, Reverse(s, y, std::vector<int32_t>{1})).ToVector<float>(),
            (std::vector<float>{4, 5, 2, 3, 0, 1, 10, 11, 8, 9, 6, 7}));
  EXPECT_EQ(Eval(g, Reverse(s, Const(s, Tensor::Vec<std::string>({"a", "b", "c"})), std::vector<int32_t>{0}))
                .ToVector<std::string>(),
            (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_EQ(Eval(g, Reverse(s, Iota(s, {0, 3}), std::vector<int32_t>{1})).NumElements(), 0);
  Output a = Placeholder(s, kInt64, PartialShape({-1}));
  Status st = RunStatus(g, Reverse(s, x, a), {{a, Tensor::Vec<int64_t>({2})}});
  EXPECT_TRUE(Contains(st, "'axis'[0] = 2 is out of valid range [-2, 2)")) << st.ToString();
  st = RunStatus(g, Reverse(s, x, a), {{a, Tensor::Vec<int64_t>({1, -1})}});
  EXPECT_TRUE(Contains(st, "axis 1 specified more than once")) << st.ToString();
  Scope bad(g);
  Reverse(bad, x, std::vector<int32_t>{3});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

TEST(LayoutOpsTest, RangeOfIntsAndFloats) {
  Graph g;
  Scope s(g);
  Output r = Range(s, Const(s, 3), Const(s, 10), Const(s, 3));
  EXPECT_EQ(r.shape(), PartialShape({3}));
  EXPECT_EQ(Eval(g, r).ToVector<int32_t>(), (std::vector<int32_t>{3, 6, 9}));
  EXPECT_EQ(Eval(g, Range(s, Const(s, 5), Const(s, 0), Const(s, -2))).ToVector<int32_t>(),
            (std::vector<int32_t>{5, 3, 1}));
  EXPECT_EQ(Eval(g, Range(s, Const(s, 0.0f), Const(s, 1.0f), Const(s, 0.25f))).ToVector<float>(),
            (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  Scope bad(g);
  Range(bad, Const(bad, 0), Const(bad, 5), Const(bad, -1));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  Output d = Placeholder(s, kInt32, PartialShape({}));
  Status st = RunStatus(g, Range(s, Const(s, 0), Const(s, 5), d), {{d, Tensor::Scalar<int32_t>(0)}});
  EXPECT_TRUE(Contains(st, "requires delta != 0")) << st.ToString();
  // The count in float32, as TF's: 0 to 0.3 by 0.1 has 3 elements, 0 to 1 by 0.01 has 100.
  Output three = Range(s, Const(s, 0.0f), Const(s, 0.3f), Const(s, 0.1f));
  EXPECT_EQ(three.shape(), PartialShape({3}));
  EXPECT_EQ(Eval(g, three).NumElements(), 3);
  EXPECT_EQ(Eval(g, Range(s, Const(s, 0.0f), Const(s, 1.0f), Const(s, 0.01f))).NumElements(), 100);
  // 2^64 elements: an error, not an abort.
  Output a = Placeholder(s, kInt64, PartialShape({}));
  Output b = Placeholder(s, kInt64, PartialShape({}));
  st = RunStatus(g, Range(s, a, b, Const(s, Tensor::Scalar<int64_t>(1))),
                 {{a, Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::min())},
                  {b, Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::max())}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "more than 2^63 - 1 elements")) << st.ToString();
}

TEST(IndexingGradTest, EveryCaseMatchesFiniteDifferences) {
  std::vector<GradCheckCase> cases;
  AddIndexingGradChecks(cases);
  std::set<std::string> covered;
  for (const GradCheckCase& c : cases) {
    covered.insert(c.op);
    for (uint64_t seed : {1u, 2u}) {
      SCOPED_TRACE(c.op + " " + c.name + " seed " + std::to_string(seed));
      auto r = CheckGradient(c, seed);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_GT(r->elements, 0);
      EXPECT_LT(r->max_error, c.tolerance);
    }
  }
  for (const char* op : {"GatherV2", "UnsortedSegmentSum", "Select", "SelectV2", "Transpose", "Tile", "Pad", "PadV2"}) {
    EXPECT_TRUE(covered.count(op)) << op << " has no gradient check";
  }
  for (const char* op : {"OneHot", "InTopKV2", "InvertPermutation", "Range"}) {
    EXPECT_TRUE(GradientRegistry::Global().IsNoGradient(op)) << op;
  }
}

// Shapes known only at run time: the gradients build their shapes in the graph.
TEST(IndexingGradTest, GradientsWithUnknownShapes) {
  Graph g;
  Scope s(g);
  Output params = Placeholder(s, kFloat32, PartialShape({-1, -1}));
  Output idx = Placeholder(s, kInt32, PartialShape::Unknown());
  Output loss = Sum(s, Mul(s, Gather(s, params, idx, 1), Const(s, 2.0f)), std::vector<int32_t>{});
  auto grads = Gradients(s, {loss}, {params});
  ASSERT_TRUE(grads.ok()) << grads.status().ToString();
  Session sess(g);
  auto r = sess.Run({{params, Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, {2, 3})},
                     {idx, Tensor::FromVector<int32_t>({2, 0, 2, 2}, {2, 2})}},
                    {(*grads)[0]});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{2, 0, 6, 2, 0, 6}));
  // params of unknown rank: the permutation is built at run time.
  Output any = Placeholder(s, kFloat32, PartialShape::Unknown());
  // (d of the sum of its elements: the implicit all-ones gradient of Gradients.)
  auto g2 = Gradients(s, {Gather(s, any, Const(s, Tensor::Vec<int32_t>({1, 1})), 1)}, {any});
  ASSERT_TRUE(g2.ok()) << g2.status().ToString();
  auto r2 = sess.Run({{any, Tensor::FromVector<float>(std::vector<float>(12, 0.0f), {2, 3, 2})}}, {(*g2)[0]});
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ((*r2)[0].shape(), TensorShape({2, 3, 2}));
  EXPECT_EQ((*r2)[0].ToVector<float>(), (std::vector<float>{0, 0, 2, 2, 0, 0, 0, 0, 2, 2, 0, 0}));
}

}  // namespace
}  // namespace tw
