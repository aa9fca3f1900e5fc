// MatMul on the GPU (matmul_cuda.cu) against its CPU twin (matmul_kernels.cc):
// every (m, k, n) from the odd sizes with all four transpose combinations, in
// float and double; one 1000^3 product; empty dimensions (k == 0 gives zeros);
// TF32 on (SessionOptions.allow_tf32) with a looser tolerance; and the shape
// errors with the same codes. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw {
namespace {

using parity::Case;

std::string ShapeStr(int64_t m, int64_t k, int64_t n) {
  return "[" + std::to_string(m) + "," + std::to_string(k) + "] x [" + std::to_string(k) + "," +
         std::to_string(n) + "]";
}

struct Dims {
  int64_t m, k, n;
};

// Summation-order differences grow with k: about sqrt(k) roundings of partial
// sums of size ~sqrt(k) / 3 for uniform [-1, 1] inputs; this bound is far above
// them and far below a wrong element (off by O(1)).
void SetTolerance(Case* c, DataType dtype, int64_t max_k) {
  if (dtype == kFloat32) {
    c->rtol = 1e-4;
    c->atol = 1e-6 + 2e-6 * static_cast<double>(max_k);
  } else {
    c->rtol = 1e-10;
    c->atol = 1e-12;
  }
}

// One case (one session per device) for several products: for product j,
// outputs 4j .. 4j+3 are a b, a^T b, a b^T, a^T b^T, each from operands stored
// in the shape that transposition expects.
Case AllTransposesCase(DataType dtype, const std::vector<Dims>& products, std::mt19937_64& rng) {
  Case c;
  c.name = std::string(DataTypeName(dtype)) + " MatMul, outputs NN, TN, NT, TT of";
  int64_t max_k = 0;
  for (const Dims& d : products) {
    c.name += " " + ShapeStr(d.m, d.k, d.n) + ";";
    max_k = std::max(max_k, d.k);
    for (const TensorShape& s :
         {TensorShape{d.m, d.k}, TensorShape{d.k, d.n}, TensorShape{d.k, d.m}, TensorShape{d.n, d.k}}) {
      c.inputs.push_back(parity::RandomTensor(dtype, s, rng));
    }
  }
  c.build = [](const Scope& s, const std::vector<Output>& in) {
    std::vector<Output> outs;
    for (size_t j = 0; j + 3 < in.size(); j += 4) {
      const Output &a = in[j], &b = in[j + 1], &at = in[j + 2], &bt = in[j + 3];
      outs.push_back(MatMul(s, a, b));
      outs.push_back(MatMul(s, at, b, {.transpose_a = true}));
      outs.push_back(MatMul(s, a, bt, {.transpose_b = true}));
      outs.push_back(MatMul(s, at, bt, {.transpose_a = true, .transpose_b = true}));
    }
    return outs;
  };
  SetTolerance(&c, dtype, max_k);
  return c;
}

// Every (m, k, n) of the odd sizes but 1000^3, one case per (m, k).
void CheckOddSizes(DataType dtype) {
  parity::SeededRng rng;
  for (int64_t m : parity::OddSizes()) {
    for (int64_t k : parity::OddSizes()) {
      std::vector<Dims> products;
      for (int64_t n : parity::OddSizes()) {
        if (m == 1000 && k == 1000 && n == 1000) continue;  // once, in Float1000Cubed
        products.push_back({m, k, n});
      }
      parity::ExpectGpuMatchesCpu(AllTransposesCase(dtype, products, rng));
    }
  }
}

// BatchMatMulV2 against the CPU: the strided batched form (same batches, a
// matrix against a batch) and the per-matrix form (batch dimensions broadcast
// from both sides), every adjoint, float and double.
TEST(MatMulCudaTest, BatchMatMulBroadcastsAndAdjointsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType dtype : {kFloat32, kFloat64}) {
    struct Pair {
      TensorShape x, y;  // as stored without adjoints: x [..., M, K], y [..., K, N]
    };
    const std::vector<Pair> pairs = {{{3, 5, 7}, {3, 7, 4}},        {{5, 7}, {2, 3, 7, 4}},
                                     {{2, 1, 5, 7}, {1, 3, 7, 4}}, {{4, 1, 33, 17}, {3, 17, 9}},
                                     {{2, 0, 5, 7}, {1, 7, 4}},    {{2, 5, 0}, {2, 0, 3}}};
    for (const Pair& pr : pairs) {
      Case c;
      c.name = std::string(DataTypeName(dtype)) + " BatchMatMulV2 " + pr.x.ToString() + " x " + pr.y.ToString();
      auto swapped = [](const TensorShape& s) {
        std::vector<int64_t> d = s.dims();
        std::swap(d[d.size() - 1], d[d.size() - 2]);
        return TensorShape(d);
      };
      c.inputs = {parity::RandomTensor(dtype, pr.x, rng), parity::RandomTensor(dtype, pr.y, rng),
                  parity::RandomTensor(dtype, swapped(pr.x), rng), parity::RandomTensor(dtype, swapped(pr.y), rng)};
      c.build = [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{BatchMatMul(s, in[0], in[1]), BatchMatMul(s, in[2], in[1], true, false),
                                   BatchMatMul(s, in[0], in[3], false, true), BatchMatMul(s, in[2], in[3], true, true)};
      };
      SetTolerance(&c, dtype, pr.x.dim(pr.x.rank() - 1));
      parity::ExpectGpuMatchesCpu(c);
    }
  }
}

TEST(MatMulCudaTest, FloatOddSizesAllTransposes) {
  TW_SKIP_WITHOUT_GPU();
  CheckOddSizes(kFloat32);
}

TEST(MatMulCudaTest, DoubleOddSizesAllTransposes) {
  TW_SKIP_WITHOUT_GPU();
  CheckOddSizes(kFloat64);
}

TEST(MatMulCudaTest, Float1000Cubed) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  Case c;
  c.name = "float MatMul " + ShapeStr(1000, 1000, 1000);
  c.inputs = {parity::RandomTensor(kFloat32, TensorShape{1000, 1000}, rng),
              parity::RandomTensor(kFloat32, TensorShape{1000, 1000}, rng)};
  c.build = [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{MatMul(s, in[0], in[1])};
  };
  SetTolerance(&c, kFloat32, 1000);
  parity::ExpectGpuMatchesCpu(c);
}

// m == 0 and n == 0 give empty products; k == 0 gives an [m, n] of zeros (the
// GPU clears it with cudaMemsetAsync; poisoned memory would show as NaN).
TEST(MatMulCudaTest, EmptyDimensions) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType dtype : {kFloat32, kFloat64}) {
    parity::ExpectGpuMatchesCpu(
        AllTransposesCase(dtype, {{0, 7, 5}, {5, 7, 0}, {5, 0, 7}, {1000, 0, 33}, {0, 0, 0}}, rng));
  }
}

// TF32 rounds the inputs to a 10-bit mantissa (relative error up to ~1e-3 per
// product), so the tolerance is rtol 1e-2 plus an absolute term growing with
// sqrt(k) for elements that cancel to near zero.
TEST(MatMulCudaTest, Tf32MatchesFloat32Loosely) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  Case c = AllTransposesCase(
      kFloat32, {{33, 33, 33}, {1000, 1000, 33}, {7, 1000, 1000}, {1000, 33, 1000}, {100, 784, 256}}, rng);
  c.rtol = 1e-2;
  c.atol = 2e-3 * std::sqrt(1000.0);
  SessionOptions tf32 = parity::ParitySessionOptions();
  tf32.allow_tf32 = true;
  std::vector<Tensor> cpu = parity::RunOn(c, parity::kCpu);
  std::vector<Tensor> gpu = parity::RunOn(c, parity::kGpu, nullptr, false, tf32);
  ASSERT_EQ(cpu.size(), gpu.size()) << c.name;
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_TRUE(parity::Near(gpu[i], cpu[i], c.rtol, c.atol)) << c.name << " with TF32, output " << i;
  }
}

// Inner dimensions that differ: the operands pass through Reshapes to shapes
// fed at run time, so graph construction cannot see the mismatch and the
// kernels' own checks answer.
TEST(MatMulCudaTest, InnerDimensionMismatch) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType dtype : {kFloat32, kFloat64}) {
    for (bool ta : {false, true}) {
      Case c;
      c.name = std::string(DataTypeName(dtype)) + " MatMul [5,7] x [6,4], transpose_a " + (ta ? "on" : "off");
      c.inputs = {parity::RandomTensor(dtype, TensorShape{5, 7}, rng),
                  parity::RandomTensor(dtype, TensorShape{6, 4}, rng), Tensor::Vec<int32_t>({5, 7}),
                  Tensor::Vec<int32_t>({6, 4})};
      c.build = [ta](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{
            MatMul(s, Reshape(s, in[0], in[2]), Reshape(s, in[1], in[3]), {.transpose_a = ta})};
      };
      parity::ExpectSameError(c);
    }
  }
}

// Dimensions past cuBLAS's int range, on empty operands ([0, 2^31] x [2^31, 0]).
TEST(MatMulCudaTest, DimensionsPast32Bits) {
  TW_SKIP_WITHOUT_GPU();
  const int64_t big = static_cast<int64_t>(INT_MAX) + 1;
  Case c;
  c.name = "float MatMul [0,2^31] x [2^31,0]";
  c.inputs = {Tensor(kFloat32, TensorShape{0, big}), Tensor(kFloat32, TensorShape{big, 0})};
  c.build = [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{MatMul(s, in[0], in[1])};
  };
  parity::ExpectSameError(c);
}

}  // namespace
}  // namespace tw
