// The array and shape GPU kernels (array_cuda.cu, shape_cuda.cu) against their
// CPU twins (array_kernels.cc, shape_kernels.cc, slice_kernels.cc): every op
// and dtype over odd sizes (1, 7, 33, 1000, and empty tensors), the kernels'
// errors, the int32 kernels that run on the host of a GPU, and the host-memory
// path of shape arguments (StepStats: no copy of a big tensor to the host).
// Tests that run graphs skip without a GPU; the registration tests need none.
#include "towerflow/kernels/array_cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using parity::AllTypes;
using parity::Case;
using parity::ExpectGpuMatchesCpu;
using parity::ExpectSameError;
using parity::OddSizes;
using parity::RandomTensor;
using V = const std::vector<Output>&;

std::string Name(DataType t) { return std::string(DataTypeName(t)); }
int32_t I(int64_t v) { return static_cast<int32_t>(v); }

// Odd sizes plus an empty tensor.
std::vector<int64_t> Sizes() {
  std::vector<int64_t> s = OddSizes();
  s.push_back(0);
  return s;
}

// One random input of shape [n] per size.
std::vector<Tensor> Vectors(DataType t, std::mt19937_64& rng, double lo = -1, double hi = 1) {
  std::vector<Tensor> out;
  for (int64_t n : Sizes()) out.push_back(RandomTensor(t, TensorShape{n}, rng, lo, hi));
  return out;
}

// One random input of shape shape_of(n) per size n.
std::vector<Tensor> PerSize(DataType t, std::mt19937_64& rng,
                            const std::function<TensorShape(int64_t)>& shape_of) {
  std::vector<Tensor> out;
  for (int64_t n : Sizes()) out.push_back(RandomTensor(t, shape_of(n), rng));
  return out;
}

// The int32 forms of the cwise and reduction ops, which run on the host of a GPU.
std::vector<Output> Int32MathOps(const Scope& s, const Output& a, const Output& b) {
  return {Add(s, a, b),     Sub(s, a, b),   Mul(s, a, b),          Div(s, a, b),
          Maximum(s, a, b), Equal(s, a, b), GreaterEqual(s, a, b), Neg(s, a),
          Sum(s, a, {0}),   Max(s, a, {0}), Mean(s, a, {0})};
}

// ---- Registration, checked without a GPU ----

class ArrayCudaRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureKernelsRegistered();
    RegisterArrayCudaKernels(gpu_, KernelRegistry::Global());
  }
  const KernelDef* Find(const Output& o) const { return gpu_.Find(*o.node, kDeviceGpu); }
  KernelRegistry gpu_;
};

TEST_F(ArrayCudaRegistryTest, Int32KernelsKeepEveryArgumentInHostMemory) {
  Graph g;
  Scope s(g);
  Output a = Placeholder(s, kInt32, PartialShape({4}));
  Output b = Placeholder(s, kInt32, PartialShape({4}));
  Node* offsets =
      NodeBuilder(s, "ConcatOffset").Input(Const(s, 0)).Inputs({Shape(s, a), Shape(s, b)}).Finalize();
  std::vector<Output> ops = {Const(s, 3),
                             Identity(s, a),
                             StopGradient(s, a),
                             Shape(s, a),
                             Reshape(s, a, {2, 2}),
                             ExpandDims(s, a, 0),
                             Squeeze(s, Reshape(s, a, {1, 4})),
                             Fill(s, Shape(s, a), Const(s, 1)),
                             ZerosLike(s, a),
                             OnesLike(s, a),
                             Cast(s, a, kFloat32),
                             Slice(s, a, {1}, {2}),
                             Concat(s, {a, b, a}, 0),
                             Output(offsets, 0),
                             BroadcastTo(s, a, Const(s, std::vector<int32_t>{2, 4})),
                             SumToShape(s, a, Const(s, std::vector<int32_t>{1}))};
  for (const Output& o : Int32MathOps(s, a, b)) ops.push_back(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const Output& o : ops) {
    const KernelDef* k = Find(o);
    ASSERT_NE(k, nullptr) << o.node->DebugName();
    for (int i = 0; i < o.node->num_inputs(); ++i)
      EXPECT_TRUE(k->HostMemoryInput(i)) << o.node->DebugName() << " input " << i;
    for (int i = 0; i < o.node->num_outputs(); ++i)
      EXPECT_TRUE(k->HostMemoryOutput(i)) << o.node->DebugName() << " output " << i;
  }
}

TEST_F(ArrayCudaRegistryTest, DeviceKernelsKeepOnlyShapeArgumentsInHostMemory) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat32, PartialShape({2, 3}));
  auto expect = [&](const Output& o, std::vector<int> in, std::vector<int> out) {
    const KernelDef* k = Find(o);
    ASSERT_NE(k, nullptr) << o.node->DebugName();
    EXPECT_EQ(k->host_memory_inputs, in) << o.node->DebugName();
    EXPECT_EQ(k->host_memory_outputs, out) << o.node->DebugName();
  };
  expect(Const(s, 1.0f), {}, {});
  expect(Identity(s, x), {}, {});
  expect(Reshape(s, x, {3, 2}), {1}, {});
  expect(ExpandDims(s, x, 0), {1}, {});
  expect(Squeeze(s, x), {}, {});
  expect(Shape(s, x), {}, {0});
  expect(Fill(s, Const(s, std::vector<int32_t>{2}), Const(s, 1.0f)), {0, 1}, {});
  expect(Cast(s, x, kInt32), {}, {});
  expect(Slice(s, x, {0, 0}, {1, 1}), {1, 2}, {});
  expect(Concat(s, {x, x}, 1), {}, {});  // the axis: see shape_cuda.cu
  expect(BroadcastTo(s, x, Shape(s, x)), {1}, {});
  expect(SumToShape(s, x, Shape(s, x)), {1}, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

TEST_F(ArrayCudaRegistryTest, OneGpuKernelPerOpAndDtype) {
  for (const char* op :
       {"Const", "Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze", "Shape", "Fill", "ZerosLike",
        "OnesLike", "Cast", "Slice", "SliceGrad", "ConcatV2", "BroadcastTo", "SumToShape", "Add", "Sum"}) {
    std::vector<DataType> seen;
    for (const KernelDef* k : gpu_.KernelsFor(op)) {
      ASSERT_FALSE(k->type_attr.empty()) << op << ": an untyped GPU kernel would match every dtype";
      for (DataType t : k->types) {
        EXPECT_EQ(std::count(seen.begin(), seen.end(), t), 0) << op << " has two GPU kernels for " << Name(t);
        seen.push_back(t);
      }
    }
    EXPECT_FALSE(seen.empty()) << op;
  }
}

TEST_F(ArrayCudaRegistryTest, HostListsOfVariadicOpsAreBounded) {
  Device device(kDeviceGpu, 0, CpuAllocator(), 1);  // the int32 kernels are CPU classes
  for (int values : {kMaxHostListArgs - 1, kMaxHostListArgs}) {
    Graph g;
    Scope s(g);
    Output a = Placeholder(s, kInt32, PartialShape({2}));
    Output c = Concat(s, std::vector<Output>(static_cast<size_t>(values), a), 0);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto kernel = gpu_.CreateKernel(*c.node, &device);
    if (values + 1 <= kMaxHostListArgs) {
      EXPECT_TRUE(kernel.ok()) << kernel.status().ToString();
    } else {
      ASSERT_FALSE(kernel.ok());
      EXPECT_EQ(kernel.status().code(), Code::kUnimplemented) << kernel.status().ToString();
    }
  }
}

// ---- Parity with the CPU kernels ----

TEST(ArrayCudaTest, ConstOfEveryDtype) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType t : AllTypes()) {
    std::vector<Tensor> values = Vectors(t, rng);
    values.push_back(RandomTensor(t, TensorShape{3, 11}, rng));
    values.push_back(RandomTensor(t, TensorShape{}, rng));
    ExpectGpuMatchesCpu(Case{"Const " + Name(t), {}, [values](const Scope& s, V) {
                               std::vector<Output> out;
                               for (const Tensor& v : values) out.push_back(Const(s, v));
                               return out;
                             }});
  }
}

// The device copy is made once and serves every later step.
TEST(ArrayCudaTest, ConstServesEveryStep) {
  TW_SKIP_WITHOUT_GPU();
  Graph g;
  Scope s(g);
  Output c = Const(s.WithDevice(parity::kGpu), std::vector<float>{1, 2, 3, 4, 5, 6, 7}, TensorShape{7});
  Output twice = Concat(s.WithDevice(parity::kGpu), {c, c}, 0);
  Session sess(g);
  for (int step = 0; step < 3; ++step) {
    auto r = sess.Run({twice});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7}));
  }
}

TEST(ArrayCudaTest, PassThroughAndShapeOps) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType t : AllTypes()) {
    ExpectGpuMatchesCpu(Case{"Identity/StopGradient/Reshape/ExpandDims/Squeeze/Shape " + Name(t),
                             Vectors(t, rng), [](const Scope& s, V in) {
                               std::vector<Output> out;
                               for (const Output& x : in) {
                                 out.push_back(Identity(s, x));
                                 out.push_back(StopGradient(s, x));
                                 out.push_back(Reshape(s, x, {1, -1}));
                                 out.push_back(ExpandDims(s, x, 1));
                                 out.push_back(Squeeze(s, ExpandDims(s, x, 0)));
                                 out.push_back(Shape(s, Reshape(s, x, {-1, 1})));
                               }
                               return out;
                             }});
  }
}

TEST(ArrayCudaTest, FillZerosLikeOnesLike) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType t : AllTypes()) {
    std::vector<Tensor> inputs = Vectors(t, rng);
    inputs.push_back(RandomTensor(t, TensorShape{}, rng));  // Fill's value
    ExpectGpuMatchesCpu(Case{"Fill/ZerosLike/OnesLike " + Name(t), inputs, [t](const Scope& s, V in) {
                               std::vector<Output> out;
                               for (size_t i = 0; i + 1 < in.size(); ++i) {
                                 out.push_back(Fill(s, Shape(s, Reshape(s, in[i], {-1, 1})), in.back()));
                                 if (t == kBool) continue;  // ZerosLike/OnesLike take numbers
                                 out.push_back(ZerosLike(s, in[i]));
                                 out.push_back(OnesLike(s, in[i]));
                               }
                               out.push_back(Fill(s, Const(s, std::vector<int32_t>{3, 0, 5}), in.back()));
                               return out;
                             }});
  }
}

TEST(ArrayCudaTest, CastBetweenEveryPairOfDtypes) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType from : AllTypes()) {
    // Values every destination holds (uint8: 0..200), with fractions for floats.
    ExpectGpuMatchesCpu(Case{"Cast from " + Name(from), Vectors(from, rng, 0, 200), [](const Scope& s, V in) {
                               std::vector<Output> out;
                               for (const Output& x : in) {
                                 for (DataType to : AllTypes()) out.push_back(Cast(s, x, to));
                               }
                               return out;
                             }});
  }
}

TEST(ArrayCudaTest, SliceAndSliceGrad) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType t : AllTypes()) {
    std::vector<Tensor> inputs = PerSize(t, rng, [](int64_t n) { return TensorShape{3, n, 2}; });
    ExpectGpuMatchesCpu(Case{"Slice/SliceGrad " + Name(t), inputs, [t](const Scope& s, V in) {
                               std::vector<Output> out;
                               for (const Output& x : in) {
                                 const int64_t n = x.shape().dim(1);
                                 const int64_t b = n / 3,
                                               len = n == 0 ? 0 : std::max<int64_t>(1, (n - b) / 2);
                                 Output strided = Slice(s, x, {1, I(b), 1}, {2, I(len), 1});
                                 out.push_back(strided);
                                 out.push_back(Slice(s, x, {1, 0, 0}, {-1, -1, -1}));  // one contiguous run
                                 out.push_back(Slice(s, x, {0, I(b), 0}, {3, I(len), 2}));
                                 out.push_back(Slice(s, x, {0, 0, 0}, {-1, -1, -1}));  // the whole input
                                 out.push_back(Slice(s, Reshape(s, x, {-1}), {I(3 * n)}, {-1}));
                                 if (t == kBool) continue;  // SliceGrad takes numbers
                                 out.push_back(NodeBuilder(s, "SliceGrad")
                                                   .Input(strided)
                                                   .Input(Const(s, std::vector<int32_t>{1, I(b), 1}))
                                                   .Input(Shape(s, x))
                                                   .Finalize());
                               }
                               return out;
                             }});
  }
}

TEST(ArrayCudaTest, ConcatV2) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType t : AllTypes()) {
    std::vector<Tensor> inputs = PerSize(t, rng, [](int64_t n) { return TensorShape{2, n, 3}; });
    inputs.push_back(RandomTensor(t, TensorShape{2, 5, 3}, rng));
    ExpectGpuMatchesCpu(
        Case{"ConcatV2 " + Name(t), inputs, [](const Scope& s, V in) {
               const Output& other = in.back();
               std::vector<Output> out;
               for (size_t i = 0; i + 1 < in.size(); ++i) {
                 out.push_back(Concat(s, {in[i], other, in[i]}, 1));
                 out.push_back(Concat(s, {in[i], in[i]}, 0));
                 out.push_back(Concat(s, {in[i], Slice(s, in[i], {0, 0, 1}, {-1, -1, 1})}, -1));
                 out.push_back(Concat(s, {in[i]}, 2));
               }
               // An axis computed at run time (not a Const): read back from the GPU.
               Output axis = Add(s, Const(s, 0), Const(s, 1));
               out.push_back(NodeBuilder(s, "ConcatV2").Inputs({in[1], other}).Input(axis).Finalize());
               return out;
             }});
  }
}

TEST(ArrayCudaTest, BroadcastToAndSumToShape) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType t : AllTypes()) {
    std::vector<Tensor> inputs = PerSize(t, rng, [](int64_t n) { return TensorShape{n, 1}; });
    inputs.push_back(RandomTensor(t, TensorShape{}, rng));
    auto shape = [](const Scope& s, std::vector<int64_t> dims) {
      std::vector<int32_t> v;
      for (int64_t d : dims) v.push_back(I(d));
      return Const(s, v);
    };
    Case c{"BroadcastTo/SumToShape " + Name(t), inputs, [t, shape](const Scope& s, V in) {
             std::vector<Output> out;
             for (size_t i = 0; i + 1 < in.size(); ++i) {
               const int64_t n = in[i].shape().dim(0);
               Output big = BroadcastTo(s, in[i], shape(s, {3, n, 4}));
               out.push_back(big);
               out.push_back(BroadcastTo(s, in[i], shape(s, {n, 1})));  // unchanged
               out.push_back(BroadcastTo(s, in.back(), shape(s, {2, n})));
               if (t == kBool) continue;  // SumToShape takes numbers
               // Big sums of [-1, 1] values: float reassociation error grows with n.
               out.push_back(SumToShape(s, big, shape(s, {n, 1})));
               out.push_back(SumToShape(s, big, shape(s, {3, 1, 4})));
               out.push_back(SumToShape(s, big, shape(s, {1})));
               out.push_back(SumToShape(s, big, shape(s, {})));
               out.push_back(SumToShape(s, big, shape(s, {1, n, 4})));
               out.push_back(SumToShape(s, big, shape(s, {3, n, 4})));  // unchanged
             }
             return out;
           }};
    c.rtol = 1e-4;
    c.atol = 1e-3;
    ExpectGpuMatchesCpu(c);
  }
}

// TF's int32-on-host kernels, placed on the GPU: the shape arithmetic of
// gradients, computed without a transfer.
TEST(ArrayCudaTest, Int32ShapeArithmeticOnTheGpuHost) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  std::vector<Tensor> inputs;
  for (int64_t n : OddSizes()) {
    inputs.push_back(RandomTensor(kInt32, TensorShape{n}, rng, -100, 100));
    inputs.push_back(RandomTensor(kInt32, TensorShape{n}, rng, 1, 100));  // divisors
  }
  ExpectGpuMatchesCpu(Case{
      "int32 on the GPU's host", inputs, [](const Scope& s, V in) {
        std::vector<Output> out;
        for (size_t i = 0; i < in.size(); i += 2) {
          const Output &a = in[i], &b = in[i + 1];
          const int32_t n = I(a.shape().dim(0));
          Node* offsets =
              NodeBuilder(s, "ConcatOffset").Input(Const(s, 0)).Inputs({Shape(s, a), Shape(s, b)}).Finalize();
          for (Output o : Int32MathOps(s, a, b)) out.push_back(o);
          for (Output o :
               {Cast(s, a, kFloat32), Cast(s, a, kInt64), Fill(s, Shape(s, a), Const(s, 7)),
                Slice(s, a, {n / 2}, {-1}), Concat(s, {a, b}, 0), Output(offsets, 1), Reshape(s, a, {1, -1}),
                ExpandDims(s, a, 0), Squeeze(s, ExpandDims(s, a, 1)), Identity(s, a), ZerosLike(s, a),
                OnesLike(s, a),
                SumToShape(s, BroadcastTo(s, a, Const(s, std::vector<int32_t>{2, n})), Shape(s, a))}) {
            out.push_back(o);
          }
        }
        return out;
      }});
}

// ---- Errors: the GPU kernels reject what the CPU kernels reject ----

Tensor I32Vec(std::vector<int32_t> v) { return Tensor::Vec<int32_t>(v); }

TEST(ArrayCudaTest, ErrorsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(1);
  const Tensor x = RandomTensor(kFloat32, TensorShape{7, 33}, rng);
  ExpectSameError(Case{"Reshape to a bad size",
                       {x, I32Vec({5, 5})},
                       [](const Scope& s, V in) { return std::vector<Output>{Reshape(s, in[0], in[1])}; }},
                  "cannot reshape a tensor of shape [7,33]");
  ExpectSameError(
      Case{"Slice out of range",
           {x, I32Vec({2, 0}), I32Vec({6, 33})},
           [](const Scope& s, V in) { return std::vector<Output>{Slice(s, in[0], in[1], in[2])}; }},
      "are out of bounds for input of shape [7,33]");
  ExpectSameError(Case{"SliceGrad out of range",
                       {x, I32Vec({1, 1}), I32Vec({7, 33})},
                       [](const Scope& s, V in) {
                         return std::vector<Output>{
                             NodeBuilder(s, "SliceGrad").Input(in[0]).Input(in[1]).Input(in[2]).Finalize()};
                       }},
                  "are out of bounds");
  ExpectSameError(Case{"ConcatV2 of unequal shapes",
                       {x, RandomTensor(kFloat32, TensorShape{6, 33}, rng)},
                       [](const Scope& s, V in) {
                         return std::vector<Output>{Concat(s, {in[0], in[1]}, 1)};
                       }},
                  "differ outside axis 1");
  ExpectSameError(Case{"ConcatV2 axis out of range",
                       {x, Tensor::Scalar<int32_t>(2)},
                       [](const Scope& s, V in) {
                         return std::vector<Output>{
                             NodeBuilder(s, "ConcatV2").Inputs({in[0], in[0]}).Input(in[1]).Finalize()};
                       }},
                  "axis 2 is out of range");
  ExpectSameError(
      Case{"BroadcastTo an incompatible shape",
           {x, I32Vec({7, 32})},
           [](const Scope& s, V in) { return std::vector<Output>{BroadcastTo(s, in[0], in[1])}; }},
      "is not broadcast-compatible");
  ExpectSameError(Case{"SumToShape an incompatible shape",
                       {x, I32Vec({3})},
                       [](const Scope& s, V in) { return std::vector<Output>{SumToShape(s, in[0], in[1])}; }},
                  "is not broadcast-compatible");
  ExpectSameError(Case{"Fill with a vector value",
                       {I32Vec({2, 3}), RandomTensor(kFloat32, TensorShape{2}, rng)},
                       [](const Scope& s, V in) { return std::vector<Output>{Fill(s, in[0], in[1])}; }},
                  "value must be a scalar");
  ExpectSameError(
      Case{"ExpandDims out of range",
           {x, Tensor::Scalar<int32_t>(3)},
           [](const Scope& s, V in) {
             return std::vector<Output>{NodeBuilder(s, "ExpandDims").Input(in[0]).Input(in[1]).Finalize()};
           }},
      "dim 3 is out of range");
}

// ---- Host memory: Shape -> Reshape never copies the data ----

// The transfers a step made (StepStats), as "node:output /device:X -> /device:Y".
std::vector<std::string> Transfers(const StepStats& stats) {
  std::vector<std::string> out;
  for (const StepStats::NodeTiming& t : stats.nodes) {
    if (!t.transfer) continue;
    out.push_back(t.node->name() + ":" + std::to_string(t.output) + " " + t.transfer_from->short_name() +
                  " -> " + t.device->short_name());
  }
  return out;
}

// The gradient of a Reshape is Reshape(dy, Shape(x)). On a GPU, Shape reads
// only x's shape and writes its int32 output in host memory, where Reshape
// reads its shape argument: the only transfer of the step is the fetched
// corner of dx.
TEST(ArrayCudaTest, ReshapeGradientKeepsShapesOnTheHost) {
  TW_SKIP_WITHOUT_GPU();
  Graph g;
  Scope root(g);
  Output value = Placeholder(root.WithOpName("value"), kFloat32, PartialShape({}));
  Scope gpu = root.WithDevice(parity::kGpu);
  Output x = Fill(gpu.WithOpName("x"), Const(gpu, std::vector<int32_t>{1000, 33}), value);
  Output y = Reshape(gpu.WithOpName("y"), x, {-1});
  Output dy = OnesLike(gpu.WithOpName("dy"), y);
  auto grads = Gradients(gpu, {y}, {x}, {dy});
  ASSERT_TRUE(grads.ok()) << grads.status().ToString();
  const Output dx = (*grads)[0];
  Output corner = Slice(gpu.WithOpName("corner"), dx, {0, 0}, {1, 2});
  Output dx_shape = Shape(gpu.WithOpName("dx_shape"), dx);
  ASSERT_TRUE(root.ok()) << root.status().ToString();

  Session sess(g);
  StepStats stats;
  auto r = sess.Run({{value, Tensor::Scalar<float>(2.0f)}}, {corner, dx_shape}, {}, &stats);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ((*r)[1].ToVector<int32_t>(), (std::vector<int32_t>{1000, 33}));
  for (const Output& o : {x, y, dy, dx}) {
    EXPECT_EQ(sess.impl().placement().device(*o.node)->device_type(), kDeviceGpu) << o.node->DebugName();
  }
  EXPECT_EQ(Transfers(stats), (std::vector<std::string>{"corner:0 /device:GPU:0 -> /device:CPU:0"}));
}

TEST(ArrayCudaTest, Int32GraphOnTheGpuMakesNoTransfers) {
  TW_SKIP_WITHOUT_GPU();
  Graph g;
  Scope root(g);
  Output a = Placeholder(root.WithOpName("a"), kInt32, PartialShape({5}));
  Scope gpu = root.WithDevice(parity::kGpu);
  Output doubled = Mul(gpu, Add(gpu, a, a), Const(gpu, 2));
  Output total = Sum(gpu, Concat(gpu, {doubled, Neg(gpu, a)}, 0), {0});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session sess(g);
  StepStats stats;
  auto r = sess.Run({{a, I32Vec({1, 2, 3, 4, 5})}}, {total}, {}, &stats);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<int32_t>(), (std::vector<int32_t>{45}));
  EXPECT_EQ(sess.impl().placement().device(*total.node)->device_type(), kDeviceGpu);
  EXPECT_TRUE(Transfers(stats).empty()) << ::testing::PrintToString(Transfers(stats));
}

}  // namespace
}  // namespace tw
