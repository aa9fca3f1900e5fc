// MaxPool, MaxPoolGrad, MaxPoolGradGrad, AvgPool and AvgPoolGrad on the GPU
// (pool_cuda.cu) against the CPU kernels (pool_kernels.cc,
// avg_pool_kernels.cc), float and double: sizes 1, 7, 33 and 1000 in the batch, height, width and channels,
// overlapping and disjoint windows, SAME with symmetric and asymmetric padding,
// VALID, empty inputs, inputs full of ties (values in {-1, 0, 1}: the gradient
// must reach the first maximum of each window, as on the CPU), and the shape
// errors with the same codes. The kernels do the CPU twin's arithmetic in the
// CPU twin's order, so the results must be equal, not just close.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw {
namespace {

using parity::Case;

struct PoolCase {
  int64_t n, h, w, c, kh, kw, sh, sw;
  std::string padding;
};

int64_t OutSize(int64_t in, int64_t k, int64_t s, bool same) {
  return same ? (in + s - 1) / s : (in - k + s) / s;
}

std::string Describe(const PoolCase& c) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "input [" + s(c.n) + "," + s(c.h) + "," + s(c.w) + "," + s(c.c) + "] ksize " + s(c.kh) + "x" +
         s(c.kw) + " strides " + s(c.sh) + "x" + s(c.sw) + " " + c.padding;
}

Output PoolGrad(const Scope& s, const char* op, const Output& x, const Output& y, const Output& g,
                const PoolOptions& o) {
  return Output(NodeBuilder(s, op)
                    .Input(x)
                    .Input(y)
                    .Input(g)
                    .Attr("ksize", o.ksize)
                    .Attr("strides", o.strides)
                    .Attr("padding", o.padding)
                    .Finalize());
}

// A two-input window op (AvgPoolGrad: orig_input_shape, grad).
Output PoolGrad2(const Scope& s, const char* op, const Output& sizes, const Output& g, const PoolOptions& o) {
  return Output(NodeBuilder(s, op)
                    .Input(sizes)
                    .Input(g)
                    .Attr("ksize", o.ksize)
                    .Attr("strides", o.strides)
                    .Attr("padding", o.padding)
                    .Finalize());
}

// Values in {-1, 0, 1}: most windows hold tied maxima.
Tensor Ties(Tensor t) {
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (t.dtype() == kFloat32) t.data<float>()[i] = std::round(t.data<float>()[i]);
    if (t.dtype() == kFloat64) t.data<double>()[i] = std::round(t.data<double>()[i]);
  }
  return t;
}

// Inputs: x, the gradient of MaxPool's output, the gradient of MaxPoolGrad's
// output; outputs: MaxPool, MaxPoolGrad, MaxPoolGradGrad.
Case AllThree(DataType dtype, const PoolCase& pc, bool ties, std::mt19937_64& rng) {
  const bool same = pc.padding == "SAME";
  const TensorShape in{pc.n, pc.h, pc.w, pc.c};
  const TensorShape out{pc.n, OutSize(pc.h, pc.kh, pc.sh, same), OutSize(pc.w, pc.kw, pc.sw, same), pc.c};
  Case c;
  c.name =
      std::string(DataTypeName(dtype)) + " MaxPool and gradients, " + Describe(pc) + (ties ? ", ties" : "");
  Tensor x = parity::RandomTensor(dtype, in, rng);
  c.inputs = {ties ? Ties(x) : x, parity::RandomTensor(dtype, out, rng),
              parity::RandomTensor(dtype, in, rng)};
  const PoolOptions o{{1, pc.kh, pc.kw, 1}, {1, pc.sh, pc.sw, 1}, pc.padding};
  c.build = [o](const Scope& s, const std::vector<Output>& v) {
    Output y = MaxPool(s, v[0], o);
    return std::vector<Output>{y, PoolGrad(s, "MaxPoolGrad", v[0], y, v[1], o),
                               PoolGrad(s, "MaxPoolGradGrad", v[0], y, v[2], o)};
  };
  c.rtol = 0;
  c.atol = 0;
  return c;
}

// Inputs: x and the gradient of AvgPool's output; outputs: AvgPool and
// AvgPoolGrad (from x's shape as a constant, as the gradient builds it).
Case AvgBoth(DataType dtype, const PoolCase& pc, std::mt19937_64& rng) {
  const bool same = pc.padding == "SAME";
  const TensorShape in{pc.n, pc.h, pc.w, pc.c};
  const TensorShape out{pc.n, OutSize(pc.h, pc.kh, pc.sh, same), OutSize(pc.w, pc.kw, pc.sw, same), pc.c};
  Case c;
  c.name = std::string(DataTypeName(dtype)) + " AvgPool and AvgPoolGrad, " + Describe(pc);
  c.inputs = {parity::RandomTensor(dtype, in, rng), parity::RandomTensor(dtype, out, rng)};
  const PoolOptions o{{1, pc.kh, pc.kw, 1}, {1, pc.sh, pc.sw, 1}, pc.padding};
  const std::vector<int32_t> sizes = {static_cast<int32_t>(pc.n), static_cast<int32_t>(pc.h),
                                      static_cast<int32_t>(pc.w), static_cast<int32_t>(pc.c)};
  c.build = [o, sizes](const Scope& s, const std::vector<Output>& v) {
    Output grad = Output(NodeBuilder(s, "AvgPoolGrad")
                             .Input(Const(s, sizes))
                             .Input(v[1])
                             .Attr("ksize", o.ksize)
                             .Attr("strides", o.strides)
                             .Attr("padding", o.padding)
                             .Finalize());
    return std::vector<Output>{AvgPool(s, v[0], o), grad};
  };
  c.rtol = 0;  // the same sums in the same order, products rounded alike
  c.atol = 0;
  return c;
}

const std::vector<PoolCase>& Cases() {
  static const std::vector<PoolCase> k = {
      {1, 1, 1, 1, 1, 1, 1, 1, "SAME"},     {1, 1, 1, 1, 1, 1, 1, 1, "VALID"},
      {2, 7, 7, 3, 2, 2, 2, 2, "SAME"},      // odd total: one more pad at the end
      {2, 7, 7, 3, 3, 3, 2, 2, "VALID"},     // overlapping windows
      {2, 7, 7, 3, 3, 3, 2, 2, "SAME"},      // symmetric
      {1, 33, 33, 7, 3, 3, 1, 1, "SAME"},    // each input in 9 windows
      {3, 8, 9, 5, 2, 3, 1, 2, "SAME"},      // mixed
      {2, 5, 5, 33, 5, 5, 1, 1, "SAME"},     // windows mostly padding
      {1, 9, 9, 2, 1, 1, 3, 3, "SAME"},      // stride > window: skipped inputs
      {1, 1000, 1, 2, 7, 1, 3, 1, "SAME"},   // height 1000
      {2, 1, 1000, 3, 1, 4, 1, 3, "VALID"},  // width 1000
      {1000, 2, 2, 1, 2, 2, 2, 2, "VALID"},  // batch 1000
      {2, 4, 4, 1000, 2, 2, 2, 2, "SAME"},   // 1000 channels
  };
  return k;
}

void CheckCases(DataType dtype, bool ties) {
  parity::SeededRng rng;
  for (const PoolCase& pc : Cases()) parity::ExpectGpuMatchesCpu(AllThree(dtype, pc, ties, rng));
}

TEST(PoolCudaTest, AvgPoolAndGradient) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType dtype : {kFloat32, kFloat64}) {
    for (const PoolCase& pc : Cases()) parity::ExpectGpuMatchesCpu(AvgBoth(dtype, pc, rng));
    for (const PoolCase& pc : std::vector<PoolCase>{{0, 4, 4, 2, 2, 2, 2, 2, "SAME"}, {2, 4, 4, 0, 2, 2, 2, 2, "VALID"}}) {
      parity::ExpectGpuMatchesCpu(AvgBoth(dtype, pc, rng));
    }
  }
}

TEST(PoolCudaTest, FloatOddSizes) {
  TW_SKIP_WITHOUT_GPU();
  CheckCases(kFloat32, false);
}

TEST(PoolCudaTest, DoubleOddSizes) {
  TW_SKIP_WITHOUT_GPU();
  CheckCases(kFloat64, false);
}

TEST(PoolCudaTest, TiesGoToTheFirstMaximum) {
  TW_SKIP_WITHOUT_GPU();
  CheckCases(kFloat32, true);
  CheckCases(kFloat64, true);
}

TEST(PoolCudaTest, EmptyInputs) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType dtype : {kFloat32, kFloat64}) {
    for (const PoolCase& pc : std::vector<PoolCase>{{0, 4, 4, 2, 2, 2, 2, 2, "SAME"},
                                                    {2, 0, 4, 2, 2, 2, 2, 2, "SAME"},
                                                    {2, 4, 4, 0, 2, 2, 2, 2, "VALID"}}) {
      parity::ExpectGpuMatchesCpu(AllThree(dtype, pc, false, rng));
    }
  }
}

// Gradients whose shapes do not fit the pooling: errors only the kernels see
// (the shape functions check ranks only).
TEST(PoolCudaTest, ShapeErrorsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  const PoolOptions o;  // 2x2, stride 2, SAME
  for (DataType dtype : {kFloat32, kFloat64}) {
    auto rnd = [&](TensorShape s) { return parity::RandomTensor(dtype, s, rng); };
    struct Bad {
      const char* op;
      std::vector<TensorShape> shapes;  // orig_input, orig_output, grad
    };
    for (const Bad& b : std::vector<Bad>{{"MaxPoolGrad", {{1, 4, 4, 1}, {1, 2, 2, 1}, {1, 3, 3, 1}}},
                                         {"MaxPoolGrad", {{1, 4, 4, 1}, {1, 2, 3, 1}, {1, 2, 2, 1}}},
                                         {"MaxPoolGradGrad", {{1, 4, 4, 1}, {1, 2, 2, 1}, {1, 2, 2, 1}}},
                                         {"MaxPoolGradGrad", {{1, 4, 4, 2}, {1, 2, 2, 1}, {1, 4, 4, 2}}}}) {
      Case c;
      c.name = std::string(b.op) + " with shapes " + b.shapes[0].ToString() + ", " + b.shapes[1].ToString() +
               ", " + b.shapes[2].ToString();
      c.inputs = {rnd(b.shapes[0]), rnd(b.shapes[1]), rnd(b.shapes[2])};
      const char* op = b.op;
      c.build = [op, o](const Scope& s, const std::vector<Output>& v) {
        return std::vector<Output>{PoolGrad(s, op, v[0], v[1], v[2], o)};
      };
      parity::ExpectSameError(c);
    }
    // AvgPoolGrad: a gradient of another shape than the pooling's output, and
    // an orig_input_shape of 3 sizes (both fed: the shape function sees neither).
    for (const auto& [sizes, grad] :
         std::vector<std::pair<std::vector<int32_t>, TensorShape>>{{{1, 4, 4, 1}, {1, 3, 3, 1}},
                                                                  {{1, 4, 4}, {1, 2, 2, 1}}}) {
      Case c;
      c.name = "AvgPoolGrad into " + std::to_string(sizes.size()) + " sizes, grad " + grad.ToString();
      c.inputs = {Tensor::FromVector<int32_t>(sizes, {static_cast<int64_t>(sizes.size())}), rnd(grad)};
      c.build = [o](const Scope& s, const std::vector<Output>& v) {
        return std::vector<Output>{PoolGrad2(s, "AvgPoolGrad", v[0], v[1], o)};
      };
      parity::ExpectSameError(c, sizes.size() == 4 ? "AvgPoolGrad: grad has shape" : "must be 4 int32 sizes");
    }
  }
}

}  // namespace
}  // namespace tw
