// The momentum update group on a GPU (training_cuda.cu's
// ApplyMomentumGroupKernel) against its CPU twin (update_group.h's
// SequentialGroupKernel, which is ApplyMomentum run per variable): variables
// of odd sizes (1, 7, 33, 1000, and 40 of them, more than one launch's 32),
// float and double, plain and Nesterov, three steps; the plan must hold one
// group item. Skipped without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using parity::Near;
using parity::ParitySessionOptions;
using parity::PoisonNewGpuMemory;
using parity::RandomTensor;

struct GroupRun {
  std::vector<std::vector<Tensor>> values;  // per variable: var, accum
  int groups = 0;
};

GroupRun RunGroup(const std::string& device, DataType dtype, bool nesterov, const std::vector<int64_t>& sizes) {
  Graph graph;
  Scope s = Scope(graph).WithDevice(device);
  std::mt19937_64 rng(42);
  auto scalar = [&](double v) {
    return Const(s, dtype == kFloat32 ? Tensor::Scalar<float>(static_cast<float>(v)) : Tensor::Scalar<double>(v));
  };
  std::vector<Output> inits, updates, vars, accums;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const TensorShape shape{sizes[i]};
    Output var = VariableV2(s.WithOpName("v" + std::to_string(i)), shape, dtype);
    Output acc = VariableV2(s.WithOpName("a" + std::to_string(i)), shape, dtype);
    inits.push_back(Assign(s, var, Const(s, RandomTensor(dtype, shape, rng))));
    inits.push_back(Assign(s, acc, Const(s, RandomTensor(dtype, shape, rng))));
    // The optimizer's way: one learning-rate and momentum constant per variable.
    updates.push_back(ApplyMomentum(s.WithOpName("update" + std::to_string(i)), var, acc, scalar(0.05),
                                    Const(s, RandomTensor(dtype, shape, rng)), scalar(0.9), nesterov));
    vars.push_back(var);
    accums.push_back(acc);
  }
  Node* init = NoOp(s.WithOpName("init").WithControlDependencies(inits));
  Node* step = NoOp(s.WithOpName("step").WithControlDependencies(updates));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  SessionOptions options = ParitySessionOptions();
  Session session(graph, options);
  GroupRun out;
  EXPECT_TRUE(session.Run(init).ok());
  for (int k = 0; k < 3; ++k) {
    Status st = session.Run(step);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  auto plan = session.impl().GetPlan({}, {}, {step});
  if (plan.ok()) {
    for (const auto& item : (*plan)->items) out.groups += item.fused != nullptr && item.fused->group;
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto r = session.Run({Identity(Scope(graph), vars[i]), Identity(Scope(graph), accums[i])});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.values.push_back(*r);
  }
  return out;
}

TEST(UpdateGroupCudaTest, MomentumGroupMatchesTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  PoisonNewGpuMemory();
  std::vector<int64_t> many;
  for (int i = 0; i < 40; ++i) many.push_back(1 + 37 * i);
  for (const auto& sizes : {std::vector<int64_t>{1, 7, 33, 1000}, many}) {
    for (DataType dtype : {kFloat32, kFloat64}) {
      for (bool nesterov : {false, true}) {
        SCOPED_TRACE(testing::Message() << DataTypeName(dtype) << " nesterov " << nesterov << ", "
                                        << sizes.size() << " variables");
        const GroupRun gpu = RunGroup("/device:GPU:0", dtype, nesterov, sizes);
        const GroupRun cpu = RunGroup("/device:CPU:0", dtype, nesterov, sizes);
        EXPECT_EQ(gpu.groups, 1) << "the GPU plan groups the updates";
        EXPECT_EQ(cpu.groups, 0) << "CPU plans do not";
        ASSERT_EQ(gpu.values.size(), cpu.values.size());
        for (size_t i = 0; i < gpu.values.size(); ++i) {
          EXPECT_TRUE(Near(gpu.values[i][0], cpu.values[i][0], 1e-5, 1e-6)) << "variable " << i;
          EXPECT_TRUE(Near(gpu.values[i][1], cpu.values[i][1], 1e-5, 1e-6)) << "accumulator " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tw
