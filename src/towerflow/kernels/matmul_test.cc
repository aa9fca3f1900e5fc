// MatMul (matmul_kernels.cc): hand-computed products for every transpose
// combination, shape errors at build and run time, K = 0, and large products
// split over intra-op threads (by rows and by columns) against a plain triple
// loop, on oneDNN and on OpenBLAS; oneDNN's GEMM on strided operands.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/internal/dnnl_matmul.h"
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

// [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]], with the
// operands stored transposed where the options say so.
TEST(MatMulTest, EveryTransposeCombination) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, at = {1, 4, 2, 5, 3, 6};
  const std::vector<float> b = {7, 8, 9, 10, 11, 12}, bt = {7, 9, 11, 8, 10, 12};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("transpose_a=") + (ta ? "1" : "0") + " transpose_b=" + (tb ? "1" : "0"));
      Graph g;
      Scope s(g);
      Output A = Const(s, ta ? at : a, ta ? TensorShape{3, 2} : TensorShape{2, 3});
      Output B = Const(s, tb ? bt : b, tb ? TensorShape{2, 3} : TensorShape{3, 2});
      Output c = MatMul(s, A, B, {ta, tb});
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      EXPECT_EQ(c.shape(), PartialShape({2, 2}));
      Tensor z = Eval(g, c);
      EXPECT_EQ(z.shape(), TensorShape({2, 2}));
      EXPECT_EQ(z.ToVector<float>(), (std::vector<float>{58, 64, 139, 154}));
    }
  }
}

TEST(MatMulTest, Double) {
  Graph g;
  Scope s(g);
  Output a = Const(s, Tensor::FromVector<double>({1.5, -2}, {1, 2}));
  Output b = Const(s, Tensor::FromVector<double>({2, 4, 0.25, 1}, {2, 2}));
  Tensor z = Eval(g, MatMul(s, a, b));
  EXPECT_EQ(z.ToVector<double>(), (std::vector<double>{2.5, 4}));
}

TEST(MatMulTest, InnerDimensionMismatchAtBuildTime) {
  Graph g;
  Scope s(g);
  Output a = Placeholder(s, kFloat32, PartialShape({2, 3}));
  Output b = Placeholder(s, kFloat32, PartialShape({4, 2}));
  EXPECT_FALSE(MatMul(s, a, b).valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_NE(s.status().message().find("[2,3]"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("[4,2]"), std::string::npos) << s.status().message();
}

TEST(MatMulTest, TransposedShapesAreChecked) {
  Graph g;
  Scope s(g);
  Output a = Placeholder(s, kFloat32, PartialShape({3, 2}));
  Output b = Placeholder(s, kFloat32, PartialShape({3, 4}));
  EXPECT_FALSE(MatMul(s, a, b).valid());  // [3,2] x [3,4]: 2 vs 3
  Graph g2;
  Scope s2(g2);
  Output a2 = Placeholder(s2, kFloat32, PartialShape({3, 2}));
  Output b2 = Placeholder(s2, kFloat32, PartialShape({-1, 4}));
  Output c = MatMul(s2, a2, b2, {true, false});  // [2,3] x [?,4]
  ASSERT_TRUE(s2.ok()) << s2.status().ToString();
  EXPECT_EQ(c.shape(), PartialShape({2, 4}));
}

TEST(MatMulTest, RankMustBeTwo) {
  Graph g;
  Scope s(g);
  Output a = Placeholder(s, kFloat32, PartialShape({2, 3, 4}));
  Output b = Placeholder(s, kFloat32, PartialShape({4, 2}));
  EXPECT_FALSE(MatMul(s, a, b).valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
}

TEST(MatMulTest, MismatchAtRunTime) {
  Graph g;
  Scope s(g);
  Output a = Placeholder(s, kFloat32);
  Output b = Placeholder(s, kFloat32);
  Output c = MatMul(s, a, b);
  ASSERT_TRUE(s.ok());
  Session sess(g);
  auto r = sess.Run({{a, Tensor(kFloat32, {2, 3})}, {b, Tensor(kFloat32, {4, 5})}}, {c});
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("[2,3]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("[4,5]"), std::string::npos) << r.status().message();
  auto r3 = sess.Run({{a, Tensor(kFloat32, {2, 3, 1})}, {b, Tensor(kFloat32, {3, 5})}}, {c});
  EXPECT_EQ(r3.status().code(), Code::kInvalidArgument);
}

TEST(MatMulTest, EmptyInnerDimensionGivesZeros) {
  Graph g;
  Scope s(g);
  Output a = Const(s, Tensor::FromVector<float>({}, {2, 0}));
  Output b = Const(s, Tensor::FromVector<float>({}, {0, 3}));
  Tensor z = Eval(g, MatMul(s, a, b));
  EXPECT_EQ(z.shape(), TensorShape({2, 3}));
  EXPECT_EQ(z.ToVector<float>(), (std::vector<float>(6, 0.0f)));
}

// C = op(A) op(B) by the definition, in double.
std::vector<double> Reference(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                              int64_t k, int64_t n, bool ta, bool tb) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) {
        const double av = a[static_cast<size_t>(ta ? p * m + i : i * k + p)];
        const double bv = b[static_cast<size_t>(tb ? j * k + p : p * n + j)];
        c[static_cast<size_t>(i * n + j)] += av * bv;
      }
  return c;
}

// Odd sizes, not multiples of the 16-row blocks; M > N splits rows, M < N
// splits columns. On oneDNN (float's default where it is built in) and on
// OpenBLAS (TOWERFLOW_MATMUL=openblas), on one thread and on four.
void CheckShardedMatchesReference() {
  struct Dims {
    int64_t m, k, n;
  };
  for (Dims d : {Dims{301, 67, 33}, Dims{17, 53, 299}, Dims{100, 784, 256}}) {
    std::vector<float> a(static_cast<size_t>(d.m * d.k)), b(static_cast<size_t>(d.k * d.n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int64_t>(i * 7 % 13) - 6) / 8;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int64_t>(i * 5 % 11) - 5) / 4;
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(testing::Message() << d.m << "x" << d.k << "x" << d.n << " ta=" << ta << " tb=" << tb);
        Graph g;
        Scope s(g);
        Output A = Const(s, a, ta ? TensorShape{d.k, d.m} : TensorShape{d.m, d.k});
        Output B = Const(s, b, tb ? TensorShape{d.n, d.k} : TensorShape{d.k, d.n});
        const Output c = MatMul(s, A, B, {ta, tb});
        const std::vector<double> want = Reference(a, b, d.m, d.k, d.n, ta, tb);
        for (int threads : {1, 4}) {
          Tensor z = Eval(g, c, threads);
          ASSERT_EQ(z.shape(), TensorShape({d.m, d.n}));
          double max_err = 0;
          for (size_t i = 0; i < want.size(); ++i) {
            max_err = std::max(max_err, std::fabs(want[i] - z.data<float>()[i]));
          }
          EXPECT_LT(max_err, 1e-3) << threads << " threads";
        }
      }
    }
  }
}

TEST(MatMulTest, ShardedMatchesReference) { CheckShardedMatchesReference(); }

TEST(MatMulTest, ShardedMatchesReferenceOnOpenBlas) {
  ASSERT_EQ(0, setenv("TOWERFLOW_MATMUL", "openblas", 1));
  EXPECT_FALSE(dnnl_matmul::Enabled());
  CheckShardedMatchesReference();
  ASSERT_EQ(0, unsetenv("TOWERFLOW_MATMUL"));
}

// oneDNN called directly where it is built in: operands inside larger
// row-major buffers (leading dimensions above the sizes, as MatMul's column
// shards), every transpose, and more shapes than one thread caches, so the
// cache starts over and rebuilds.
TEST(MatMulTest, OneDnnGemmOnStridedOperands) {
  if (!dnnl_matmul::Enabled()) GTEST_SKIP() << "oneDNN is not built in";
  const int64_t lda_pad = 3, ldb_pad = 5, ldc_pad = 2;
  for (int round = 0; round < 2; ++round) {
    for (int64_t shape = 0; shape < dnnl_matmul::kCachedShapesPerThread / 4 + 3; ++shape) {
      const int64_t m = 1 + shape % 7, n = 2 + shape % 11, k = 3 + shape;
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          SCOPED_TRACE(testing::Message() << m << "x" << k << "x" << n << " ta=" << ta << " tb=" << tb);
          const int64_t lda = (ta ? m : k) + lda_pad, ldb = (tb ? k : n) + ldb_pad, ldc = n + ldc_pad;
          std::vector<float> a(static_cast<size_t>((ta ? k : m) * lda)), b(static_cast<size_t>((tb ? n : k) * ldb));
          for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int64_t>(i * 7 % 13) - 6) / 8;
          for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int64_t>(i * 5 % 11) - 5) / 4;
          std::vector<float> c(static_cast<size_t>(m * ldc), -99.0f);
          ASSERT_TRUE(dnnl_matmul::Gemm(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc));
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < ldc; ++j) {
              const float got = c[static_cast<size_t>(i * ldc + j)];
              if (j >= n) {  // past the row: untouched
                EXPECT_EQ(got, -99.0f);
                continue;
              }
              double want = 0;
              for (int64_t p = 0; p < k; ++p) {
                want += static_cast<double>(a[static_cast<size_t>(ta ? p * lda + i : i * lda + p)]) *
                        b[static_cast<size_t>(tb ? j * ldb + p : p * ldb + j)];
              }
              EXPECT_NEAR(got, want, 1e-3) << i << "," << j;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tw
