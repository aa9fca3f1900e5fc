// The nn CUDA kernels (nn_cuda.cu) against their CPU twins (nn_kernels.cc):
// BiasAdd, BiasAddRelu, BiasAddGrad, Relu, ReluGrad, Softmax, both
// cross-entropies, L2Loss and Dropout for float and double over odd shapes, the errors
// of bad shapes, and the documented divergence: an out-of-range sparse label
// gives a NaN row on the GPU. Skipped without a GPU, except the registration
// test, which needs none.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw {
namespace {

using parity::Case;
using parity::RandomTensor;

const std::vector<DataType> kTypes = {kFloat32, kFloat64};
const std::vector<std::string> kNnOps = {"BiasAdd",
                                         "BiasAddRelu",
                                         "BiasAddGrad",
                                         "BiasAddReluGrad",
                                         "Relu",
                                         "ReluGrad",
                                         "Softmax",
                                         "SoftmaxCrossEntropyWithLogits",
                                         "SparseSoftmaxCrossEntropyWithLogits",
                                         "SparseSoftmaxCrossEntropyMean",
                                         "L2Loss",
                                         "Dropout"};

std::string Name(DataType dtype) { return std::string(DataTypeName(dtype)); }

Output BiasAddGrad(const Scope& s, const Output& g) {
  return NodeBuilder(s, "BiasAddGrad").Input(g).Finalize();
}
Output ReluGrad(const Scope& s, const Output& g, const Output& f) {
  return NodeBuilder(s, "ReluGrad").Input(g).Input(f).Finalize();
}
std::vector<Output> BiasAddReluGrad(const Scope& s, const Output& g, const Output& y) {
  Node* n = NodeBuilder(s, "BiasAddReluGrad").Input(g).Input(y).Finalize();
  return {Output(n, 0), Output(n, 1)};
}

// Tolerances: float sums of up to 1000 terms in another order than the CPU's.
void SetSumTolerance(Case* c, DataType dtype) {
  c->rtol = dtype == kFloat32 ? 1e-4 : 1e-11;
  c->atol = dtype == kFloat32 ? 1e-4 : 1e-12;
}

// Shapes [.., C] for the per-channel and per-row ops: odd sizes on both axes.
std::vector<TensorShape> RowShapes() {
  std::vector<TensorShape> shapes;
  for (int64_t n : parity::OddSizes()) {
    shapes.push_back(TensorShape{n});
    shapes.push_back(TensorShape{7, n});
    shapes.push_back(TensorShape{n, 33});
  }
  shapes.push_back(TensorShape{2, 500, 7});  // rank 3, 1000 rows
  shapes.push_back(TensorShape{1000, 1});
  shapes.push_back(TensorShape{0, 7});  // no rows
  return shapes;
}

TEST(NnCudaTest, BiasAddReluAndGradients) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(11);
  for (DataType dtype : kTypes) {
    for (const TensorShape& shape : RowShapes()) {
      const int64_t c = shape.dim(shape.rank() - 1);
      Case elementwise{
          "BiasAdd/BiasAddRelu/Relu/ReluGrad " + Name(dtype) + " " + shape.ToString(),
          {RandomTensor(dtype, shape, rng), RandomTensor(dtype, {c}, rng), RandomTensor(dtype, shape, rng)},
          [](const Scope& s, const std::vector<Output>& in) {
            return std::vector<Output>{BiasAdd(s, in[0], in[1]), BiasAddRelu(s, in[0], in[1]), Relu(s, in[0]),
                                       ReluGrad(s, in[2], in[0])};
          }};
      parity::ExpectGpuMatchesCpu(elementwise);
      Case grad{"BiasAddGrad " + Name(dtype) + " " + shape.ToString(),
                {RandomTensor(dtype, shape, rng)},
                [](const Scope& s, const std::vector<Output>& in) {
                  return std::vector<Output>{BiasAddGrad(s, in[0])};
                }};
      SetSumTolerance(&grad, dtype);
      parity::ExpectGpuMatchesCpu(grad);
      // The fused gradient: the masked values exactly, the sums to rounding
      // (the GPU's order of summation is its own).
      const std::vector<Tensor> fused_in = {RandomTensor(dtype, shape, rng), RandomTensor(dtype, shape, rng)};
      Case masked{"BiasAddReluGrad backprops " + Name(dtype) + " " + shape.ToString(), fused_in,
                  [](const Scope& s, const std::vector<Output>& in) {
                    return std::vector<Output>{BiasAddReluGrad(s, in[0], in[1])[0]};
                  }};
      masked.rtol = 0;
      masked.atol = 0;
      parity::ExpectGpuMatchesCpu(masked);
      Case sums{"BiasAddReluGrad bias_backprops " + Name(dtype) + " " + shape.ToString(), fused_in,
                [](const Scope& s, const std::vector<Output>& in) {
                  return std::vector<Output>{BiasAddReluGrad(s, in[0], in[1])[1]};
                }};
      SetSumTolerance(&sums, dtype);
      parity::ExpectGpuMatchesCpu(sums);
    }
    // Many rows over few channels: the chunked sum with a second pass.
    Case tall{"BiasAddGrad " + Name(dtype) + " [20000,3]",
              {RandomTensor(dtype, {20000, 3}, rng)},
              [](const Scope& s, const std::vector<Output>& in) {
                return std::vector<Output>{BiasAddGrad(s, in[0])};
              }};
    SetSumTolerance(&tall, dtype);
    tall.atol = dtype == kFloat32 ? 1e-3 : 1e-11;
    parity::ExpectGpuMatchesCpu(tall);
  }
}

TEST(NnCudaTest, Softmax) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(12);
  for (DataType dtype : kTypes) {
    for (const TensorShape& shape : RowShapes()) {
      Case c{"Softmax " + Name(dtype) + " " + shape.ToString(),
             {RandomTensor(dtype, shape, rng, -10, 10)},
             [](const Scope& s, const std::vector<Output>& in) {
               return std::vector<Output>{Softmax(s, in[0])};
             }};
      SetSumTolerance(&c, dtype);
      c.atol = dtype == kFloat32 ? 1e-6 : 1e-14;
      parity::ExpectGpuMatchesCpu(c);
    }
  }
}

// Rows of random probabilities (some classes 0), summing to 1.
Tensor Distributions(DataType dtype, int64_t rows, int64_t c, std::mt19937_64& rng) {
  Tensor t = RandomTensor(dtype, {rows, c}, rng, -0.5, 1);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) {
      const int64_t i = r * c + j;
      double v = dtype == kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
      v = v < 0 ? 0 : v;
      if (j == r % c) v += 0.5;  // never an all-zero row
      sum += v;
      if (dtype == kFloat32) {
        t.data<float>()[i] = static_cast<float>(v);
      } else {
        t.data<double>()[i] = v;
      }
    }
    for (int64_t j = 0; j < c; ++j) {
      const int64_t i = r * c + j;
      if (dtype == kFloat32) {
        t.data<float>()[i] = static_cast<float>(t.data<float>()[i] / sum);
      } else {
        t.data<double>()[i] /= sum;
      }
    }
  }
  return t;
}

std::vector<std::pair<int64_t, int64_t>> XentShapes() {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t n : parity::OddSizes()) {
    shapes.push_back({n, 7});
    shapes.push_back({7, n});
  }
  shapes.push_back({33, 33});
  shapes.push_back({0, 7});
  return shapes;
}

TEST(NnCudaTest, SoftmaxCrossEntropyWithLogits) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(13);
  for (DataType dtype : kTypes) {
    for (auto [rows, c] : XentShapes()) {
      Case x{"SoftmaxCrossEntropyWithLogits " + Name(dtype) + " [" + std::to_string(rows) + "," +
                 std::to_string(c) + "]",
             {RandomTensor(dtype, {rows, c}, rng, -10, 10), Distributions(dtype, rows, c, rng)},
             [](const Scope& s, const std::vector<Output>& in) {
               SoftmaxXentResult r = SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
               return std::vector<Output>{r.loss, r.backprop};
             }};
      SetSumTolerance(&x, dtype);
      parity::ExpectGpuMatchesCpu(x);
    }
  }
}

TEST(NnCudaTest, SparseSoftmaxCrossEntropyWithLogits) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(14);
  for (DataType dtype : kTypes) {
    for (DataType label_type : {kInt32, kInt64}) {
      for (auto [rows, c] : XentShapes()) {
        Case x{"SparseSoftmaxCrossEntropyWithLogits " + Name(dtype) + " " + Name(label_type) + " [" +
                   std::to_string(rows) + "," + std::to_string(c) + "]",
               {RandomTensor(dtype, {rows, c}, rng, -10, 10),
                RandomTensor(label_type, {rows}, rng, 0, static_cast<double>(c - 1))},
               [](const Scope& s, const std::vector<Output>& in) {
                 SoftmaxXentResult r = SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
                 return std::vector<Output>{r.loss, r.backprop};
               }};
        SetSumTolerance(&x, dtype);
        parity::ExpectGpuMatchesCpu(x);
      }
    }
  }
}

// The fused mean, gradient and per-row hits against the CPU twin (which the
// CPU tests hold bit for bit to the separate ops): the backprop and `correct`
// per row, the mean to the sum's rounding; ties in the logits (the first
// largest counts) and a batch past one block's share.
TEST(NnCudaTest, SparseSoftmaxCrossEntropyMean) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(16);
  for (DataType dtype : kTypes) {
    for (DataType label_type : {kInt32, kInt64}) {
      for (auto [rows, c] : XentShapes()) {
        Case x{"SparseSoftmaxCrossEntropyMean " + Name(dtype) + " " + Name(label_type) + " [" +
                   std::to_string(rows) + "," + std::to_string(c) + "]",
               {RandomTensor(dtype, {rows, c}, rng, -3, 3),
                RandomTensor(label_type, {rows}, rng, 0, static_cast<double>(c - 1))},
               [](const Scope& s, const std::vector<Output>& in) {
                 SoftmaxXentMeanResult r = SparseSoftmaxCrossEntropyMean(s, in[0], in[1]);
                 return std::vector<Output>{r.loss, r.backprop, r.correct};
               }};
        SetSumTolerance(&x, dtype);
        parity::ExpectGpuMatchesCpu(x);
      }
    }
    // Every row tied: the first class is the prediction.
    Tensor tied(dtype, TensorShape{1000, 3});
    for (int64_t i = 0; i < 3000; ++i) {
      if (dtype == kFloat32) tied.data<float>()[i] = 0.5f;
      if (dtype == kFloat64) tied.data<double>()[i] = 0.5;
    }
    Case ties{"SparseSoftmaxCrossEntropyMean ties " + Name(dtype),
              {tied, RandomTensor(kInt64, {1000}, rng, 0, 2)},
              [](const Scope& s, const std::vector<Output>& in) {
                SoftmaxXentMeanResult r = SparseSoftmaxCrossEntropyMean(s, in[0], in[1]);
                return std::vector<Output>{r.loss, r.backprop, r.correct};
              }};
    SetSumTolerance(&ties, dtype);
    parity::ExpectGpuMatchesCpu(ties);
  }
}

// The documented divergence: where the CPU kernel fails, the GPU gives NaN in
// the rows with an out-of-range label and the CPU's values in the others.
TEST(NnCudaTest, SparseLabelOutOfRangeGivesNanRow) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(15);
  const int64_t rows = 5, c = 33;
  for (DataType dtype : kTypes) {
    Tensor logits = RandomTensor(dtype, {rows, c}, rng, -3, 3);
    auto build = [](const Scope& s, const std::vector<Output>& in) {
      SoftmaxXentResult r = SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
      return std::vector<Output>{r.loss, r.backprop};
    };
    Case bad{"labels with -1 and 33", {logits, Tensor::Vec<int64_t>({0, -1, 5, 33, 32})}, build};
    Case good{"the same labels in range", {logits, Tensor::Vec<int64_t>({0, 0, 5, 0, 32})}, build};
    Status cpu_status, gpu_status, ok_status;
    parity::RunOn(bad, parity::kCpu, &cpu_status);
    EXPECT_EQ(cpu_status.code(), Code::kInvalidArgument) << cpu_status.ToString();
    std::vector<Tensor> gpu = parity::RunOn(bad, parity::kGpu, &gpu_status);
    std::vector<Tensor> cpu = parity::RunOn(good, parity::kCpu, &ok_status);
    ASSERT_TRUE(gpu_status.ok()) << gpu_status.ToString();
    ASSERT_TRUE(ok_status.ok()) << ok_status.ToString();
    ASSERT_EQ(gpu.size(), 2u);
    auto value = [&](const Tensor& t, int64_t i) {
      return dtype == kFloat32 ? static_cast<double>(t.data<float>()[i]) : t.data<double>()[i];
    };
    for (int64_t r = 0; r < rows; ++r) {
      const bool nan_row = r == 1 || r == 3;
      EXPECT_EQ(std::isnan(value(gpu[0], r)), nan_row) << "loss row " << r << ": " << value(gpu[0], r);
      if (!nan_row) {
        EXPECT_NEAR(value(gpu[0], r), value(cpu[0], r), 1e-5) << "loss row " << r;
      }
      for (int64_t j = 0; j < c; ++j) {
        const double b = value(gpu[1], r * c + j);
        EXPECT_EQ(std::isnan(b), nan_row) << "backprop " << r << "," << j << ": " << b;
        if (!nan_row) {
          EXPECT_NEAR(b, value(cpu[1], r * c + j), 1e-6) << "backprop " << r << "," << j;
        }
      }
    }
  }
}

TEST(NnCudaTest, L2Loss) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(16);
  for (DataType dtype : kTypes) {
    std::vector<TensorShape> shapes;
    for (int64_t n : parity::OddSizes()) shapes.push_back(TensorShape{n});
    shapes.push_back(TensorShape{});
    shapes.push_back(TensorShape{0});
    shapes.push_back(TensorShape{33, 1000});
    shapes.push_back(TensorShape{300, 1001});  // more elements than a grid covers in one stride
    for (const TensorShape& shape : shapes) {
      Case c{"L2Loss " + Name(dtype) + " " + shape.ToString(),
             {RandomTensor(dtype, shape, rng)},
             [](const Scope& s, const std::vector<Output>& in) {
               return std::vector<Output>{L2Loss(s, in[0])};
             }};
      // Both accumulate in double: only the last rounding of float may differ.
      c.rtol = dtype == kFloat32 ? 1e-6 : 1e-12;
      c.atol = 0;
      parity::ExpectGpuMatchesCpu(c);
    }
  }
}

// Dropout draws its masks from the same Philox stream on both devices: a seed
// gives the CPU's masks bit for bit, for two Dropout nodes in one step and
// sizes that do not fill the last block of four.
TEST(NnCudaTest, DropoutMasksMatchTheCpuBitForBit) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(17);
  for (DataType dtype : kTypes) {
    for (int64_t n : parity::OddSizes()) {
      for (float rate : {0.0f, 0.5f, 0.9f}) {
        Case c{"Dropout " + Name(dtype) + " [" + std::to_string(n) + "] rate " + std::to_string(rate),
               {RandomTensor(dtype, {3, n}, rng)},
               [rate](const Scope& s, const std::vector<Output>& in) {
                 DropoutResult first = Dropout(s, in[0], rate, 5);
                 // A second Dropout node fed the first's output: a stream of its own.
                 DropoutResult second = Dropout(s, Identity(s, first.output), rate, 6);
                 return std::vector<Output>{first.output, first.mask, second.output, second.mask};
               }};
        c.rtol = 0;
        c.atol = 0;
        parity::ExpectGpuMatchesCpu(c);
      }
    }
  }
}

TEST(NnCudaTest, ShapeErrors) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(17);
  for (DataType dtype : kTypes) {
    const std::string t = " " + Name(dtype);
    auto one = [](Output (*op)(const Scope&, const Output&, const Output&)) {
      return [op](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{op(s, in[0], in[1])};
      };
    };
    parity::ExpectSameError(Case{"BiasAdd" + t + " bias of the wrong length",
                                 {RandomTensor(dtype, {7, 33}, rng), RandomTensor(dtype, {7}, rng)},
                                 one(BiasAdd)},
                            "does not match the last dimension of value of shape [7,33]");
    parity::ExpectSameError(Case{"BiasAddRelu" + t + " bias of rank 2",
                                 {RandomTensor(dtype, {7, 33}, rng), RandomTensor(dtype, {1, 33}, rng)},
                                 one(BiasAddRelu)},
                            "BiasAdd: bias of shape [1,33]");
    parity::ExpectSameError(Case{"BiasAddGrad" + t + " of a scalar",
                                 {RandomTensor(dtype, {}, rng)},
                                 [](const Scope& s, const std::vector<Output>& in) {
                                   return std::vector<Output>{BiasAddGrad(s, in[0])};
                                 }},
                            "out_backprop must have rank >= 1");
    parity::ExpectSameError(Case{"ReluGrad" + t + " shapes differ",
                                 {RandomTensor(dtype, {7}, rng), RandomTensor(dtype, {33}, rng)},
                                 one(ReluGrad)},
                            "ReluGrad: gradients of shape [7] and features of shape [33] differ");
    parity::ExpectSameError(Case{"Softmax" + t + " of a scalar",
                                 {RandomTensor(dtype, {}, rng)},
                                 [](const Scope& s, const std::vector<Output>& in) {
                                   return std::vector<Output>{Softmax(s, in[0])};
                                 }},
                            "logits must have rank >= 1");
    parity::ExpectSameError(
        Case{"SoftmaxCrossEntropyWithLogits" + t + " shapes differ",
             {RandomTensor(dtype, {7, 33}, rng), RandomTensor(dtype, {7, 32}, rng)},
             [](const Scope& s, const std::vector<Output>& in) {
               return std::vector<Output>{SoftmaxCrossEntropyWithLogits(s, in[0], in[1]).loss};
             }},
        "of one shape, got [7,33] and [7,32]");
    parity::ExpectSameError(
        Case{"SparseSoftmaxCrossEntropyWithLogits" + t + " batch sizes differ",
             {RandomTensor(dtype, {7, 33}, rng), RandomTensor(kInt64, {6}, rng, 0, 32)},
             [](const Scope& s, const std::vector<Output>& in) {
               return std::vector<Output>{SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]).loss};
             }},
        "got [7,33] and [6]");
  }
}

// Needs no GPU: float and double kernels for every op, all in device memory.
TEST(NnCudaTest, RegistersFloatAndDoubleOnly) {
  KernelRegistry cpu, gpu;
  RegisterNnCudaKernels(gpu, cpu);
  for (const std::string& op : kNnOps) {
    auto types = gpu.KernelTypes(op);
    ASSERT_EQ(types.size(), 1u) << op;
    EXPECT_EQ(types[kDeviceGpu], (std::vector<DataType>{kFloat32, kFloat64})) << op;
    for (const KernelDef* k : gpu.KernelsFor(op)) {
      EXPECT_TRUE(k->host_memory_inputs.empty() && k->host_memory_outputs.empty()) << op;
    }
  }
}

}  // namespace
}  // namespace tw
