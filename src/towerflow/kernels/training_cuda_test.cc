// The training update CUDA kernels (training_cuda.cu) against their CPU twins
// (training_kernels.cc): variables on /device:GPU:0 updated by
// ApplyGradientDescent, ApplyMomentum (plain and Nesterov), ApplyAdam (plain
// and Nesterov), ApplyRMSProp (plain and centered) and ApplyAdagrad (with and
// without slot updates; the GPU kernels in adaptive_training_cuda.cu) for float and double over odd sizes, compared with the same
// graph on the CPU after one and after three steps; and the twins' errors.
// Skipped without a GPU, except the registration test, which needs none.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

const std::vector<DataType> kTypes = {kFloat32, kFloat64};

enum class Update {
  kGradientDescent,
  kMomentum,
  kNesterovMomentum,
  kAdam,
  kNesterovAdam,
  kRMSProp,
  kCenteredRMSProp,
  kAdagrad,
  kAdagradNoSlotUpdate
};
const std::vector<Update> kUpdates = {Update::kGradientDescent, Update::kMomentum,     Update::kNesterovMomentum,
                                      Update::kAdam,            Update::kNesterovAdam, Update::kRMSProp,
                                      Update::kCenteredRMSProp, Update::kAdagrad,      Update::kAdagradNoSlotUpdate};

std::string UpdateName(Update u) {
  switch (u) {
    case Update::kGradientDescent:
      return "ApplyGradientDescent";
    case Update::kMomentum:
      return "ApplyMomentum";
    case Update::kNesterovMomentum:
      return "ApplyMomentum(nesterov)";
    case Update::kAdam:
      return "ApplyAdam";
    case Update::kNesterovAdam:
      return "ApplyAdam(nesterov)";
    case Update::kRMSProp:
      return "ApplyRMSProp";
    case Update::kCenteredRMSProp:
      return "ApplyCenteredRMSProp";
    case Update::kAdagrad:
      return "ApplyAdagrad";
    case Update::kAdagradNoSlotUpdate:
      return "ApplyAdagrad(update_slots=false)";
  }
  return "?";
}
Tensor ScalarOf(DataType dtype, double v) {
  return dtype == kFloat32 ? Tensor::Scalar<float>(static_cast<float>(v)) : Tensor::Scalar<double>(v);
}

int SlotCount(Update u) {
  switch (u) {
    case Update::kGradientDescent:
      return 0;
    case Update::kAdam:
    case Update::kNesterovAdam:
    case Update::kRMSProp:
      return 2;
    case Update::kCenteredRMSProp:
      return 3;
    default:
      return 1;
  }
}

// One run of the update on one device.
struct UpdateRun {
  DataType dtype = kFloat32;
  Update update = Update::kGradientDescent;
  std::vector<Tensor> initial;  // the variable, then its slots (accum, or m and v)
  std::vector<Tensor> grads;    // one per step
  bool unknown_shapes = false;  // grad and lr fed through Placeholders of unknown shape
  Tensor lr;                    // the learning rate fed (a scalar unless testing errors)
  bool skip_init = false;       // run the update on uninitialized variables
};

// Runs r.grads.size() steps of the update with its variables on `device`, and
// returns the variable and its slots after step 1 and after the last step, in
// that order. Returns the first failure in *status. On a GPU, the update must
// have run there.
std::vector<Tensor> Train(const UpdateRun& r, const std::string& device, Status* status) {
  parity::PoisonNewGpuMemory();
  Graph g;
  Scope root(g);
  Scope dev = root.WithDevice(device);
  std::vector<Variable> vars;
  const char* names[] = {"var", "slot1", "slot2", "slot3"};
  for (size_t i = 0; i < r.initial.size(); ++i) {
    Tensor init = r.initial[i];
    vars.push_back(CreateVariable(
        dev, names[i], init.shape(),
        {.dtype = r.dtype,
         .initializer = [init](const Scope& s, const TensorShape&, DataType) { return Const(s, init); }}));
  }
  // Feeds live on the CPU: the learning rate and Adam's beta powers cross to
  // the GPU, whose kernel reads every scalar from device memory.
  const PartialShape grad_shape = r.unknown_shapes ? PartialShape() : PartialShape(r.initial[0].shape());
  Output grad = Placeholder(root.WithOpName("grad"), r.dtype, grad_shape);
  Output lr = Placeholder(root.WithOpName("lr"), r.dtype,
                          r.unknown_shapes ? PartialShape() : PartialShape(TensorShape{}));
  Output b1p = Placeholder(root.WithOpName("beta1_power"), r.dtype, PartialShape(TensorShape{}));
  Output b2p = Placeholder(root.WithOpName("beta2_power"), r.dtype, PartialShape(TensorShape{}));
  const bool adam = r.update == Update::kAdam || r.update == Update::kNesterovAdam;
  const bool nesterov = r.update == Update::kNesterovMomentum || r.update == Update::kNesterovAdam;
  Output step;
  auto c = [&](double v) { return ScalarLike(root, v, r.dtype); };
  if (r.update == Update::kGradientDescent) {
    step = ApplyGradientDescent(dev, vars[0].ref, lr, grad);
  } else if (r.update == Update::kRMSProp) {
    step = ApplyRMSProp(dev, vars[0].ref, vars[1].ref, vars[2].ref, lr, c(0.9), c(0.5), c(1e-10), grad);
  } else if (r.update == Update::kCenteredRMSProp) {
    step = ApplyCenteredRMSProp(dev, vars[0].ref, vars[1].ref, vars[2].ref, vars[3].ref, lr, c(0.9), c(0.5),
                                c(1e-10), grad);
  } else if (r.update == Update::kAdagrad || r.update == Update::kAdagradNoSlotUpdate) {
    step = ApplyAdagrad(dev, vars[0].ref, vars[1].ref, lr, grad, r.update == Update::kAdagrad);
  } else if (!adam) {
    step = ApplyMomentum(dev, vars[0].ref, vars[1].ref, lr, grad, ScalarLike(root, 0.9, r.dtype), nesterov);
  } else {
    step = ApplyAdam(dev, vars[0].ref, vars[1].ref, vars[2].ref, b1p, b2p, lr, ScalarLike(root, 0.9, r.dtype),
                     ScalarLike(root, 0.999, r.dtype), ScalarLike(root, 1e-8, r.dtype), grad, nesterov);
  }
  if (!root.ok()) {
    *status = root.status();
    return {};
  }
  SessionOptions opts;
  opts.allow_soft_placement = true;
  opts.inter_op_threads = 1;
  Session sess(g, opts);
  *status = r.skip_init ? Status::OK() : sess.Run(GlobalVariablesInitializer(g));
  std::vector<Tensor> out;
  for (size_t k = 0; k < r.grads.size() && status->ok(); ++k) {
    FeedList feeds = {{grad, r.grads[k]}, {lr, r.lr}};
    if (adam) {
      feeds.push_back({b1p, ScalarOf(r.dtype, std::pow(0.9, static_cast<double>(k + 1)))});
      feeds.push_back({b2p, ScalarOf(r.dtype, std::pow(0.999, static_cast<double>(k + 1)))});
    }
    auto result = sess.Run(feeds, {step});
    if (!result.ok()) {
      *status = result.status();
      break;
    }
    if (k != 0 && k + 1 != r.grads.size()) continue;
    out.push_back((*result)[0]);
    // The slots in a run of their own: read in the update's run they could be
    // read before or after it.
    std::vector<Output> slots;
    for (size_t i = 1; i < vars.size(); ++i) slots.push_back(vars[i].value);
    if (slots.empty()) continue;
    auto values = sess.Run(slots);
    if (!values.ok()) {
      *status = values.status();
      break;
    }
    for (Tensor& t : *values) out.push_back(std::move(t));
  }
  if (device.find("GPU") != std::string::npos && step.valid()) {
    parity::ExpectPlacedOnGpu(sess, *step.node, UpdateName(r.update));
  }
  return status->ok() ? out : std::vector<Tensor>{};
}

UpdateRun MakeRun(DataType dtype, Update update, const TensorShape& shape, std::mt19937_64& rng) {
  UpdateRun r;
  r.dtype = dtype;
  r.update = update;
  r.initial.push_back(parity::RandomTensor(dtype, shape, rng));
  if (update == Update::kAdagrad || update == Update::kAdagradNoSlotUpdate) {
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, 0.1, 1));  // accum > 0
  } else if (update == Update::kRMSProp) {
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, 0.5, 1.5));  // ms > 0
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, -0.1, 0.1));  // mom
  } else if (update == Update::kCenteredRMSProp) {
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, -0.1, 0.1));  // mg
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, 0.5, 1.5));   // ms > mg^2
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, -0.1, 0.1));  // mom
  } else if (SlotCount(update) == 1) {
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng));  // accum
  } else if (SlotCount(update) == 2) {
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, -0.1, 0.1));  // m
    r.initial.push_back(parity::RandomTensor(dtype, shape, rng, 0, 0.01));    // v >= 0
  }
  for (int k = 0; k < 3; ++k) r.grads.push_back(parity::RandomTensor(dtype, shape, rng));
  r.lr = ScalarOf(dtype, 0.1);
  return r;
}

TEST(TrainingCudaTest, UpdatesMatchCpuAfterOneAndThreeSteps) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(21);
  for (DataType dtype : kTypes) {
    for (Update update : kUpdates) {
      std::vector<TensorShape> shapes;
      for (int64_t n : parity::OddSizes()) shapes.push_back(TensorShape{n});
      shapes.push_back(TensorShape{7, 33});
      for (const TensorShape& shape : shapes) {
        const std::string name =
            UpdateName(update) + " " + std::string(DataTypeName(dtype)) + " " + shape.ToString();
        UpdateRun r = MakeRun(dtype, update, shape, rng);
        Status cpu_status, gpu_status;
        std::vector<Tensor> cpu = Train(r, parity::kCpu, &cpu_status);
        std::vector<Tensor> gpu = Train(r, parity::kGpu, &gpu_status);
        ASSERT_TRUE(cpu_status.ok()) << name << " on the CPU: " << cpu_status.ToString();
        ASSERT_TRUE(gpu_status.ok()) << name << " on the GPU: " << gpu_status.ToString();
        ASSERT_EQ(gpu.size(), cpu.size()) << name;
        // Float: the GPU may fuse a multiply-add (one rounding fewer); Adam
        // divides by sqrt(v), which magnifies that for small v.
        const bool f32 = dtype == kFloat32;
        const bool divides = update != Update::kGradientDescent && update != Update::kMomentum &&
                             update != Update::kNesterovMomentum;
        const double rtol = f32 ? (divides ? 1e-4 : 1e-5) : 1e-12;
        const double atol = f32 ? 1e-6 : 1e-14;
        const size_t per_step = gpu.size() / 2;
        for (size_t i = 0; i < gpu.size(); ++i) {
          EXPECT_TRUE(parity::Near(gpu[i], cpu[i], rtol, atol))
              << name << (i < per_step ? ", after step 1" : ", after step 3") << ", "
              << (i % per_step == 0 ? std::string("variable") : "slot " + std::to_string(i % per_step));
        }
      }
    }
  }
}

// The CPU twin's errors, same code and message on the GPU.
void ExpectSameUpdateError(const UpdateRun& r, const std::string& name, const std::string& expected) {
  Status cpu, gpu;
  Train(r, parity::kCpu, &cpu);
  Train(r, parity::kGpu, &gpu);
  parity::ExpectSameStatus(name, cpu, gpu, &expected);
}

TEST(TrainingCudaTest, ShapeErrors) {
  TW_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(22);
  for (DataType dtype : kTypes) {
    for (Update update : kUpdates) {
      const std::string name = UpdateName(update) + " " + std::string(DataTypeName(dtype));
      UpdateRun wrong_grad = MakeRun(dtype, update, TensorShape{7}, rng);
      wrong_grad.unknown_shapes = true;
      wrong_grad.grads = {parity::RandomTensor(dtype, {33}, rng)};
      ExpectSameUpdateError(wrong_grad, name + ", grad [33] for var [7]", "do not have the same shape");
      UpdateRun vector_lr = MakeRun(dtype, update, TensorShape{7}, rng);
      vector_lr.unknown_shapes = true;
      vector_lr.grads.resize(1);
      vector_lr.lr = parity::RandomTensor(dtype, {2}, rng);
      ExpectSameUpdateError(vector_lr, name + ", lr of shape [2]", "is not a scalar: [2]");
      UpdateRun uninitialized = MakeRun(dtype, update, TensorShape{7}, rng);
      uninitialized.skip_init = true;
      uninitialized.grads.resize(1);
      ExpectSameUpdateError(uninitialized, name + ", uninitialized",
                            "Attempting to use uninitialized value var");
    }
  }
}

// Needs no GPU: float and double, with every input in device memory (a
// GPU-resident learning rate then never crosses to the host, which would make
// the step wait for the GPU at every update).
TEST(TrainingCudaTest, RegistersEveryInputInDeviceMemory) {
  KernelRegistry cpu, gpu;
  RegisterTrainingCudaKernels(gpu, cpu);
  RegisterAdaptiveTrainingCudaKernels(gpu, cpu);
  for (const std::string op :
       {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "ApplyRMSProp", "ApplyCenteredRMSProp", "ApplyAdagrad"}) {
    auto types = gpu.KernelTypes(op);
    ASSERT_EQ(types.size(), 1u) << op;
    EXPECT_EQ(types[kDeviceGpu], (std::vector<DataType>{kFloat32, kFloat64})) << op;
    for (const KernelDef* k : gpu.KernelsFor(op)) {
      EXPECT_TRUE(k->host_memory_inputs.empty()) << op;
      EXPECT_TRUE(k->host_memory_outputs.empty()) << op;
    }
  }
}

}  // namespace
}  // namespace tw
