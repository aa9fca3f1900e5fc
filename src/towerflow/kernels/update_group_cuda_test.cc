// The update groups on a GPU (internal/update_group_cuda.cuh's
// GpuUpdateGroupOp over ApplyMomentum, ApplyGradientDescent, ApplyAdam,
// ApplyRMSProp, ApplyCenteredRMSProp and ApplyAdagrad) against their CPU twin
// (update_group.h's SequentialGroupKernel, which runs the op per variable):
// variables of odd sizes (1, 7, 33, 1000, and 40 of them, more than one
// launch's 32), float and double, plain and Nesterov (Adagrad: with and
// without update_slots), three steps, the step
// counted by an int64 global step's AssignAdd that waits for every update
// (the group's step bump, done by its first launch); the plan must hold one
// group item, the bump its last member; and the group's values equal those of
// the same updates run apart on the GPU, bit for bit. Skipped without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
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
  std::vector<std::vector<Tensor>> values;  // per variable: var and its slots
  int groups = 0;
  size_t group_members = 0;  // of the last group
  int64_t global_step = -1;
};

enum class Update { kMomentum, kGradientDescent, kAdam, kRMSProp, kCenteredRMSProp, kAdagrad };

// How a variable starts: random in [-1, 1], its square (a running mean of
// squares is never negative), or its square plus one (a mean of squares that
// stays above the square of a mean in [-1, 1]: centered RMSProp's variance).
enum class Start { kRandom, kSquare, kSquarePlusOne };

// `grouped` false: the plan without fusions or groups (each update its own kernel).
GroupRun RunGroup(const std::string& device, Update update, DataType dtype, bool nesterov,
                  const std::vector<int64_t>& sizes, DataType step_dtype = kInt64, bool grouped = true) {
  Graph graph;
  Scope s = Scope(graph).WithDevice(device);
  std::mt19937_64 rng(42);
  auto scalar = [&](double v) {
    return Const(s, dtype == kFloat32 ? Tensor::Scalar<float>(static_cast<float>(v)) : Tensor::Scalar<double>(v));
  };
  std::vector<Output> inits, updates;
  std::vector<std::vector<Output>> state;  // per variable: var and its slots
  auto variable = [&](const std::string& name, const TensorShape& shape, Start start) {
    Output v = VariableV2(s.WithOpName(name), shape, dtype);
    Output value = Const(s, RandomTensor(dtype, shape, rng));
    Output init = start == Start::kRandom ? value : Square(s, value);
    if (start == Start::kSquarePlusOne) init = Add(s, init, scalar(1));
    inits.push_back(Assign(s, v, init));
    return v;
  };
  // Adam's beta powers are one pair of variables shared by every update, as
  // the optimizer makes them (after a few steps).
  Output beta1_power = VariableV2(s.WithOpName("beta1_power"), TensorShape{}, dtype);
  Output beta2_power = VariableV2(s.WithOpName("beta2_power"), TensorShape{}, dtype);
  inits.push_back(Assign(s, beta1_power, scalar(0.729)));
  inits.push_back(Assign(s, beta2_power, scalar(0.997)));
  for (size_t i = 0; i < sizes.size(); ++i) {
    const TensorShape shape{sizes[i]};
    const std::string n = std::to_string(i);
    Output var = variable("v" + n, shape, Start::kRandom);
    Output grad = Const(s, RandomTensor(dtype, shape, rng));
    const Scope named = s.WithOpName("update" + n);
    // The optimizer's way: one constant per variable for each hyperparameter.
    switch (update) {
      case Update::kMomentum: {
        Output acc = variable("a" + n, shape, Start::kRandom);
        updates.push_back(ApplyMomentum(named, var, acc, scalar(0.05), grad, scalar(0.9), nesterov));
        state.push_back({var, acc});
        break;
      }
      case Update::kGradientDescent:
        updates.push_back(ApplyGradientDescent(named, var, scalar(0.05), grad));
        state.push_back({var});
        break;
      case Update::kAdam: {
        Output m = variable("m" + n, shape, Start::kRandom);
        Output v = variable("s" + n, shape, Start::kSquare);
        updates.push_back(ApplyAdam(named, var, m, v, beta1_power, beta2_power, scalar(0.01), scalar(0.9),
                                    scalar(0.999), scalar(1e-7), grad, nesterov));
        state.push_back({var, m, v});
        break;
      }
      case Update::kRMSProp: {
        Output ms = variable("ms" + n, shape, Start::kSquare);
        Output mom = variable("mom" + n, shape, Start::kRandom);
        updates.push_back(ApplyRMSProp(named, var, ms, mom, scalar(0.01), scalar(0.9), scalar(0.5), scalar(1e-7),
                                       grad));
        state.push_back({var, ms, mom});
        break;
      }
      case Update::kCenteredRMSProp: {
        Output mg = variable("mg" + n, shape, Start::kRandom);
        Output ms = variable("ms" + n, shape, Start::kSquarePlusOne);
        Output mom = variable("mom" + n, shape, Start::kRandom);
        updates.push_back(ApplyCenteredRMSProp(named, var, mg, ms, mom, scalar(0.01), scalar(0.9), scalar(0.5),
                                               scalar(1e-7), grad));
        state.push_back({var, mg, ms, mom});
        break;
      }
      case Update::kAdagrad: {
        Output accum = variable("acc" + n, shape, Start::kSquarePlusOne);
        updates.push_back(ApplyAdagrad(named, var, accum, scalar(0.05), grad, /*update_slots=*/!nesterov));
        state.push_back({var, accum});
        break;
      }
    }
  }
  // (An int32 step's constant lives in host memory on a GPU: a copy in.)
  auto step_scalar = [&](int64_t v) {
    return step_dtype == kInt32 ? Tensor::Scalar<int32_t>(static_cast<int32_t>(v)) : Tensor::Scalar<int64_t>(v);
  };
  Output global_step = VariableV2(s.WithOpName("global_step"), TensorShape{}, step_dtype);
  inits.push_back(Assign(s, global_step, Const(s, step_scalar(0))));
  Node* init = NoOp(s.WithOpName("init").WithControlDependencies(inits));
  Node* step = AssignAdd(s.WithOpName("step").WithControlDependencies(updates), global_step,
                         Const(s.WithOpName("one"), step_scalar(1)))
                   .node;
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  SessionOptions options = ParitySessionOptions();
  options.fuse_kernels = grouped;
  Session session(graph, options);
  GroupRun out;
  EXPECT_TRUE(session.Run(init).ok());
  for (int k = 0; k < 3; ++k) {
    Status st = session.Run(step);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  auto plan = session.impl().GetPlan({}, {}, {step});
  if (plan.ok()) {
    for (const auto& item : (*plan)->items) {
      if (item.fused == nullptr || !item.fused->group) continue;
      ++out.groups;
      out.group_members = item.fused->nodes.size();
      EXPECT_EQ(item.fused->nodes.back()->name(), "step");
    }
  }
  auto counted = session.Run({Identity(Scope(graph), global_step)});
  EXPECT_TRUE(counted.ok()) << counted.status().ToString();
  if (counted.ok()) {
    out.global_step = step_dtype == kInt32 ? (*counted)[0].scalar<int32_t>() : (*counted)[0].scalar<int64_t>();
  }
  for (const std::vector<Output>& outputs : state) {
    std::vector<Output> reads;
    for (const Output& o : outputs) reads.push_back(Identity(Scope(graph), o));
    auto r = session.Run(reads);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.values.push_back(*r);
  }
  return out;
}

const char* UpdateName(Update update) {
  switch (update) {
    case Update::kMomentum:
      return "ApplyMomentum";
    case Update::kGradientDescent:
      return "ApplyGradientDescent";
    case Update::kAdam:
      return "ApplyAdam";
    case Update::kRMSProp:
      return "ApplyRMSProp";
    case Update::kCenteredRMSProp:
      return "ApplyCenteredRMSProp";
    case Update::kAdagrad:
      return "ApplyAdagrad";
  }
  return "?";
}

TEST(UpdateGroupCudaTest, GroupsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  PoisonNewGpuMemory();
  std::vector<int64_t> many;
  for (int i = 0; i < 40; ++i) many.push_back(1 + 37 * i);
  for (Update update : {Update::kMomentum, Update::kGradientDescent, Update::kAdam, Update::kRMSProp,
                        Update::kCenteredRMSProp, Update::kAdagrad}) {
    for (const auto& sizes : {std::vector<int64_t>{1, 7, 33, 1000}, many}) {
      for (DataType dtype : {kFloat32, kFloat64}) {
        for (bool nesterov : {false, true}) {
          // The variant: Nesterov for momentum and Adam, no slot update for Adagrad.
          const bool has_variant = update == Update::kMomentum || update == Update::kAdam || update == Update::kAdagrad;
          if (!has_variant && nesterov) continue;
          SCOPED_TRACE(testing::Message() << UpdateName(update) << " " << DataTypeName(dtype) << " variant "
                                          << nesterov << ", " << sizes.size() << " variables");
          const GroupRun gpu = RunGroup("/device:GPU:0", update, dtype, nesterov, sizes);
          const GroupRun cpu = RunGroup("/device:CPU:0", update, dtype, nesterov, sizes);
          EXPECT_EQ(gpu.groups, 1) << "the GPU plan groups the updates";
          EXPECT_EQ(gpu.group_members, sizes.size() + 1) << "and the step";
          EXPECT_EQ(cpu.groups, 0) << "CPU plans do not";
          EXPECT_EQ(gpu.global_step, 3);
          EXPECT_EQ(cpu.global_step, 3);
          ASSERT_EQ(gpu.values.size(), cpu.values.size());
          for (size_t i = 0; i < gpu.values.size(); ++i) {
            ASSERT_EQ(gpu.values[i].size(), cpu.values[i].size());
            for (size_t k = 0; k < gpu.values[i].size(); ++k) {
              EXPECT_TRUE(Near(gpu.values[i][k], cpu.values[i][k], 1e-5, 1e-6))
                  << "variable " << i << (k == 0 ? "" : ", slot " + std::to_string(k));
            }
          }
          // The group rounds each element as the op's own GPU kernel does: bit for bit.
          const GroupRun apart = RunGroup("/device:GPU:0", update, dtype, nesterov, sizes, kInt64, false);
          EXPECT_EQ(apart.groups, 0);
          ASSERT_EQ(gpu.values.size(), apart.values.size());
          for (size_t i = 0; i < gpu.values.size(); ++i) {
            for (size_t k = 0; k < gpu.values[i].size(); ++k) {
              EXPECT_TRUE(Near(gpu.values[i][k], apart.values[i][k], 0, 0))
                  << "grouped against apart: variable " << i << (k == 0 ? "" : ", slot " + std::to_string(k));
            }
          }
        }
      }
    }
  }
}

TEST(UpdateGroupCudaTest, AnInt32StepIsCountedToo) {
  TW_SKIP_WITHOUT_GPU();
  const GroupRun gpu = RunGroup("/device:GPU:0", Update::kMomentum, kFloat32, false, {7, 33}, kInt32);
  EXPECT_EQ(gpu.groups, 1);
  EXPECT_EQ(gpu.group_members, 3u);
  EXPECT_EQ(gpu.global_step, 3);
}

}  // namespace
}  // namespace tw
