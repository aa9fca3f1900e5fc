// Element-wise math kernels (cwise_binary.cc, cwise_unary.cc, AddN) against
// hand-computed values, every broadcasting form, and the errors of bad shapes
// and integer division by zero; the power-of-two divisor that divides as a
// multiplication against IEEE division, bit for bit.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "towerflow/core/denormal.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/internal/exact_reciprocal.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

// Runs `out` (feeding `feeds`) and returns its value; fails the test on error.
Tensor Eval(Graph& g, const Output& out, const FeedList& feeds = {}, int intra_threads = 1) {
  SessionOptions opts;
  opts.intra_op_threads = intra_threads;
  Session sess(g, opts);
  auto r = sess.Run(feeds, {out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0] : Tensor();
}

Status RunStatus(Graph& g, const Output& out, const FeedList& feeds) {
  Session sess(g);
  return sess.Run(feeds, {out}).status();
}

Output ConstF(const Scope& s, std::vector<float> v, TensorShape shape) {
  return Const(s, Tensor::FromVector<float>(v, shape));
}
template <typename T>
Output ConstT(const Scope& s, std::vector<T> v, TensorShape shape) {
  return Const(s, Tensor::FromVector<T>(v, shape));
}

TEST(CwiseBinaryTest, SameShape) {
  Graph g;
  Scope s(g);
  Output x = ConstF(s, {1, 2, 3, 4, 5, 6}, {2, 3});
  Output y = ConstF(s, {10, 20, 30, 40, 50, 60}, {2, 3});
  Tensor add = Eval(g, Add(s, x, y));
  EXPECT_EQ(add.shape(), TensorShape({2, 3}));
  EXPECT_EQ(add.ToVector<float>(), (std::vector<float>{11, 22, 33, 44, 55, 66}));
  EXPECT_EQ(Eval(g, Sub(s, x, y)).ToVector<float>(), (std::vector<float>{-9, -18, -27, -36, -45, -54}));
  EXPECT_EQ(Eval(g, Mul(s, x, y)).ToVector<float>(), (std::vector<float>{10, 40, 90, 160, 250, 360}));
  EXPECT_EQ(Eval(g, Div(s, y, x)).ToVector<float>(), (std::vector<float>{10, 10, 10, 10, 10, 10}));
}

TEST(CwiseBinaryTest, ScalarOnEitherSide) {
  Graph g;
  Scope s(g);
  Output v = ConstF(s, {1, 2, 3}, {3});
  Output ten = Const(s, 10.0f);
  EXPECT_EQ(Eval(g, Sub(s, ten, v)).ToVector<float>(), (std::vector<float>{9, 8, 7}));
  EXPECT_EQ(Eval(g, Sub(s, v, ten)).ToVector<float>(), (std::vector<float>{-9, -8, -7}));
  EXPECT_EQ(Eval(g, Div(s, v, Const(s, 2.0f))).ToVector<float>(), (std::vector<float>{0.5f, 1, 1.5f}));
  Tensor scalar = Eval(g, Mul(s, ten, Const(s, 3.0f)));
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.scalar<float>(), 30.0f);
}

TEST(CwiseBinaryTest, RowVectorBroadcast) {
  Graph g;
  Scope s(g);
  Output x = ConstF(s, {1, 2, 3, 4, 5, 6}, {2, 3});
  Output b = ConstF(s, {100, 200, 300}, {3});
  EXPECT_EQ(Eval(g, Add(s, x, b)).ToVector<float>(), (std::vector<float>{101, 202, 303, 104, 205, 306}));
  EXPECT_EQ(Eval(g, Sub(s, b, x)).ToVector<float>(), (std::vector<float>{99, 198, 297, 96, 195, 294}));
}

TEST(CwiseBinaryTest, OuterBroadcast) {
  Graph g;
  Scope s(g);
  Output col = ConstF(s, {1, 2, 3}, {3, 1});
  Output row = ConstF(s, {1, 10, 100, 1000}, {1, 4});
  Tensor z = Eval(g, Mul(s, col, row));
  EXPECT_EQ(z.shape(), TensorShape({3, 4}));
  EXPECT_EQ(z.ToVector<float>(),
            (std::vector<float>{1, 10, 100, 1000, 2, 20, 200, 2000, 3, 30, 300, 3000}));
}

TEST(CwiseBinaryTest, DifferentRanks) {
  Graph g;
  Scope s(g);
  Output x = ConstF(s, {1, 2, 3, 4}, {2, 1, 2});
  Output y = ConstF(s, {10, 20, 30}, {3, 1});
  Tensor z = Eval(g, Add(s, x, y));
  EXPECT_EQ(z.shape(), TensorShape({2, 3, 2}));
  EXPECT_EQ(z.ToVector<float>(), (std::vector<float>{11, 12, 21, 22, 31, 32, 13, 14, 23, 24, 33, 34}));
}

TEST(CwiseBinaryTest, SizeOneDimensionsAndEmpty) {
  Graph g;
  Scope s(g);
  // [1,1,1] against [3]: the output is [1,1,3].
  Tensor z = Eval(g, Add(s, ConstF(s, {5}, {1, 1, 1}), ConstF(s, {1, 2, 3}, {3})));
  EXPECT_EQ(z.shape(), TensorShape({1, 1, 3}));
  EXPECT_EQ(z.ToVector<float>(), (std::vector<float>{6, 7, 8}));
  Tensor e = Eval(g, Add(s, ConstF(s, {}, {0, 3}), ConstF(s, {1, 2, 3}, {3})));
  EXPECT_EQ(e.shape(), TensorShape({0, 3}));
}

TEST(CwiseBinaryTest, IncompatibleShapesFailAtBuildTime) {
  Graph g;
  Scope s(g);
  Output z = Add(s, ConstF(s, {1, 2, 3, 4, 5, 6}, {2, 3}), ConstF(s, {1, 2, 3, 4}, {4}));
  EXPECT_FALSE(z.valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_NE(s.status().message().find("[2,3]"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("[4]"), std::string::npos) << s.status().message();
}

TEST(CwiseBinaryTest, IncompatibleShapesFailAtRunTime) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat32);
  Output y = Placeholder(s, kFloat32);
  Output z = Mul(s, x, y);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Status st = RunStatus(g, z, {{x, Tensor(kFloat32, {2, 3})}, {y, Tensor(kFloat32, {2})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("[2,3] vs [2]"), std::string::npos) << st.message();
}

TEST(CwiseBinaryTest, IntegerDivisionTruncatesAndRejectsZero) {
  Graph g;
  Scope s(g);
  Output x = ConstT<int32_t>(s, {7, -7, 7, -7, INT_MIN}, {5});
  Output y = ConstT<int32_t>(s, {2, 2, -2, -2, -1}, {5});
  EXPECT_EQ(Eval(g, Div(s, x, y)).ToVector<int32_t>(), (std::vector<int32_t>{3, -3, -3, 3, INT_MIN}));
  Output y0 = ConstT<int32_t>(s, {2, 0, 1, 1, 1}, {5});
  Status st = RunStatus(g, Div(s, x, y0), {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("division by zero"), std::string::npos) << st.message();
  // Float division by zero is IEEE: inf, not an error.
  Tensor inf = Eval(g, Div(s, Const(s, 1.0f), Const(s, 0.0f)));
  EXPECT_TRUE(std::isinf(inf.scalar<float>()));
}

TEST(CwiseBinaryTest, ReciprocalIsExactOnlyForPowersOfTwoWithNormalReciprocals) {
  using internal::ReciprocalIsExact;
  for (float d : {1.0f, 2.0f, 4.0f, 0.5f, -8.0f, std::ldexp(1.0f, 126), std::ldexp(1.0f, -126)}) {
    EXPECT_TRUE(ReciprocalIsExact(d)) << d;
  }
  for (float d : {3.0f, 10.0f, 0.0f, -0.0f, 1.5f, std::ldexp(1.0f, 127), std::ldexp(1.0f, -140),
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_FALSE(ReciprocalIsExact(d)) << d;
  }
  EXPECT_TRUE(ReciprocalIsExact(std::ldexp(1.0, 1000)));
  EXPECT_FALSE(ReciprocalIsExact(std::ldexp(1.0, 1023)));  // 2^-1023 is subnormal
  EXPECT_FALSE(ReciprocalIsExact(7.0));
}

// Div by a one-element divisor: every bit of the output is IEEE division's,
// whether the kernel divides or multiplies by the reciprocal (random bit
// patterns: subnormals, infinities, NaNs, overflowing and underflowing
// quotients), under the denormal mode of the engine's threads (denormal.h).
template <typename T, typename Bits>
void ExpectDivMatchesIeee(const std::vector<T>& divisors) {
  std::mt19937_64 rng(7);
  std::vector<T> x(4096);
  for (size_t i = 0; i < x.size(); ++i) {
    const Bits bits = static_cast<Bits>(rng());
    std::memcpy(&x[i], &bits, sizeof(T));
  }
  x[0] = std::numeric_limits<T>::denorm_min();
  x[1] = std::numeric_limits<T>::max();
  x[2] = -std::numeric_limits<T>::min();
  x[3] = std::numeric_limits<T>::infinity();
  for (T d : divisors) {
    Graph g;
    Scope s(g);
    Output xs = ConstT<T>(s, x, {static_cast<int64_t>(x.size())});
    // x as [4096] over a scalar divisor and as [64, 64] over a [1, 1] one.
    Tensor out = Eval(g, Div(s, xs, Const(s, d)), {}, 2);
    Tensor out2 = Eval(g, Div(s, Reshape(s, xs, {64, 64}), Const(s, Tensor::FromVector<T>({d}, {1, 1}))), {}, 2);
    ASSERT_EQ(out2.ToVector<T>().size(), x.size());
    ASSERT_EQ(out.NumElements(), static_cast<int64_t>(x.size()));
    const volatile T divisor = d;  // divided at run time, as IEEE divides
    ScopedFlushDenormal flush;
    for (size_t i = 0; i < x.size(); ++i) {
      const T want = x[i] / divisor;
      for (const T got : {out.data<T>()[i], out2.data<T>()[i]}) {
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << "x " << x[i] << " d " << d;
        } else {
          ASSERT_EQ(std::memcmp(&want, &got, sizeof(T)), 0) << "x " << x[i] << " d " << d << " got " << got;
        }
      }
    }
  }
}

TEST(CwiseBinaryTest, DivByAScalarIsIeeeDivisionBitForBit) {
  ExpectDivMatchesIeee<float, uint32_t>({2.0f, 4.0f, 0.5f, -8.0f, std::ldexp(1.0f, 120), std::ldexp(1.0f, -120),
                                         std::ldexp(1.0f, 127), 3.0f, 10.0f, 0.0f});
  ExpectDivMatchesIeee<double, uint64_t>({2.0, 0.25, -16.0, std::ldexp(1.0, 1000), 6.0});
}

// Python's // and %: integers round toward negative infinity and the
// remainder takes the divisor's sign; INT_MIN // -1 wraps, INT_MIN % -1 is 0
// (both trap in C++); floats as floor(x / y) and fmod moved by y.
TEST(CwiseBinaryTest, FloorDivAndFloorModFollowPython) {
  Graph g;
  Scope s(g);
  Output x = ConstT<int32_t>(s, {7, -7, 7, -7, 0, INT_MIN, 6}, {7});
  Output y = ConstT<int32_t>(s, {2, 2, -2, -2, 3, -1, 3}, {7});
  EXPECT_EQ(Eval(g, FloorDiv(s, x, y)).ToVector<int32_t>(), (std::vector<int32_t>{3, -4, -4, 3, 0, INT_MIN, 2}));
  EXPECT_EQ(Eval(g, FloorMod(s, x, y)).ToVector<int32_t>(), (std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0}));
  Output x64 = ConstT<int64_t>(s, {-1, 5}, {2});
  EXPECT_EQ(Eval(g, FloorDiv(s, x64, ConstT<int64_t>(s, {4}, {}))).ToVector<int64_t>(), (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ(Eval(g, FloorMod(s, x64, ConstT<int64_t>(s, {4}, {}))).ToVector<int64_t>(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(Eval(g, FloorDiv(s, ConstT<uint8_t>(s, {255, 7}, {2}), ConstT<uint8_t>(s, {2}, {1}))).ToVector<uint8_t>(),
            (std::vector<uint8_t>{127, 3}));
  for (auto fn : {&FloorDiv, &FloorMod}) {
    Status st = RunStatus(g, fn(s, x, ConstT<int32_t>(s, {1, 1, 0, 1, 1, 1, 1}, {7})), {});
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_NE(st.message().find("division by zero"), std::string::npos) << st.message();
  }
  Output xf = ConstF(s, {7.5f, -7.5f, 7.5f, -7.5f, 1.0f, 3.0f}, {6});
  Output yf = ConstF(s, {2, 2, -2, -2, 0.5f, 0}, {6});
  const std::vector<float> q = Eval(g, FloorDiv(s, xf, yf)).ToVector<float>();
  EXPECT_EQ(std::vector<float>(q.begin(), q.end() - 1), (std::vector<float>{3, -4, -4, 3, 2}));
  EXPECT_TRUE(std::isinf(q.back()));  // IEEE: 3 / 0, floored
  const std::vector<float> r = Eval(g, FloorMod(s, xf, yf)).ToVector<float>();
  EXPECT_EQ(std::vector<float>(r.begin(), r.end() - 1), (std::vector<float>{1.5f, 0.5f, -0.5f, -1.5f, 0}));
  EXPECT_TRUE(std::isnan(r.back()));  // fmod(3, 0)
}

// Integer powers by squaring (wrapping as the hardware's products would), a
// negative integer exponent refused as TF refuses it; floats are std::pow.
TEST(CwiseBinaryTest, PowOfIntegersAndFloats) {
  Graph g;
  Scope s(g);
  EXPECT_EQ(Eval(g, Pow(s, ConstT<int32_t>(s, {2, -3, 5, 0, 7, 3}, {6}), ConstT<int32_t>(s, {10, 3, 0, 0, 1, 21}, {6})))
                .ToVector<int32_t>(),
            (std::vector<int32_t>{1024, -27, 1, 1, 7, 1870418611}));  // 3^21 mod 2^32
  EXPECT_EQ(Eval(g, Pow(s, ConstT<int64_t>(s, {-2}, {1}), ConstT<int64_t>(s, {63}, {}))).ToVector<int64_t>(),
            (std::vector<int64_t>{INT64_MIN}));
  Status st = RunStatus(g, Pow(s, Const(s, int32_t{2}), ConstT<int32_t>(s, {1, -1}, {2})), {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("Integers to negative integer powers are not allowed"), std::string::npos)
      << st.message();
  const std::vector<double> p =
      Eval(g, Pow(s, ConstT<double>(s, {2, 10, -8, 0, 4}, {5}), ConstT<double>(s, {0.5, -2, 1.0 / 3, -1, 2.5}, {5})))
          .ToVector<double>();
  EXPECT_EQ(p[0], std::pow(2.0, 0.5));
  EXPECT_EQ(p[1], std::pow(10.0, -2.0));
  EXPECT_TRUE(std::isnan(p[2]));  // a negative base to a fractional power
  EXPECT_TRUE(std::isinf(p[3]));
  EXPECT_EQ(p[4], 32.0);
}

TEST(CwiseBinaryTest, IntegerTypes) {
  Graph g;
  Scope s(g);
  EXPECT_EQ(Eval(g, Add(s, ConstT<int64_t>(s, {1, 2}, {2}), ConstT<int64_t>(s, {10}, {1}))).ToVector<int64_t>(),
            (std::vector<int64_t>{11, 12}));
  // uint8 wraps modulo 256.
  EXPECT_EQ(Eval(g, Add(s, ConstT<uint8_t>(s, {200, 1}, {2}), ConstT<uint8_t>(s, {100, 2}, {2}))).ToVector<uint8_t>(),
            (std::vector<uint8_t>{44, 3}));
  EXPECT_EQ(Eval(g, Mul(s, ConstT<int32_t>(s, {3, -4}, {2}), Const(s, int32_t{5}))).ToVector<int32_t>(),
            (std::vector<int32_t>{15, -20}));
}

TEST(CwiseBinaryTest, MaximumAndComparisons) {
  Graph g;
  Scope s(g);
  Output x = ConstF(s, {1, 5, -2, 0}, {4});
  Output zero = Const(s, 0.0f);
  EXPECT_EQ(Eval(g, Maximum(s, x, zero)).ToVector<float>(), (std::vector<float>{1, 5, 0, 0}));
  Output y = ConstF(s, {1, 6, -3, 0}, {4});
  Tensor eq = Eval(g, Equal(s, x, y));
  EXPECT_EQ(eq.dtype(), kBool);
  EXPECT_EQ(eq.ToVector<bool>(), (std::vector<bool>{true, false, false, true}));
  Tensor ge = Eval(g, GreaterEqual(s, x, y));
  EXPECT_EQ(ge.dtype(), kBool);
  EXPECT_EQ(ge.ToVector<bool>(), (std::vector<bool>{true, false, true, true}));
  // Broadcasting comparison of int32 [2,1] against [3].
  Tensor ge2 = Eval(g, GreaterEqual(s, ConstT<int32_t>(s, {1, 3}, {2, 1}), ConstT<int32_t>(s, {0, 1, 2}, {3})));
  EXPECT_EQ(ge2.shape(), TensorShape({2, 3}));
  EXPECT_EQ(ge2.ToVector<bool>(), (std::vector<bool>{true, true, false, true, true, true}));
  Tensor eqb = Eval(g, Equal(s, Const(s, Tensor::Vec<bool>({true, false})), Const(s, Tensor::Scalar<bool>(false))));
  EXPECT_EQ(eqb.ToVector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(Eval(g, Maximum(s, ConstT<int64_t>(s, {-5, 9}, {2}), ConstT<int64_t>(s, {-7, 10}, {2}))).ToVector<int64_t>(),
            (std::vector<int64_t>{-5, 10}));
}

// A large broadcast run with intra-op threads: the sharded row loop must give
// the same values as the definition, z[i,j,k] = x[i,0,k] + y[j,0].
TEST(CwiseBinaryTest, LargeGeneralBroadcastSharded) {
  Graph g;
  Scope s(g);
  const int64_t I = 60, J = 50, K = 70;
  std::vector<float> xv(static_cast<size_t>(I * K)), yv(static_cast<size_t>(J));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 97);
  for (size_t j = 0; j < yv.size(); ++j) yv[j] = static_cast<float>(1000 * j);
  Tensor z = Eval(g, Add(s, ConstF(s, xv, {I, 1, K}), ConstF(s, yv, {J, 1})), {}, 4);
  ASSERT_EQ(z.shape(), TensorShape({I, J, K}));
  const float* p = z.data<float>();
  int64_t bad = 0;
  for (int64_t i = 0; i < I; ++i)
    for (int64_t j = 0; j < J; ++j)
      for (int64_t k = 0; k < K; ++k) bad += p[(i * J + j) * K + k] != xv[static_cast<size_t>(i * K + k)] + yv[static_cast<size_t>(j)];
  EXPECT_EQ(bad, 0);
  // Same-shape flat loop, sharded.
  Tensor sq = Eval(g, Mul(s, ConstF(s, xv, {I * K}), ConstF(s, xv, {I * K})), {}, 4);
  for (size_t i = 0; i < xv.size(); ++i) bad += sq.data<float>()[i] != xv[i] * xv[i];
  EXPECT_EQ(bad, 0);
}

TEST(CwiseUnaryTest, Values) {
  Graph g;
  Scope s(g);
  Output x = ConstF(s, {-2, 0, 0.5f, 3}, {4});
  EXPECT_EQ(Eval(g, Neg(s, x)).ToVector<float>(), (std::vector<float>{2, 0, -0.5f, -3}));
  EXPECT_EQ(Eval(g, Square(s, x)).ToVector<float>(), (std::vector<float>{4, 0, 0.25f, 9}));
  EXPECT_EQ(Eval(g, Sqrt(s, ConstF(s, {0, 4, 2.25f}, {3}))).ToVector<float>(), (std::vector<float>{0, 2, 1.5f}));
  Tensor e = Eval(g, Exp(s, ConstT<double>(s, {0, 1, -1}, {3})));
  EXPECT_DOUBLE_EQ(e.data<double>()[0], 1.0);
  EXPECT_NEAR(e.data<double>()[1], 2.718281828459045, 1e-15);
  EXPECT_NEAR(e.data<double>()[2], 0.36787944117144233, 1e-15);
  Tensor l = Eval(g, Log(s, ConstT<double>(s, {1, 2.718281828459045, 0.5}, {3})));
  EXPECT_DOUBLE_EQ(l.data<double>()[0], 0.0);
  EXPECT_NEAR(l.data<double>()[1], 1.0, 1e-15);
  EXPECT_NEAR(l.data<double>()[2], -0.6931471805599453, 1e-15);
  Tensor sg = Eval(g, Sigmoid(s, ConstF(s, {0, 2, -1000, 1000}, {4})));
  EXPECT_FLOAT_EQ(sg.data<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(sg.data<float>()[1], 0.880797077977882f);
  EXPECT_EQ(sg.data<float>()[2], 0.0f);  // no NaN from exp overflow
  EXPECT_EQ(sg.data<float>()[3], 1.0f);
  Tensor th = Eval(g, Tanh(s, ConstT<double>(s, {0, 0.5, -30}, {3})));
  EXPECT_DOUBLE_EQ(th.data<double>()[0], 0.0);
  EXPECT_NEAR(th.data<double>()[1], 0.46211715726000974, 1e-15);
  EXPECT_DOUBLE_EQ(th.data<double>()[2], -1.0);
}

TEST(CwiseUnaryTest, IntegerNegAndSquare) {
  Graph g;
  Scope s(g);
  EXPECT_EQ(Eval(g, Neg(s, ConstT<int32_t>(s, {5, -3, INT_MIN}, {3}))).ToVector<int32_t>(),
            (std::vector<int32_t>{-5, 3, INT_MIN}));
  EXPECT_EQ(Eval(g, Square(s, ConstT<int64_t>(s, {-3, 4}, {2}))).ToVector<int64_t>(), (std::vector<int64_t>{9, 16}));
}

TEST(CwiseUnaryTest, TranscendentalOpsRejectIntegers) {
  Graph g;
  Scope s(g);
  Output y = Exp(s, ConstT<int32_t>(s, {1}, {1}));
  EXPECT_FALSE(y.valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
}

TEST(AddNTest, SumsInputs) {
  Graph g;
  Scope s(g);
  Output a = ConstF(s, {1, 2, 3, 4}, {2, 2});
  Output b = ConstF(s, {10, 20, 30, 40}, {2, 2});
  Output c = ConstF(s, {100, 200, 300, 400}, {2, 2});
  Tensor z = Eval(g, AddN(s, {a, b, c}));
  EXPECT_EQ(z.shape(), TensorShape({2, 2}));
  EXPECT_EQ(z.ToVector<float>(), (std::vector<float>{111, 222, 333, 444}));
  EXPECT_EQ(Eval(g, AddN(s, {a})).ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(Eval(g, AddN(s, {ConstT<int32_t>(s, {1, 2}, {2}), ConstT<int32_t>(s, {3, 4}, {2})})).ToVector<int32_t>(),
            (std::vector<int32_t>{4, 6}));
}

TEST(AddNTest, ShapeMismatch) {
  Graph g;
  Scope s(g);
  Output bad = AddN(s, {ConstF(s, {1, 2}, {2}), ConstF(s, {1, 2, 3}, {3})});
  EXPECT_FALSE(bad.valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_NE(s.status().message().find("[3]"), std::string::npos) << s.status().message();

  Graph g2;
  Scope s2(g2);
  Output x = Placeholder(s2, kFloat32);
  Output y = Placeholder(s2, kFloat32);
  Output z = AddN(s2, {x, y});
  ASSERT_TRUE(s2.ok());
  Status st = RunStatus(g2, z, {{x, Tensor(kFloat32, {2})}, {y, Tensor(kFloat32, {2, 1})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("[2,1]"), std::string::npos) << st.message();
}

TEST(AddNTest, EmptyInputListIsAnError) {
  Graph g;
  Scope s(g);
  EXPECT_FALSE(AddN(s, {}).valid());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tw
