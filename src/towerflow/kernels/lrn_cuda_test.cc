// LRN and LRNGrad on the GPU (lrn_cuda.cu) against the CPU kernels
// (lrn_kernels.cc), float and double: sizes 1, 7, 33 and 1000 in the depth,
// windows wider than the depth, radius 0, the three forms of the power (equal
// results for beta 1 and 0.5, which need no exp or log), an empty batch, and
// the shape errors with the same messages. Skips without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw {
namespace {

using parity::Case;

Case LrnAndGradient(DataType dtype, const TensorShape& shape, const LRNOptions& o, std::mt19937_64& rng) {
  Case c;
  c.name = std::string(DataTypeName(dtype)) + " LRN and LRNGrad " + shape.ToString() + " radius " +
           std::to_string(o.depth_radius) + " beta " + std::to_string(o.beta);
  c.inputs = {parity::RandomTensor(dtype, shape, rng, -2, 2), parity::RandomTensor(dtype, shape, rng)};
  c.build = [o](const Scope& s, const std::vector<Output>& v) {
    Output y = LRN(s, v[0], o);
    Output dx(NodeBuilder(s, "LRNGrad")
                  .Input(v[1])
                  .Input(v[0])
                  .Input(y)
                  .Attr("depth_radius", o.depth_radius)
                  .Attr("bias", o.bias)
                  .Attr("alpha", o.alpha)
                  .Attr("beta", o.beta)
                  .Finalize());
    return std::vector<Output>{y, dx};
  };
  const bool exact = o.beta == 1.0 || o.beta == 0.5;
  c.rtol = exact ? 0 : (dtype == kFloat32 ? 1e-5 : 1e-12);
  c.atol = exact ? 0 : (dtype == kFloat32 ? 1e-6 : 1e-14);
  return c;
}

TEST(LrnCudaTest, MatchesTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  const std::vector<LRNOptions> forms = {{}, {2, 1.5, 0.25, 1.0}, {1, 2.0, 0.1, 0.75}, {0, 1.0, 1.0, 0.5}};
  for (DataType dtype : {kFloat32, kFloat64}) {
    for (const LRNOptions& o : forms) {
      for (int64_t depth : parity::OddSizes()) {
        parity::ExpectGpuMatchesCpu(LrnAndGradient(dtype, TensorShape{2, 3, 5, depth}, o, rng));
      }
      parity::ExpectGpuMatchesCpu(LrnAndGradient(dtype, TensorShape{0, 3, 5, 7}, o, rng));
    }
  }
}

TEST(LrnCudaTest, ShapeErrorsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  Case rank3{"LRN of a rank-3 input", {parity::RandomTensor(kFloat32, {2, 3, 4}, rng)},
             [](const Scope& s, const std::vector<Output>& v) { return std::vector<Output>{LRN(s, v[0])}; }};
  parity::ExpectSameError(rank3, "LRN: input must be 4-dimensional");
  Case shapes{"LRNGrad of two shapes",
              {parity::RandomTensor(kFloat32, {1, 2, 2, 3}, rng), parity::RandomTensor(kFloat32, {1, 2, 2, 4}, rng)},
              [](const Scope& s, const std::vector<Output>& v) {
                return std::vector<Output>{Output(NodeBuilder(s, "LRNGrad").Input(v[0]).Input(v[1]).Input(v[1]).Finalize())};
              }};
  parity::ExpectSameError(shapes, "must be 4-dimensional of one shape");
}

}  // namespace
}  // namespace tw
