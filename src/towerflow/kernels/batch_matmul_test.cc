// BatchMatMulV2 (batch_matmul_kernels.cc): every output matrix against MatMul
// of the operand matrices its broadcast batch index names, for every adjoint
// combination and broadcast form (same batches, a matrix against a batch,
// batch dimensions broadcast from both sides, ranks that differ), split over
// intra-op threads; static shapes with unknown dimensions; empty batches and
// empty sums; the errors of bad shapes at build and run time.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

Tensor Random(const TensorShape& shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(shape.num_elements()));
  for (double& x : v) x = u(rng);
  return Tensor::FromVector<double>(v, shape);
}

TensorShape Swapped(const TensorShape& s) {
  std::vector<int64_t> d = s.dims();
  std::swap(d[d.size() - 1], d[d.size() - 2]);
  return TensorShape(d);
}

// Matrix `index` of `t` (its last two dimensions) as a constant.
Output MatrixOf(const Scope& s, const Tensor& t, int64_t index) {
  const int64_t r = t.dim(t.rank() - 2), c = t.dim(t.rank() - 1);
  std::vector<double> v(t.data<double>() + index * r * c, t.data<double>() + (index + 1) * r * c);
  return Const(s, Tensor::FromVector<double>(v, TensorShape{r, c}));
}

struct Pair {
  TensorShape x, y;          // as stored without adjoints: x [..., M, K], y [..., K, N]
  std::vector<int64_t> out;  // the expected output shape
  // For each output matrix, the x and y matrices it multiplies.
  std::vector<std::pair<int64_t, int64_t>> sources;
};

TEST(BatchMatMulTest, EveryMatrixIsMatMulOfItsBroadcastOperands) {
  std::mt19937_64 rng(41);
  const std::vector<Pair> pairs = {
      {{3, 2, 4}, {3, 4, 5}, {3, 2, 5}, {{0, 0}, {1, 1}, {2, 2}}},
      {{2, 4}, {3, 4, 5}, {3, 2, 5}, {{0, 0}, {0, 1}, {0, 2}}},
      {{3, 2, 4}, {4, 5}, {3, 2, 5}, {{0, 0}, {1, 0}, {2, 0}}},
      {{2, 1, 2, 4}, {1, 3, 4, 5}, {2, 3, 2, 5}, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}},
      {{2, 1, 2, 4}, {3, 4, 5}, {2, 3, 2, 5}, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}},
      {{1, 2, 4}, {2, 1, 4, 5}, {2, 1, 2, 5}, {{0, 0}, {0, 1}}},
  };
  for (const Pair& p : pairs) {
    for (bool adj_x : {false, true}) {
      for (bool adj_y : {false, true}) {
        SCOPED_TRACE(p.x.ToString() + " x " + p.y.ToString() + " adj_x " + std::to_string(adj_x) + " adj_y " +
                     std::to_string(adj_y));
        const Tensor x = Random(adj_x ? Swapped(p.x) : p.x, rng), y = Random(adj_y ? Swapped(p.y) : p.y, rng);
        Graph g;
        Scope s(g);
        Output z = BatchMatMul(s, Const(s, x), Const(s, y), adj_x, adj_y);
        std::vector<Output> want;
        for (const auto& [xi, yi] : p.sources) {
          want.push_back(MatMul(s, MatrixOf(s, x, xi), MatrixOf(s, y, yi), {adj_x, adj_y}));
        }
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        EXPECT_EQ(z.shape().ToString(), TensorShape(p.out).ToString());
        Session session(g, {.intra_op_threads = 3});
        std::vector<Output> fetches = want;
        fetches.push_back(z);
        auto r = session.Run(fetches);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        const Tensor& got = r->back();
        ASSERT_EQ(got.shape().ToString(), TensorShape(p.out).ToString());
        const int64_t size = p.out[p.out.size() - 2] * p.out.back();
        for (size_t b = 0; b < want.size(); ++b) {
          const std::vector<double> w = (*r)[b].ToVector<double>();
          for (int64_t i = 0; i < size; ++i) {
            ASSERT_EQ(got.data<double>()[static_cast<int64_t>(b) * size + i], w[static_cast<size_t>(i)])
                << "matrix " << b << " element " << i;
          }
        }
      }
    }
  }
}

// One tall matrix (a batch of one) split by rows over 4 threads, every
// adjoint: MatMul's values.
TEST(BatchMatMulTest, OneLargeMatrixSplitsByRows) {
  std::mt19937_64 rng(43);
  for (bool adj_x : {false, true}) {
    const Tensor x = Random(adj_x ? TensorShape{1, 64, 100} : TensorShape{1, 100, 64}, rng);
    const Tensor y = Random(TensorShape{64, 30}, rng);
    Graph g;
    Scope s(g);
    Output z = BatchMatMul(s, Const(s, x), Const(s, y), adj_x, false);
    Output want = MatMul(s, MatrixOf(s, x, 0), Const(s, y), {adj_x, false});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Session session(g, {.intra_op_threads = 4});
    auto r = session.Run({z, want});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].shape().ToString(), "[1,100,30]");
    const std::vector<double> got = (*r)[0].ToVector<double>(), w = (*r)[1].ToVector<double>();
    ASSERT_EQ(got.size(), w.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], w[i], 1e-12) << "element " << i;
  }
}

TEST(BatchMatMulTest, StaticShapesBroadcastUnknownDimensions) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat32, PartialShape({-1, 1, 3, 4}));
  Output y = Placeholder(s, kFloat32, PartialShape({5, 4, -1}));
  EXPECT_EQ(BatchMatMul(s, x, y).shape().ToString(), PartialShape({-1, 5, 3, -1}).ToString());
  Output u = Placeholder(s, kFloat32, PartialShape::Unknown());
  EXPECT_FALSE(BatchMatMul(s, x, u).shape().known_rank());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

TEST(BatchMatMulTest, EmptyBatchesAndEmptySums) {
  Graph g;
  Scope s(g);
  Output none = BatchMatMul(s, Const(s, Tensor::FromVector<double>({}, TensorShape{0, 2, 3})),
                            Const(s, Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, TensorShape{3, 2})));
  Output zeros = BatchMatMul(s, Const(s, Tensor::FromVector<double>({}, TensorShape{2, 2, 0})),
                             Const(s, Tensor::FromVector<double>({}, TensorShape{2, 0, 3})));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(g);
  auto r = session.Run({none, zeros});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].shape().ToString(), "[0,2,2]");
  EXPECT_EQ((*r)[1].shape().ToString(), "[2,2,3]");
  for (double v : (*r)[1].ToVector<double>()) EXPECT_EQ(v, 0.0);
}

TEST(BatchMatMulTest, BadShapesAtBuildAndRunTime) {
  {
    Graph g;
    Scope s(g);
    BatchMatMul(s, Placeholder(s, kFloat32, PartialShape({2, 3, 4})), Placeholder(s, kFloat32, PartialShape({2, 5, 6})));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("inner dimensions differ"), std::string::npos) << s.status().ToString();
  }
  {
    Graph g;
    Scope s(g);
    BatchMatMul(s, Placeholder(s, kFloat32, PartialShape({2, 3, 4})), Placeholder(s, kFloat32, PartialShape({3, 4, 6})));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("do not broadcast"), std::string::npos) << s.status().ToString();
  }
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat64, PartialShape::Unknown());
  Output y = Placeholder(s, kFloat64, PartialShape::Unknown());
  Output z = BatchMatMul(s, x, y);
  ASSERT_TRUE(s.ok());
  Session session(g);
  auto run = [&](const TensorShape& xs, const TensorShape& ys) {
    return session.Run({{x, Tensor(kFloat64, xs)}, {y, Tensor(kFloat64, ys)}}, {z}).status();
  };
  Status inner = run({2, 3, 4}, {2, 5, 6});
  EXPECT_EQ(inner.code(), Code::kInvalidArgument);
  EXPECT_NE(inner.message().find("x has shape [2,3,4], y has shape [2,5,6]"), std::string::npos) << inner.message();
  Status batch = run({2, 3, 4}, {3, 4, 6});
  EXPECT_EQ(batch.code(), Code::kInvalidArgument);
  EXPECT_NE(batch.message().find("do not broadcast"), std::string::npos) << batch.message();
  Status rank = run({4}, {4, 2});
  EXPECT_EQ(rank.code(), Code::kInvalidArgument);
  EXPECT_NE(rank.message().find("rank >= 2"), std::string::npos) << rank.message();
}

}  // namespace
}  // namespace tw
