// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter on the GPU (cuDNN,
// conv_cuda.cu) against their CPU twins (conv_kernels.cc), float32 (the only
// GPU dtype): sizes 1, 7, 33 and 1000 in every dimension that matters (batch,
// height, width, channels, filters), strides, SAME with symmetric and with
// asymmetric padding (odd totals, the explicit-padding path), VALID, empty
// dimensions (zeros where the sum is empty), and the checks that only the
// kernels can make (sizes given as tensors) with the same error codes.
// The three ops run in one graph, the backprops fed by the forward's shapes.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

using parity::Case;

struct ConvCase {
  int64_t n, h, w, c, kh, kw, o, sh, sw;
  std::string padding;
};

int64_t OutSize(int64_t in, int64_t k, int64_t s, bool same) {
  return same ? (in + s - 1) / s : (in - k + s) / s;
}

std::string Describe(const ConvCase& c) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "input [" + s(c.n) + "," + s(c.h) + "," + s(c.w) + "," + s(c.c) + "] filter [" + s(c.kh) + "," +
         s(c.kw) + "," + s(c.c) + "," + s(c.o) + "] strides " + s(c.sh) + "x" + s(c.sw) + " " + c.padding;
}

Tensor Sizes(std::vector<int32_t> v) { return Tensor::Vec<int32_t>(v); }

Output Backprop(const Scope& s, const char* op, const Output& a, const Output& b, const Output& dy,
                const std::vector<int64_t>& strides, const std::string& padding) {
  return Output(NodeBuilder(s, op)
                    .Input(a)
                    .Input(b)
                    .Input(dy)
                    .Attr("strides", strides)
                    .Attr("padding", padding)
                    .Finalize());
}

// Inputs: x, w, dy, input_sizes, filter_sizes; outputs: Conv2D, its input and
// filter gradients.
Case AllThree(const ConvCase& cc, std::mt19937_64& rng) {
  const bool same = cc.padding == "SAME";
  const int64_t oh = OutSize(cc.h, cc.kh, cc.sh, same), ow = OutSize(cc.w, cc.kw, cc.sw, same);
  Case c;
  c.name = "float Conv2D and backprops, " + Describe(cc);
  c.inputs = {parity::RandomTensor(kFloat32, TensorShape{cc.n, cc.h, cc.w, cc.c}, rng),
              parity::RandomTensor(kFloat32, TensorShape{cc.kh, cc.kw, cc.c, cc.o}, rng),
              parity::RandomTensor(kFloat32, TensorShape{cc.n, oh, ow, cc.o}, rng),
              Sizes({int32_t(cc.n), int32_t(cc.h), int32_t(cc.w), int32_t(cc.c)}),
              Sizes({int32_t(cc.kh), int32_t(cc.kw), int32_t(cc.c), int32_t(cc.o)})};
  const std::vector<int64_t> strides = {1, cc.sh, cc.sw, 1};
  const std::string padding = cc.padding;
  c.build = [strides, padding](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{Conv2D(s, in[0], in[1], {strides, padding}),
                               Backprop(s, "Conv2DBackpropInput", in[3], in[1], in[2], strides, padding),
                               Backprop(s, "Conv2DBackpropFilter", in[0], in[4], in[2], strides, padding)};
  };
  // Each output element sums `terms` products of values in [-1, 1] in another
  // order on each device, and cuDNN may use FFT or Winograd transforms (errors
  // of about 1e-4 of the magnitude): this bound is far above those and far
  // below a misplaced or missing product (off by O(0.1) or more).
  const int64_t terms = std::max({cc.kh * cc.kw * cc.c, cc.kh * cc.kw * cc.o, cc.n * oh * ow, int64_t{1}});
  c.rtol = 1e-3;
  c.atol = 1e-4 + 5e-6 * static_cast<double>(terms);
  return c;
}

void CheckAll(const std::vector<ConvCase>& cases) {
  parity::SeededRng rng;
  for (const ConvCase& cc : cases) parity::ExpectGpuMatchesCpu(AllThree(cc, rng));
}

TEST(ConvCudaTest, OddSizesAndPaddings) {
  TW_SKIP_WITHOUT_GPU();
  CheckAll({
      {1, 1, 1, 1, 1, 1, 1, 1, 1, "SAME"},  // size 1 everywhere
      {1, 1, 1, 1, 1, 1, 1, 1, 1, "VALID"},
      {2, 7, 7, 3, 3, 3, 5, 1, 1, "SAME"},   // symmetric (total 2)
      {2, 7, 6, 3, 2, 2, 4, 1, 1, "SAME"},   // odd totals: explicit padding
      {3, 7, 7, 2, 3, 3, 7, 2, 2, "SAME"},   // stride 2, symmetric
      {1, 8, 8, 2, 3, 3, 3, 2, 2, "SAME"},   // stride 2, odd total
      {2, 9, 8, 2, 4, 2, 3, 3, 2, "SAME"},   // even filter, mixed strides
      {2, 5, 5, 3, 3, 3, 33, 3, 3, "SAME"},  // stride = filter, odd total
      {1, 9, 9, 2, 1, 1, 3, 3, 3, "SAME"},   // stride > filter: no padding
      {3, 6, 7, 2, 2, 5, 3, 1, 3, "VALID"},
      {2, 7, 6, 3, 3, 3, 4, 2, 2, "VALID"},   // strides that skip the last rows
      {1, 7, 7, 7, 7, 7, 7, 1, 1, "VALID"},   // a 1x1 output
      {2, 33, 33, 1, 5, 5, 7, 1, 1, "SAME"},  // the tutorial's first layer, odd
      {1, 33, 33, 33, 3, 3, 33, 2, 2, "SAME"},
      {2, 5, 5, 1000, 1, 1, 3, 1, 1, "SAME"},   // 1000 channels, pointwise
      {1, 3, 3, 7, 3, 3, 1000, 1, 1, "SAME"},   // 1000 filters
      {1000, 1, 1, 1, 1, 1, 1, 1, 1, "VALID"},  // batch 1000
      {7, 1, 1000, 1, 1, 7, 3, 1, 1, "SAME"},   // width 1000
      {3, 1000, 1, 2, 7, 1, 3, 2, 1, "SAME"},   // height 1000, odd total
  });
}

// The CPU's values with the fastest timed algorithms (the default: the run
// times the candidates, then uses the fastest) and with cuDNN's heuristic
// order (SessionOptions::cudnn_autotune off), on the CNN's layer shapes too.
TEST(ConvCudaTest, TimedAndHeuristicAlgorithmsAgreeWithTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (const ConvCase& cc : std::vector<ConvCase>{{2, 7, 6, 3, 2, 2, 4, 1, 1, "SAME"},
                                                  {2, 33, 33, 1, 5, 5, 32, 1, 1, "SAME"},
                                                  {4, 14, 14, 32, 5, 5, 64, 1, 1, "SAME"}}) {
    const Case c = AllThree(cc, rng);
    Status status;
    const std::vector<Tensor> cpu = parity::RunOn(c, parity::kCpu, &status);
    ASSERT_TRUE(status.ok()) << status.ToString();
    for (bool autotune : {true, false}) {
      SessionOptions options = parity::ParitySessionOptions();
      options.cudnn_autotune = autotune;
      const std::vector<Tensor> gpu = parity::RunOn(c, parity::kGpu, &status, /*unknown_shapes=*/false, options);
      ASSERT_TRUE(status.ok()) << c.name << ": " << status.ToString();
      ASSERT_EQ(gpu.size(), cpu.size());
      for (size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_TRUE(parity::Near(gpu[i], cpu[i], c.rtol, c.atol))
            << c.name << " autotune " << autotune << ", output " << i;
      }
    }
  }
}

// Conv2D -> BiasAddRelu fused on the GPU (cudnnConvolutionBiasActivationForward)
// against the CPU's fused twin: the CNN's layers, asymmetric padding, a
// stride, no input channel (every sum empty: the rectified bias); and the GPU
// plan runs the pair as one item.
TEST(ConvCudaTest, FusedConvBiasReluMatchesTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (const ConvCase& cc : std::vector<ConvCase>{{2, 28, 28, 1, 5, 5, 32, 1, 1, "SAME"},
                                                  {2, 14, 14, 32, 5, 5, 64, 1, 1, "SAME"},
                                                  {2, 7, 6, 3, 2, 2, 4, 1, 1, "SAME"},
                                                  {3, 7, 7, 2, 3, 3, 7, 2, 2, "VALID"},
                                                  {2, 5, 5, 0, 3, 3, 4, 1, 1, "SAME"}}) {
    Case c;
    c.name = "Conv2D+BiasAddRelu, " + Describe(cc);
    c.inputs = {parity::RandomTensor(kFloat32, TensorShape{cc.n, cc.h, cc.w, cc.c}, rng),
                parity::RandomTensor(kFloat32, TensorShape{cc.kh, cc.kw, cc.c, cc.o}, rng),
                parity::RandomTensor(kFloat32, TensorShape{cc.o}, rng)};
    const std::vector<int64_t> strides = {1, cc.sh, cc.sw, 1};
    const std::string padding = cc.padding;
    c.build = [strides, padding](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{BiasAddRelu(s, Conv2D(s, in[0], in[1], {strides, padding}), in[2])};
    };
    const int64_t terms = std::max<int64_t>(cc.kh * cc.kw * cc.c, 1);
    c.rtol = 1e-3;
    c.atol = 1e-4 + 5e-6 * static_cast<double>(terms);
    parity::ExpectGpuMatchesCpu(c);
  }
  // The plan.
  Graph graph;
  Scope s = Scope(graph).WithDevice(parity::kGpu);
  Output x = Const(s, parity::RandomTensor(kFloat32, TensorShape{2, 8, 8, 3}, rng));
  Output w = Const(s, parity::RandomTensor(kFloat32, TensorShape{3, 3, 3, 4}, rng));
  Output b = Const(s, parity::RandomTensor(kFloat32, TensorShape{4}, rng));
  Output y = BiasAddRelu(s, Conv2D(s, x, w, {{1, 1, 1, 1}, "SAME"}), b);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(graph, parity::ParitySessionOptions());
  EXPECT_EQ(parity::FusedItems(session, {y}), 1) << "Conv2D and BiasAddRelu as one item";
  auto out = session.Run({y});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
}

// Empty batches, images, channels and filters: empty outputs, or zeros where a
// sum is empty (new GPU memory is NaN-poisoned, so an unwritten zero fails).
TEST(ConvCudaTest, EmptyDimensions) {
  TW_SKIP_WITHOUT_GPU();
  CheckAll({
      {0, 5, 5, 3, 3, 3, 4, 1, 1, "SAME"},
      {2, 0, 5, 3, 3, 3, 4, 1, 1, "SAME"},
      {2, 5, 5, 0, 3, 3, 4, 1, 1, "SAME"},  // no input channel: Conv2D gives zeros
      {2, 5, 5, 3, 3, 3, 0, 1, 1, "SAME"},  // no filter: empty output, zero input gradient
  });
}

// A backprop alone with the given sizes: errors only the kernels can see,
// since the sizes are fed values.
Case BackpropOnly(const char* op, std::vector<Tensor> inputs, const std::string& padding) {
  Case c;
  c.name = std::string(op) + " error case";
  c.inputs = std::move(inputs);
  // Inputs in the op's order: (input_sizes, filter, dy) or (input, filter_sizes, dy).
  c.build = [op, padding](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{Backprop(s, op, in[0], in[1], in[2], {1, 1, 1, 1}, padding)};
  };
  return c;
}

TEST(ConvCudaTest, KernelErrorsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  auto rnd = [&](TensorShape s) { return parity::RandomTensor(kFloat32, s, rng); };
  // out_backprop of the wrong shape (2 channels for 4 filters).
  parity::ExpectSameError(BackpropOnly("Conv2DBackpropInput",
                                       {Sizes({1, 5, 5, 3}), rnd({3, 3, 3, 4}), rnd({1, 5, 5, 2})}, "SAME"));
  parity::ExpectSameError(BackpropOnly("Conv2DBackpropFilter",
                                       {rnd({1, 5, 5, 3}), Sizes({3, 3, 3, 4}), rnd({1, 4, 5, 4})}, "SAME"));
  // input_sizes whose channels are not the filter's.
  parity::ExpectSameError(BackpropOnly("Conv2DBackpropInput",
                                       {Sizes({1, 5, 5, 2}), rnd({3, 3, 3, 4}), rnd({1, 5, 5, 4})}, "SAME"));
  // A VALID window larger than the input.
  parity::ExpectSameError(BackpropOnly("Conv2DBackpropFilter",
                                       {rnd({1, 2, 2, 3}), Sizes({3, 3, 3, 4}), rnd({1, 1, 1, 4})}, "VALID"));
  // A negative size.
  parity::ExpectSameError(BackpropOnly("Conv2DBackpropInput",
                                       {Sizes({1, -5, 5, 3}), rnd({3, 3, 3, 4}), rnd({1, 5, 5, 4})}, "SAME"));
}

}  // namespace
}  // namespace tw
