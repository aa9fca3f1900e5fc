// The element-wise CUDA kernels (cwise_cuda.cu) against their CPU twins
// (cwise_binary.cc, cwise_unary.cc, AddN in math_kernels.cc): every op and
// dtype over odd sizes and every broadcasting form, the errors of bad shapes,
// and IEEE division by zero. Skipped without a GPU, except the registration
// test, which needs none.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

using parity::Case;

const std::vector<DataType> kTypes = {kFloat32, kFloat64};
const std::vector<std::string> kBinaryOps = {"Add", "Sub",      "Mul",      "Div",   "Maximum",
                                             "Pow", "FloorDiv", "FloorMod", "Equal", "GreaterEqual"};
const std::vector<std::string> kUnaryOps = {"Neg", "Square", "Sqrt", "Exp", "Log", "Sigmoid", "Tanh"};

std::string Name(DataType dtype) { return std::string(DataTypeName(dtype)); }

// Values k/4 for k in [-8, 8] without 0: exact in both dtypes, often equal
// (Equal and GreaterEqual see both outcomes), never 0 (Div stays finite).
Tensor Quarters(DataType dtype, const TensorShape& shape, std::mt19937_64& rng) {
  Tensor t = parity::RandomTensor(dtype, shape, rng, 1, 16);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const double raw = dtype == kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
    const double k = std::floor(raw);  // 1 .. 16
    const double v = (k <= 8 ? k : 8 - k) / 4;
    if (dtype == kFloat32) {
      t.data<float>()[i] = static_cast<float>(v);
    } else {
      t.data<double>()[i] = v;
    }
  }
  return t;
}

std::vector<Output> AllBinary(const Scope& s, const std::vector<Output>& in) {
  // Pow of a negative quarter to a fractional one is NaN on both devices.
  return {Add(s, in[0], in[1]),      Sub(s, in[0], in[1]),      Mul(s, in[0], in[1]),
          Div(s, in[0], in[1]),      Maximum(s, in[0], in[1]),  Pow(s, in[0], in[1]),
          FloorDiv(s, in[0], in[1]), FloorMod(s, in[0], in[1]), Equal(s, in[0], in[1]),
          GreaterEqual(s, in[0], in[1])};
}

// All ten binary ops of x and y (fresh values), on both devices.
void CheckBinary(DataType dtype, const TensorShape& x, const TensorShape& y, std::mt19937_64& rng) {
  Case c{"binary ops " + Name(dtype) + " " + x.ToString() + " with " + y.ToString(),
         {Quarters(dtype, x, rng), Quarters(dtype, y, rng)},
         AllBinary};
  parity::ExpectGpuMatchesCpu(c);
}

// int64 comparisons (ArgMax's indices against labels): small values, so that
// both outcomes occur, and values past 2^53, which a double could not tell apart.
TEST(CwiseCudaTest, Int64Comparisons) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(23);
  for (const auto& [x, y] : std::vector<std::pair<TensorShape, TensorShape>>{
           {{1000}, {1000}}, {{7, 33}, {33}}, {{33}, {}}, {{7, 1}, {1, 33}}}) {
    Case c{"Equal/GreaterEqual int64 " + x.ToString() + " with " + y.ToString(),
           {parity::RandomTensor(kInt64, x, rng, 0, 3), parity::RandomTensor(kInt64, y, rng, 0, 3)},
           [](const Scope& s, const std::vector<Output>& in) {
             return std::vector<Output>{Equal(s, in[0], in[1]), GreaterEqual(s, in[0], in[1])};
           }};
    parity::ExpectGpuMatchesCpu(c);
  }
  Tensor big(kInt64, TensorShape{33}), big2(kInt64, TensorShape{33});
  for (int64_t i = 0; i < 33; ++i) {
    big.data<int64_t>()[i] = (int64_t{1} << 60) + i;
    big2.data<int64_t>()[i] = (int64_t{1} << 60) + (i % 2);
  }
  Case c{"Equal/GreaterEqual int64 past 2^53",
         {big, big2},
         [](const Scope& s, const std::vector<Output>& in) {
           return std::vector<Output>{Equal(s, in[0], in[1]), GreaterEqual(s, in[0], in[1])};
         }};
  parity::ExpectGpuMatchesCpu(c);
}

TEST(CwiseCudaTest, BinarySameShape) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(1);
  for (DataType dtype : kTypes) {
    for (int64_t n : parity::OddSizes()) CheckBinary(dtype, TensorShape{n}, TensorShape{n}, rng);
    CheckBinary(dtype, TensorShape{7, 33}, TensorShape{7, 33}, rng);
    CheckBinary(dtype, TensorShape{}, TensorShape{}, rng);
  }
}

TEST(CwiseCudaTest, BinaryScalarOperand) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(2);
  for (DataType dtype : kTypes) {
    for (int64_t n : parity::OddSizes()) {
      CheckBinary(dtype, TensorShape{}, TensorShape{n}, rng);
      CheckBinary(dtype, TensorShape{n}, TensorShape{}, rng);
    }
    CheckBinary(dtype, TensorShape{1000}, TensorShape{}, rng);
    CheckBinary(dtype, TensorShape{7, 33}, TensorShape{1}, rng);
  }
}

TEST(CwiseCudaTest, BinaryBroadcast) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(3);
  for (DataType dtype : kTypes) {
    CheckBinary(dtype, TensorShape{7, 33}, TensorShape{33}, rng);
    CheckBinary(dtype, TensorShape{33}, TensorShape{7, 33}, rng);
    CheckBinary(dtype, TensorShape{7, 1}, TensorShape{1, 33}, rng);
    CheckBinary(dtype, TensorShape{1000, 7}, TensorShape{1000, 1}, rng);
    CheckBinary(dtype, TensorShape{1, 1, 1}, TensorShape{33}, rng);  // one collapsed dimension
    // Rank 4: outer products and different ranks.
    CheckBinary(dtype, TensorShape{2, 1, 7, 1}, TensorShape{1, 3, 1, 5}, rng);
    CheckBinary(dtype, TensorShape{3, 1, 1, 33}, TensorShape{1, 7, 33}, rng);
    CheckBinary(dtype, TensorShape{7, 33, 1, 3}, TensorShape{33, 5, 3}, rng);
  }
}

TEST(CwiseCudaTest, BinaryBroadcastPastEightDimensions) {
  TW_SKIP_WITHOUT_GPU();
  // Ten collapsed dimensions (the broadcast alternates), more than the kernel
  // takes at once: the outer ones are walked on the host.
  std::mt19937_64 rng(4);
  for (DataType dtype : kTypes) {
    CheckBinary(dtype, TensorShape{2, 1, 3, 1, 2, 1, 3, 1, 2, 1}, TensorShape{1, 3, 1, 2, 1, 3, 1, 2, 1, 5},
                rng);
  }
}

TEST(CwiseCudaTest, BinaryEmpty) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  for (DataType dtype : kTypes) {
    CheckBinary(dtype, TensorShape{0, 3}, TensorShape{3}, rng);
    CheckBinary(dtype, TensorShape{0}, TensorShape{}, rng);
  }
}

TEST(CwiseCudaTest, BinaryIncompatibleShapes) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(6);
  for (DataType dtype : kTypes) {
    Case c{"Mul " + Name(dtype) + " [2,3] with [4]",
           {parity::RandomTensor(dtype, {2, 3}, rng), parity::RandomTensor(dtype, {4}, rng)},
           [](const Scope& s, const std::vector<Output>& in) {
             return std::vector<Output>{Mul(s, in[0], in[1])};
           }};
    parity::ExpectSameError(c, "Incompatible shapes: [2,3] vs [4]");
    Case ge{"GreaterEqual " + Name(dtype) + " [7,33] with [7,3]",
            {parity::RandomTensor(dtype, {7, 33}, rng), parity::RandomTensor(dtype, {7, 3}, rng)},
            [](const Scope& s, const std::vector<Output>& in) {
              return std::vector<Output>{GreaterEqual(s, in[0], in[1])};
            }};
    parity::ExpectSameError(ge, "Incompatible shapes: [7,33] vs [7,3]");
  }
}

TEST(CwiseCudaTest, FloatDivisionByZeroIsIeee) {
  TW_SKIP_WITHOUT_GPU();
  for (DataType dtype : kTypes) {
    Tensor x = Tensor::FromVector<double>({1, -1, 0}, TensorShape{3});
    Tensor zero = Tensor::FromVector<double>({0, 0, 0}, TensorShape{3});
    if (dtype == kFloat32) {
      x = Tensor::FromVector<float>({1, -1, 0}, TensorShape{3});
      zero = Tensor::FromVector<float>({0, 0, 0}, TensorShape{3});
    }
    Case c{"Div " + Name(dtype) + " by zero", {x, zero}, [](const Scope& s, const std::vector<Output>& in) {
             return std::vector<Output>{Div(s, in[0], in[1])};
           }};
    Status status;
    std::vector<Tensor> out = parity::RunOn(c, parity::kGpu, &status);
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_EQ(out.size(), 1u);
    auto at = [&](int i) { return dtype == kFloat32 ? out[0].data<float>()[i] : out[0].data<double>()[i]; };
    EXPECT_TRUE(std::isinf(at(0)) && at(0) > 0) << at(0);
    EXPECT_TRUE(std::isinf(at(1)) && at(1) < 0) << at(1);
    EXPECT_TRUE(std::isnan(at(2))) << at(2);
  }
}

TEST(CwiseCudaTest, Unary) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(7);
  for (DataType dtype : kTypes) {
    std::vector<TensorShape> shapes;
    for (int64_t n : parity::OddSizes()) shapes.push_back(TensorShape{n});
    shapes.push_back(TensorShape{7, 33});
    shapes.push_back(TensorShape{});
    shapes.push_back(TensorShape{0, 5});
    for (const TensorShape& shape : shapes) {
      // in0 in [-5, 5] for the ops defined everywhere; in1 in (0, 5] for Log, Log1p and Sqrt.
      Case c{
          "unary ops " + Name(dtype) + " " + shape.ToString(),
          {parity::RandomTensor(dtype, shape, rng, -5, 5), parity::RandomTensor(dtype, shape, rng, 1e-3, 5)},
          [](const Scope& s, const std::vector<Output>& in) {
            return std::vector<Output>{Neg(s, in[0]),  Square(s, in[0]), Exp(s, in[0]), Sigmoid(s, in[0]),
                                       Tanh(s, in[0]), Sqrt(s, in[1]),   Log(s, in[1]), Log1p(s, in[1])};
          }};
      if (dtype == kFloat64) {
        c.rtol = 1e-12;
        c.atol = 1e-14;
      }
      parity::ExpectGpuMatchesCpu(c);
    }
    // Outside the domain: NaN on both (Near treats two NaNs as equal); Log1p
    // finite in (-1, 0), -inf at -1, NaN below.
    Case nan{"Sqrt, Log and Log1p " + Name(dtype) + " of negatives",
             {parity::RandomTensor(dtype, {33}, rng, -5, -1e-3)},
             [](const Scope& s, const std::vector<Output>& in) {
               return std::vector<Output>{Sqrt(s, in[0]), Log(s, in[0]), Log1p(s, in[0])};
             }};
    parity::ExpectGpuMatchesCpu(nan);
  }
}

TEST(CwiseCudaTest, AddN) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(8);
  for (DataType dtype : kTypes) {
    // 9 and 17 inputs take more than one launch (8 inputs each).
    for (int inputs : {1, 2, 3, 9, 17}) {
      for (int64_t n : parity::OddSizes()) {
        Case c{
            "AddN " + Name(dtype) + " of " + std::to_string(inputs) + " x [" + std::to_string(n) + "]",
            {},
            [](const Scope& s, const std::vector<Output>& in) { return std::vector<Output>{AddN(s, in)}; }};
        for (int k = 0; k < inputs; ++k) c.inputs.push_back(parity::RandomTensor(dtype, {n}, rng));
        parity::ExpectGpuMatchesCpu(c);
      }
    }
    Case empty{
        "AddN " + Name(dtype) + " of 3 x [0, 7]", {}, [](const Scope& s, const std::vector<Output>& in) {
          return std::vector<Output>{AddN(s, in)};
        }};
    for (int k = 0; k < 3; ++k) empty.inputs.push_back(parity::RandomTensor(dtype, {0, 7}, rng));
    parity::ExpectGpuMatchesCpu(empty);
  }
}

TEST(CwiseCudaTest, AddNMismatchedShapes) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(9);
  for (DataType dtype : kTypes) {
    Case c{"AddN " + Name(dtype) + " of [7] and [33]",
           {parity::RandomTensor(dtype, {7}, rng), parity::RandomTensor(dtype, {7}, rng),
            parity::RandomTensor(dtype, {33}, rng)},
           [](const Scope& s, const std::vector<Output>& in) { return std::vector<Output>{AddN(s, in)}; }};
    parity::ExpectSameError(c, "AddN inputs must have one shape");
  }
}

// Needs no GPU: the family registers float and double kernels for every op,
// and int64 for the comparisons, all in device memory (the int32 forms are
// another family's host-memory kernels).
// Cast (uint8 -> float32) fused into Mul by 1/255 on the GPU: bit for bit
// the CPU's, every byte value and an empty batch; the plan runs the pair as
// one item.
TEST(CwiseCudaTest, CastMulFusedBitForBit) {
  TW_SKIP_WITHOUT_GPU();
  for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{100}}) {
    std::vector<uint8_t> bytes(static_cast<size_t>(rows * 256));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 % 256);
    Case c;
    c.name = "Cast+Mul of " + std::to_string(rows) + " x 256 bytes";
    c.inputs = {Tensor::FromVector(bytes, TensorShape{rows, 256})};
    c.build = [](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{Mul(s, Cast(s, in[0], kFloat32), Const(s, 1.0f / 255.0f))};
    };
    c.rtol = 0;
    c.atol = 0;
    parity::ExpectGpuMatchesCpu(c);
  }
  Graph graph;
  Scope s = Scope(graph).WithDevice(parity::kGpu);
  Output x = Const(s, Tensor::FromVector(std::vector<uint8_t>(784, 200), TensorShape{1, 784}));
  Output y = Mul(s, Cast(s, x, kFloat32), Const(s, 1.0f / 255.0f));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(graph, parity::ParitySessionOptions());
  EXPECT_EQ(parity::FusedItems(session, {y}), 1) << "Cast and Mul as one item";
}

TEST(CwiseCudaTest, RegistersFloatAndDoubleOnly) {
  KernelRegistry cpu, gpu;
  RegisterCwiseCudaKernels(gpu, cpu);
  std::vector<std::string> ops = kBinaryOps;
  ops.insert(ops.end(), kUnaryOps.begin(), kUnaryOps.end());
  ops.push_back("AddN");
  for (const std::string& op : ops) {
    auto types = gpu.KernelTypes(op);
    ASSERT_EQ(types.size(), 1u) << op;
    const bool comparison = op == "Equal" || op == "GreaterEqual";
    EXPECT_EQ(types[kDeviceGpu], comparison ? (std::vector<DataType>{kFloat32, kFloat64, kInt64})
                                            : (std::vector<DataType>{kFloat32, kFloat64}))
        << op;
    for (const KernelDef* k : gpu.KernelsFor(op)) {
      EXPECT_TRUE(k->host_memory_inputs.empty() && k->host_memory_outputs.empty()) << op;
    }
  }
}

}  // namespace
}  // namespace tw
