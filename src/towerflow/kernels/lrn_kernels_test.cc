// LRN and LRNGrad (lrn_kernels.cc) against a reference computed in long
// double from the definition (std::pow), float and double, for the three
// forms of the power (beta 1, 0.5, other) and windows wider and narrower than
// the depth; LRNGrad against the derivative of that reference (a difference
// quotient in long double); rows split over 4 threads agree with 1 thread bit
// for bit; and the errors of bad ranks, shapes and radii.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

using Row = std::vector<long double>;

// One row of LRN by the definition.
Row Reference(const Row& x, const LRNOptions& o) {
  const int64_t d = static_cast<int64_t>(x.size());
  Row y(x.size());
  for (int64_t c = 0; c < d; ++c) {
    long double sum = 0;
    for (int64_t k = std::max<int64_t>(0, c - o.depth_radius); k < std::min<int64_t>(d, c + o.depth_radius + 1); ++k) {
      sum += x[static_cast<size_t>(k)] * x[static_cast<size_t>(k)];
    }
    y[static_cast<size_t>(c)] =
        x[static_cast<size_t>(c)] / std::pow(static_cast<long double>(o.bias) + o.alpha * sum, (long double)o.beta);
  }
  return y;
}

Tensor Values(DataType dtype, const TensorShape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == kFloat32) t.data<float>()[i] = static_cast<float>(u(rng));
    if (dtype == kFloat64) t.data<double>()[i] = u(rng);
  }
  return t;
}

long double At(const Tensor& t, int64_t i) {
  return t.dtype() == kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
}

struct Form {
  std::string name;
  LRNOptions options;
};

std::vector<Form> Forms() {
  return {{"TF's defaults (radius 5, beta 0.5)", {}},
          {"beta 1", {2, 1.5, 0.25, 1.0}},
          {"beta 0.75, radius 1", {1, 2.0, 0.1, 0.75}},
          {"radius 0", {0, 1.0, 1.0, 0.5}}};
}

TEST(LrnKernelsTest, MatchesTheDefinition) {
  for (DataType dtype : {kFloat32, kFloat64}) {
    for (const Form& f : Forms()) {
      for (const TensorShape& shape : {TensorShape{2, 3, 2, 7}, TensorShape{1, 1, 1, 33}, TensorShape{1, 2, 2, 1}}) {
        SCOPED_TRACE(f.name + " " + std::string(DataTypeName(dtype)) + " " + shape.ToString());
        Graph g;
        Scope s(g);
        const Tensor x = Values(dtype, shape, 7);
        auto r = Session(g).Run({LRN(s, Const(s, x), f.options)});
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        const int64_t d = shape.dim(3);
        for (int64_t row = 0; row < shape.num_elements() / d; ++row) {
          Row in;
          for (int64_t c = 0; c < d; ++c) in.push_back(At(x, row * d + c));
          const Row want = Reference(in, f.options);
          for (int64_t c = 0; c < d; ++c) {
            const long double tol = (dtype == kFloat32 ? 1e-6L : 1e-14L) * (1 + std::fabs(want[static_cast<size_t>(c)]));
            EXPECT_NEAR(At((*r)[0], row * d + c), want[static_cast<size_t>(c)], tol) << "row " << row << " c " << c;
          }
        }
      }
    }
  }
}

TEST(LrnKernelsTest, GradientIsTheDerivativeOfTheDefinition) {
  for (const Form& f : Forms()) {
    SCOPED_TRACE(f.name);
    Graph g;
    Scope s(g);
    const TensorShape shape{1, 2, 1, 9};
    const Tensor x = Values(kFloat64, shape, 11), dy = Values(kFloat64, shape, 12);
    Output xc = Const(s, x);
    Output y = LRN(s, xc, f.options);
    Output dx(NodeBuilder(s, "LRNGrad")
                  .Input(Const(s, dy))
                  .Input(xc)
                  .Input(y)
                  .Attr("depth_radius", f.options.depth_radius)
                  .Attr("bias", f.options.bias)
                  .Attr("alpha", f.options.alpha)
                  .Attr("beta", f.options.beta)
                  .Finalize());
    auto r = Session(g).Run({dx});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const int64_t d = 9;
    for (int64_t row = 0; row < 2; ++row) {
      Row in;
      for (int64_t c = 0; c < d; ++c) in.push_back(At(x, row * d + c));
      for (int64_t k = 0; k < d; ++k) {
        // d/dx_k of sum_j dy_j y_j, by a central difference in long double.
        const long double h = 1e-6L;
        Row plus = in, minus = in;
        plus[static_cast<size_t>(k)] += h;
        minus[static_cast<size_t>(k)] -= h;
        const Row yp = Reference(plus, f.options), ym = Reference(minus, f.options);
        long double want = 0;
        for (int64_t j = 0; j < d; ++j) want += At(dy, row * d + j) * (yp[static_cast<size_t>(j)] - ym[static_cast<size_t>(j)]) / (2 * h);
        EXPECT_NEAR(At((*r)[0], row * d + k), want, 1e-7L * (1 + std::fabs(want))) << "row " << row << " k " << k;
      }
    }
  }
}

TEST(LrnKernelsTest, ThreadsChangeNoBit) {
  Graph g;
  Scope s(g);
  const TensorShape shape{8, 32, 32, 32};
  const Tensor x = Values(kFloat32, shape, 3), dy = Values(kFloat32, shape, 4);
  Output xc = Const(s, x);
  Output y = LRN(s, xc, {3, 1.0, 0.2, 0.75});
  Output dx(NodeBuilder(s, "LRNGrad").Input(Const(s, dy)).Input(xc).Input(y).Attr("depth_radius", int64_t{3})
                .Attr("bias", 1.0).Attr("alpha", 0.2).Attr("beta", 0.75).Finalize());
  SessionOptions one, four;
  one.intra_op_threads = 1;
  four.intra_op_threads = 4;
  auto a = Session(g, one).Run({y, dx});
  auto b = Session(g, four).Run({y, dx});
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(std::memcmp((*a)[i].raw_data(), (*b)[i].raw_data(), (*a)[i].TotalBytes()), 0) << "output " << i;
  }
}

TEST(LrnKernelsTest, Errors) {
  Graph g;
  Scope s(g);
  Output x3 = Placeholder(s, kFloat32, PartialShape::Unknown());
  Output lrn = LRN(s, x3);
  auto r = Session(g).Run({{x3, Values(kFloat32, {2, 3, 4}, 1)}}, {lrn});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("LRN: input must be 4-dimensional, got [2,3,4]"), std::string::npos)
      << r.status().ToString();

  Output a = Placeholder(s, kFloat32, PartialShape::Unknown());
  Output b = Placeholder(s, kFloat32, PartialShape::Unknown());
  Output grad(NodeBuilder(s, "LRNGrad").Input(a).Input(b).Input(b).Finalize());
  auto r2 = Session(g).Run({{a, Values(kFloat32, {1, 2, 2, 3}, 1)}, {b, Values(kFloat32, {1, 2, 2, 4}, 2)}}, {grad});
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("must be 4-dimensional of one shape"), std::string::npos)
      << r2.status().ToString();

  Output p = Placeholder(s, kFloat32, PartialShape({1, 1, 1, 3}));
  Output bad = LRN(s, p, {-1});
  auto r3 = Session(g).Run({{p, Values(kFloat32, {1, 1, 1, 3}, 1)}}, {bad});
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().message().find("depth_radius must be in [0, 2^31), got -1"), std::string::npos)
      << r3.status().ToString();
}

}  // namespace
}  // namespace tw
