// MatMul -> BiasAdd and MatMul -> BiasAddRelu fused on the GPU (cuBLASLt
// epilogues, matmul_epilogue_cuda.cu) against the same ops on the CPU: sizes
// 1, 7, 33 and 1000, every transpose, the MLP's layers, an empty sum (the
// bias alone), TF32 loosely; the GPU plan runs each pair as one item,
// unfused (fuse_kernels off) gives the same values, and so do later runs on
// the step arena's less aligned tensors. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

using parity::Case;

struct Dense {
  int64_t m, k, n;
  bool ta, tb, relu;
};

Case DenseCase(const Dense& d, std::mt19937_64& rng) {
  Case c;
  c.name = std::string("MatMul+") + (d.relu ? "BiasAddRelu" : "BiasAdd") + " m=" + std::to_string(d.m) +
           " k=" + std::to_string(d.k) + " n=" + std::to_string(d.n) + (d.ta ? " ta" : "") + (d.tb ? " tb" : "");
  c.inputs = {parity::RandomTensor(kFloat32, d.ta ? TensorShape{d.k, d.m} : TensorShape{d.m, d.k}, rng),
              parity::RandomTensor(kFloat32, d.tb ? TensorShape{d.n, d.k} : TensorShape{d.k, d.n}, rng),
              parity::RandomTensor(kFloat32, TensorShape{d.n}, rng)};
  const bool ta = d.ta, tb = d.tb, relu = d.relu;
  c.build = [ta, tb, relu](const Scope& s, const std::vector<Output>& in) {
    Output z = MatMul(s, in[0], in[1], {.transpose_a = ta, .transpose_b = tb});
    return std::vector<Output>{relu ? BiasAddRelu(s, z, in[2]) : BiasAdd(s, z, in[2])};
  };
  // k products of values in [-1, 1] summed in another order on each device.
  c.rtol = 1e-4;
  c.atol = 1e-5 * static_cast<double>(std::max<int64_t>(d.k, 1));
  return c;
}

TEST(MatMulEpilogueCudaTest, FusedDenseLayersMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  std::vector<Dense> cases = {{100, 784, 256, false, false, true},  // the MLP's layers
                              {100, 256, 256, false, false, true},
                              {100, 256, 10, false, false, false},
                              {3, 0, 5, false, false, true},  // an empty sum: the bias, rectified
                              {3, 0, 5, false, false, false}};
  for (int64_t m : {1, 7, 33, 1000}) {
    for (int64_t n : {1, 33}) {
      for (int t = 0; t < 4; ++t) cases.push_back({m, 7, n, (t & 1) != 0, (t & 2) != 0, (m + n + t) % 2 == 0});
    }
  }
  for (const Dense& d : cases) parity::ExpectGpuMatchesCpu(DenseCase(d, rng));
}

TEST(MatMulEpilogueCudaTest, Tf32MatchesLoosely) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  Case c = DenseCase({100, 784, 256, false, false, true}, rng);
  Status status;
  const std::vector<Tensor> cpu = parity::RunOn(c, parity::kCpu, &status);
  ASSERT_TRUE(status.ok()) << status.ToString();
  SessionOptions options = parity::ParitySessionOptions();
  options.allow_tf32 = true;
  const std::vector<Tensor> gpu = parity::RunOn(c, parity::kGpu, &status, false, options);
  ASSERT_TRUE(status.ok()) << status.ToString();
  // TF32 rounds the inputs to 10 mantissa bits: about 1e-3 of each product.
  EXPECT_TRUE(parity::Near(gpu[0], cpu[0], 1e-2, 1e-2 * std::sqrt(784.0)));
}

// One item for each pair on the GPU, and the same values as the pair unfused.
TEST(MatMulEpilogueCudaTest, ThePlanFusesEachPairAndAgreesUnfused) {
  TW_SKIP_WITHOUT_GPU();
  std::vector<Tensor> runs[2];
  for (bool fuse : {true, false}) {
    std::mt19937_64 values(7);
    Graph graph;
    Scope s = Scope(graph).WithDevice(parity::kGpu);
    Output x = Const(s, parity::RandomTensor(kFloat32, TensorShape{100, 784}, values));
    Output w1 = Const(s, parity::RandomTensor(kFloat32, TensorShape{784, 256}, values));
    Output b1 = Const(s, parity::RandomTensor(kFloat32, TensorShape{256}, values));
    Output w2 = Const(s, parity::RandomTensor(kFloat32, TensorShape{256, 10}, values));
    Output b2 = Const(s, parity::RandomTensor(kFloat32, TensorShape{10}, values));
    Output logits = BiasAdd(s, MatMul(s, BiasAddRelu(s, MatMul(s, x, w1), b1), w2), b2);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    SessionOptions options = parity::ParitySessionOptions();
    options.fuse_kernels = fuse;
    Session session(graph, options);
    EXPECT_EQ(parity::FusedItems(session, {logits}), fuse ? 2 : 0);
    auto out = session.Run({logits});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    runs[fuse ? 0 : 1] = *out;
    // Later runs take their tensors from the step arena (64-byte aligned,
    // not the allocator's 256; another algorithm may serve them): the same
    // values to rounding.
    for (int again = 0; again < 4; ++again) {
      auto next = session.Run({logits});
      ASSERT_TRUE(next.ok()) << "run " << again + 2 << ": " << next.status().ToString();
      EXPECT_TRUE(parity::Near((*next)[0], (*out)[0], 1e-5, 1e-4)) << "run " << again + 2;
    }
  }
  EXPECT_TRUE(parity::Near(runs[0][0], runs[1][0], 1e-4, 1e-3));
}

}  // namespace
}  // namespace tw
