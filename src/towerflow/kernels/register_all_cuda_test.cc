// The CUDA kernel registry (register_all_cuda.cc, cuda_kernels.h), checked
// without a GPU: RegisterCudaKernels into a registry of its own, the CPU
// kernels of KernelRegistry::Global() as the source. Every GPU KernelDef has
// a CPU twin for the same op and dtype (STYLE.md), its host-memory indices name
// arguments of the op, and the ops of the MLP and CNN training paths have
// float32 GPU kernels. Runs everywhere a CUDA build does (label cuda; no skip:
// it needs no GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "towerflow/graph/op_def.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

bool HasType(const KernelDef& k, DataType t) {
  return k.type_attr.empty() || std::find(k.types.begin(), k.types.end(), t) != k.types.end();
}

class RegisterAllCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureKernelsRegistered();
    RegisterCudaKernels(gpu_, KernelRegistry::Global());
  }
  // The GPU KernelDefs of every op in the op registry.
  std::vector<const KernelDef*> GpuKernels() const {
    std::vector<const KernelDef*> out;
    for (const OpDef* def : OpRegistry::Global().List()) {
      for (const KernelDef* k : gpu_.KernelsFor(def->name)) out.push_back(k);
    }
    return out;
  }

  KernelRegistry gpu_;
};

TEST_F(RegisterAllCudaTest, RegistersOnlyGpuKernelsOfKnownOps) {
  std::vector<const KernelDef*> all = GpuKernels();
  EXPECT_FALSE(all.empty());
  for (const KernelDef* k : all) {
    EXPECT_EQ(k->device_type, kDeviceGpu) << k->op;
    EXPECT_TRUE(k->factory != nullptr) << k->op;
  }
}

TEST_F(RegisterAllCudaTest, EveryGpuKernelHasACpuTwin) {
  const KernelRegistry& cpu = KernelRegistry::Global();
  for (const KernelDef* k : GpuKernels()) {
    std::vector<const KernelDef*> twins;
    for (const KernelDef* c : cpu.KernelsFor(k->op)) {
      if (c->device_type == kDeviceCpu) twins.push_back(c);
    }
    if (k->type_attr.empty()) {
      EXPECT_FALSE(twins.empty()) << "GPU kernel of " << k->op << " has no CPU twin";
      continue;
    }
    for (DataType t : k->types) {
      const bool found = std::any_of(twins.begin(), twins.end(), [&](const KernelDef* c) {
        return (c->type_attr.empty() || c->type_attr == k->type_attr) && HasType(*c, t);
      });
      EXPECT_TRUE(found) << "GPU kernel of " << k->op << " for " << k->type_attr << "=" << DataTypeName(t)
                         << " has no CPU twin; CPU kernels:" << cpu.DescribeKernels(k->op);
    }
  }
}

TEST_F(RegisterAllCudaTest, HostMemoryIndicesNameArgumentsOfTheOp) {
  for (const KernelDef* k : GpuKernels()) {
    const OpDef* def = OpRegistry::Global().Find(k->op);
    ASSERT_NE(def, nullptr) << k->op;
    // A list argument (AddN's inputs) makes the count a node's own: no upper
    // bound then (-1).
    auto bound = [](const std::vector<ArgDef>& args) {
      for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].number_attr.empty()) return -1;
      }
      return static_cast<int>(args.size());
    };
    const int inputs = bound(def->inputs), outputs = bound(def->outputs);
    for (int i : k->host_memory_inputs) {
      EXPECT_GE(i, 0) << k->op;
      if (inputs >= 0) {
        EXPECT_LT(i, inputs) << k->op << ": host-memory input " << i << " of " << inputs;
      }
    }
    for (int o : k->host_memory_outputs) {
      EXPECT_GE(o, 0) << k->op;
      if (outputs >= 0) {
        EXPECT_LT(o, outputs) << k->op << ": host-memory output " << o << " of " << outputs;
      }
    }
  }
}

// Every op a float32 MLP or CNN training step runs (forward, gradients, the
// optimizers, variables and the shapes between them) has a float32 GPU kernel,
// so that no node of those graphs falls back to the CPU. Fails until every
// CUDA kernel family has landed.
TEST_F(RegisterAllCudaTest, TrainingPathOpsHaveFloatGpuKernels) {
  // clang-format off
  const std::vector<std::string> ops = {
      "MatMul", "BiasAdd", "BiasAddGrad", "BiasAddRelu", "BiasAddReluGrad", "Relu", "ReluGrad",
      "SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyMean", "Mean", "Sum", "ApplyMomentum", "ApplyGradientDescent",
      "ApplyAdam", "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad",
      "VariableV2", "Assign", "Identity", "Reshape", "Shape", "Const", "Fill", "AddN", "Mul", "Add", "Sub",
      "Div"};
  // clang-format on
  for (const std::string& op : ops) {
    ASSERT_NE(OpRegistry::Global().Find(op), nullptr) << op << " is not an op";
    const std::vector<const KernelDef*> kernels = gpu_.KernelsFor(op);
    const bool has_float = std::any_of(kernels.begin(), kernels.end(), [](const KernelDef* k) {
      return k->device_type == kDeviceGpu && HasType(*k, kFloat32);
    });
    EXPECT_TRUE(has_float) << op << " has no float GPU kernel; registered:" << gpu_.DescribeKernels(op);
  }
}

}  // namespace
}  // namespace tw
