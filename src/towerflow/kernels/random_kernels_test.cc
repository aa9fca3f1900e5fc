// Random ops: ranges and moments of each distribution, TF's seeding rule, and
// the fans behind the Glorot initializer.
#include <gtest/gtest.h>

#include <cmath>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

struct Moments {
  double mean = 0, stddev = 0, min = 1e300, max = -1e300;
};

template <typename T>
Moments Measure(const Tensor& t) {
  Moments m;
  const T* x = t.data<T>();
  const int64_t n = t.NumElements();
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += x[i];
    sq += static_cast<double>(x[i]) * x[i];
    m.min = std::min<double>(m.min, x[i]);
    m.max = std::max<double>(m.max, x[i]);
  }
  m.mean = sum / static_cast<double>(n);
  m.stddev = std::sqrt(sq / static_cast<double>(n) - m.mean * m.mean);
  return m;
}

// 20000 samples of `op` of `dtype`, drawn with op seed 7.
Tensor Sample(Output (*op)(const Scope&, const Output&, DataType, int64_t), DataType dtype) {
  Graph g;
  Scope root(g);
  Output out = op(root, Const(root, std::vector<int32_t>{100, 200}), dtype, 7);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(out.shape(), (PartialShape{100, 200}));
  Session session(g);
  auto r = session.Run({out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0] : Tensor();
}

TEST(RandomKernels, UniformIsInUnitInterval) {
  // Uniform [0, 1): mean 1/2, standard deviation 1/sqrt(12) = 0.2887.
  Moments f = Measure<float>(Sample(RandomUniform, kFloat32));
  EXPECT_GE(f.min, 0.0);
  EXPECT_LT(f.max, 1.0);
  EXPECT_NEAR(f.mean, 0.5, 0.01);
  EXPECT_NEAR(f.stddev, 0.2887, 0.01);
  Moments d = Measure<double>(Sample(RandomUniform, kFloat64));
  EXPECT_GE(d.min, 0.0);
  EXPECT_LT(d.max, 1.0);
  EXPECT_NEAR(d.mean, 0.5, 0.01);
}

TEST(RandomKernels, StandardNormalMoments) {
  Moments m = Measure<float>(Sample(RandomStandardNormal, kFloat32));
  EXPECT_NEAR(m.mean, 0.0, 0.03);
  EXPECT_NEAR(m.stddev, 1.0, 0.03);
  EXPECT_LT(m.min, -3.0);  // 20000 draws reach past 3 sigma on both sides
  EXPECT_GT(m.max, 3.0);
}

TEST(RandomKernels, TruncatedNormalStaysWithinTwoSigma) {
  Moments m = Measure<double>(Sample(TruncatedNormal, kFloat64));
  EXPECT_GE(m.min, -2.0);
  EXPECT_LE(m.max, 2.0);
  EXPECT_NEAR(m.mean, 0.0, 0.03);
  // A standard normal truncated at +-2 has standard deviation 0.8796.
  EXPECT_NEAR(m.stddev, 0.8796, 0.02);
}

TEST(RandomKernels, SeedsFollowTensorFlow) {
  Graph unseeded;
  OpSeeds none = GetSeeds(unseeded, 0);
  EXPECT_EQ(none.seed, 0);
  EXPECT_EQ(none.seed2, 0);
  OpSeeds op_only = GetSeeds(unseeded, 5);
  EXPECT_EQ(op_only.seed, 87654321);
  EXPECT_EQ(op_only.seed2, 5);

  Graph seeded;
  seeded.set_seed(42);
  OpSeeds a = GetSeeds(seeded, 0), b = GetSeeds(seeded, 0), c = GetSeeds(seeded, 9);
  EXPECT_EQ(a.seed, 42);
  EXPECT_EQ(a.seed2, 1);
  EXPECT_EQ(b.seed2, 2);
  EXPECT_EQ(c.seed, 42);
  EXPECT_EQ(c.seed2, 9);

  // A computed (0, 0) would mean "nondeterministic": it is moved off zero.
  Graph zero;
  zero.set_seed(0);
  OpSeeds z = GetSeeds(zero, 2147483647);  // truncated to 0
  EXPECT_EQ(z.seed, 0);
  EXPECT_EQ(z.seed2, 2147483647);
}

TEST(RandomKernels, GeneratorAdvancesPerRunAndRepeatsPerSession) {
  Graph g;
  g.set_seed(3);
  Scope root(g);
  Output u = RandomUniform(root, Const(root, std::vector<int32_t>{8}), kFloat32);
  ASSERT_TRUE(root.ok());
  Session s1(g), s2(g);
  auto a1 = s1.Run({u}), a2 = s1.Run({u}), b1 = s2.Run({u});
  ASSERT_TRUE(a1.ok() && a2.ok() && b1.ok());
  EXPECT_NE((*a1)[0].ToVector<float>(), (*a2)[0].ToVector<float>());
  EXPECT_EQ((*a1)[0].ToVector<float>(), (*b1)[0].ToVector<float>());
}

TEST(RandomKernels, NegativeDimensionIsInvalidArgument) {
  Graph g;
  Scope root(g);
  Output shape = Placeholder(root, kInt32, PartialShape{2});
  Output u = RandomUniform(root, shape, kFloat32, 1);
  ASSERT_TRUE(root.ok());
  Session session(g);
  auto r = session.Run({{shape, Tensor::Vec<int32_t>({2, -3})}}, {u});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("RandomUniform"), std::string::npos) << r.status().message();
}

TEST(RandomKernels, FansAsTensorFlowComputesThem) {
  Fans scalar = ComputeFans(TensorShape{});
  EXPECT_EQ(scalar.fan_in, 1);
  EXPECT_EQ(scalar.fan_out, 1);
  Fans vec = ComputeFans(TensorShape{5});
  EXPECT_EQ(vec.fan_in, 5);
  EXPECT_EQ(vec.fan_out, 5);
  Fans dense = ComputeFans(TensorShape{784, 10});
  EXPECT_EQ(dense.fan_in, 784);
  EXPECT_EQ(dense.fan_out, 10);
  // A 3x3 convolution from 16 to 32 channels: receptive field 9.
  Fans conv = ComputeFans(TensorShape{3, 3, 16, 32});
  EXPECT_EQ(conv.fan_in, 144);
  EXPECT_EQ(conv.fan_out, 288);
}

}  // namespace
}  // namespace tw
