// The variable GPU kernels (state_cuda.cu) against their CPU twins
// (state_kernels.cc): Assign / AssignAdd / AssignSub and reads back of float,
// double, int32 and int64 variables over odd sizes, Assign changing a shape,
// IsVariableInitialized, the kernels' errors, and an int64 global step that
// lives on the GPU across steps. Tests that run graphs skip without a GPU;
// the registration test needs none.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/train/optimizer.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using parity::Case;
using parity::ExpectGpuMatchesCpu;
using parity::ExpectSameError;
using parity::RandomTensor;
using V = const std::vector<Output>&;

const std::vector<DataType> kTypes = {kFloat32, kFloat64, kInt32, kInt64};

std::string Name(DataType t) { return std::string(DataTypeName(t)); }

// Floats in [-1, 1], integers in [-100, 100].
Tensor Values(DataType t, const TensorShape& shape, std::mt19937_64& rng) {
  return t == kInt32 || t == kInt64 ? RandomTensor(t, shape, rng, -100, 100) : RandomTensor(t, shape, rng);
}

TEST(StateCudaRegistryTest, VariablesAreDeviceMemoryAndTheFlagIsHostMemory) {
  EnsureKernelsRegistered();
  KernelRegistry gpu;
  RegisterStateCudaKernels(gpu, KernelRegistry::Global());
  for (const char* op : {"VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized"}) {
    std::vector<DataType> types;
    for (const KernelDef* k : gpu.KernelsFor(op)) {
      EXPECT_EQ(k->device_type, kDeviceGpu) << op;
      EXPECT_TRUE(k->host_memory_inputs.empty()) << op;
      EXPECT_EQ(k->host_memory_outputs,
                std::string(op) == "IsVariableInitialized" ? std::vector<int>{0} : std::vector<int>{})
          << op;
      types.insert(types.end(), k->types.begin(), k->types.end());
    }
    std::sort(types.begin(), types.end());
    EXPECT_EQ(types, kTypes) << op;
  }
}

TEST(StateCudaTest, AssignAddSubAndReadBack) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  std::vector<int64_t> sizes = parity::OddSizes();
  sizes.push_back(0);
  for (DataType t : kTypes) {
    std::vector<Tensor> inputs;  // x, y, z per size: v = x; v += y; v -= z
    for (int64_t n : sizes) {
      for (int k = 0; k < 3; ++k) inputs.push_back(Values(t, TensorShape{n}, rng));
    }
    ExpectGpuMatchesCpu(Case{"Assign/AssignAdd/AssignSub " + Name(t), inputs, [t](const Scope& s, V in) {
                               std::vector<Output> out;
                               for (size_t i = 0; i < in.size(); i += 3) {
                                 Output v = VariableV2(s, in[i].shape(), t);
                                 Output sub =
                                     AssignSub(s, AssignAdd(s, Assign(s, v, in[i]), in[i + 1]), in[i + 2]);
                                 out.push_back(sub);
                                 out.push_back(Identity(s.WithControlDependencies({sub}), v));
                               }
                               return out;
                             }});
  }
}

// validate_shape=false gives the variable a new buffer of the value's shape;
// the next Assign of that shape writes it in place.
TEST(StateCudaTest, AssignChangesTheShapeWithoutValidation) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType t : kTypes) {
    ExpectGpuMatchesCpu(Case{"Assign without validate_shape " + Name(t),
                             {Values(t, TensorShape{33}, rng), Values(t, TensorShape{33}, rng),
                              Values(t, TensorShape{3, 1000}, rng)},
                             [t](const Scope& s, V in) {
                               Output v = VariableV2(s, PartialShape({7}), t);
                               Output reshaped = Assign(s, v, in[0], {.validate_shape = false});
                               Output in_place = Assign(s, reshaped, in[1]);
                               // The read shares the [33] buffer; growing the variable gives it a new one.
                               Output read = Identity(s, in_place);
                               Output grown = Assign(s.WithControlDependencies({read}), v, in[2],
                                                     {.validate_shape = false});
                               return std::vector<Output>{read, grown};
                             }});
  }
}

TEST(StateCudaTest, IsVariableInitialized) {
  TW_SKIP_WITHOUT_GPU();
  for (DataType t : kTypes) {
    Case c{"IsVariableInitialized " + Name(t), {Tensor(t, TensorShape{7})}, [t](const Scope& s, V in) {
             Output assigned = VariableV2(s, PartialShape({7}), t);
             Output fresh = VariableV2(s, PartialShape({7}), t);
             Output init = Assign(s, assigned, in[0]);
             return std::vector<Output>{IsVariableInitialized(s.WithControlDependencies({init}), assigned),
                                        IsVariableInitialized(s, fresh)};
           }};
    Status status;
    std::vector<Tensor> gpu = parity::RunOn(c, parity::kGpu, &status);
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_EQ(gpu.size(), 2u);
    EXPECT_TRUE(gpu[0].scalar<bool>()) << c.name;
    EXPECT_FALSE(gpu[1].scalar<bool>()) << c.name;
  }
}

TEST(StateCudaTest, ErrorsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(1);
  const Tensor x3 = Values(kFloat32, TensorShape{3}, rng), x4 = Values(kFloat32, TensorShape{4}, rng);
  ExpectSameError(
      Case{"Assign of another shape than the declared one",
           {x4},
           [](const Scope& s, V in) {
             return std::vector<Output>{Assign(s, VariableV2(s, PartialShape({3}), kFloat32), in[0])};
           }},
      "Assign requires shapes of both tensors to match");
  ExpectSameError(Case{"Assign of another shape than the current one",
                       {x3, x4},
                       [](const Scope& s, V in) {
                         Output v = VariableV2(s, PartialShape::Unknown(), kFloat32);
                         Output first = Assign(s, v, in[0], {.validate_shape = false});
                         return std::vector<Output>{Assign(s.WithControlDependencies({first}), v, in[1])};
                       }},
                  "has shape [3] but the value has shape [4]");
  ExpectSameError(Case{"AssignAdd of another shape",
                       {x3, x4},
                       [](const Scope& s, V in) {
                         Output v = VariableV2(s, PartialShape::Unknown(), kFloat32);
                         Output first = Assign(s, v, in[0], {.validate_shape = false});
                         return std::vector<Output>{AssignAdd(s.WithControlDependencies({first}), v, in[1])};
                       }},
                  "AssignAdd: variable");
  ExpectSameError(Case{"read of an uninitialized variable",
                       {},
                       [](const Scope& s, V) {
                         return std::vector<Output>{
                             Identity(s, VariableV2(s.WithOpName("w"), PartialShape({3}), kFloat32))};
                       }},
                  "Attempting to use uninitialized value w");
  ExpectSameError(Case{"AssignSub of an uninitialized variable",
                       {x3},
                       [](const Scope& s, V in) {
                         return std::vector<Output>{
                             AssignSub(s, VariableV2(s.WithOpName("w"), PartialShape({3}), kFloat32), in[0])};
                       }},
                  "Attempting to use uninitialized value w");
}

// An int64 global step requested on the GPU stays there with its
// initializer, read and increment (no soft placement), and counts.
TEST(StateCudaTest, Int64GlobalStepCountsOnTheGpu) {
  TW_SKIP_WITHOUT_GPU();
  Graph g;
  Scope root(g);
  Scope gpu = root.WithDevice(parity::kGpu);
  Variable step = train::GetOrCreateGlobalStep(gpu);
  Output inc = AssignAdd(gpu, step, Const(gpu, Tensor::Scalar<int64_t>(1)));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session sess(g);
  ASSERT_TRUE(sess.Run(step.initializer).ok());
  for (int64_t k = 1; k <= 3; ++k) {
    auto r = sess.Run({inc});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].scalar<int64_t>(), k);
  }
  auto read = sess.Run({step.value});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ((*read)[0].scalar<int64_t>(), 3);
  for (const Node* n : {step.ref.node, step.value.node, step.initializer, inc.node}) {
    EXPECT_EQ(sess.impl().placement().device(*n)->device_type(), kDeviceGpu) << n->DebugName();
  }
}

}  // namespace
}  // namespace tw
