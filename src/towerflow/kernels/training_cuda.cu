// CUDA kernels of the training update ops, float and double. CPU twins:
// training_kernels.cc (ApplyGradientDescent, ApplyMomentum, ApplyAdam).
//
// - ApplyGradientDescentKernel<T>: var[k] -= delta[k] * alpha.
// - ApplyMomentumKernel<T, kNesterov>: accum and var in one pass.
// - ApplyAdamKernel<T, kNesterov>: m, v and var in one pass.
// Each is one fused grid-stride loop over the variable's elements, with the
// formulas written in the CPU twin's (and TF's) order.
//
// As on the CPU, the kernels lock the mutexes of their ref inputs (variable and
// slots) while they check shapes and queue the update, then forward the
// variable's ref: the lock orders the enqueue against an Assign that would
// replace the buffer, and the device's single compute stream orders the work.
// The scalar hyper-parameters (lr, momentum, the betas, epsilon) are host-memory
// inputs (KernelDef::host_memory_inputs): read here and passed by value.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <mutex>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;

// ---- Checks: the CPU twin's (training_kernels.cc), same codes and messages -----

// The name of the variable behind ref input `i`, following forwarded refs back
// to the VariableV2 node (VariableName in training_kernels.cc).
std::string VariableName(const Node& node, int i) {
  Output o = node.input(i);
  while (o.node->op() != "VariableV2" && o.node->num_inputs() > 0 && o.node->input_is_ref(0)) {
    o = o.node->input(0);
  }
  return o.node->name();
}

// The distinct mutexes of the given ref inputs, locked in address order so that
// two updates sharing variables cannot deadlock (RefLocks in training_kernels.cc).
class RefLocks {
 public:
  RefLocks(OpKernelContext* ctx, std::initializer_list<int> refs) {
    for (int i : refs) mus_.push_back(ctx->input_ref_mutex(i));
    std::sort(mus_.begin(), mus_.end());
    mus_.erase(std::unique(mus_.begin(), mus_.end()), mus_.end());
    for (std::mutex* mu : mus_) mu->lock();
  }
  ~RefLocks() {
    for (auto it = mus_.rbegin(); it != mus_.rend(); ++it) (*it)->unlock();
  }
  RefLocks(const RefLocks&) = delete;
  RefLocks& operator=(const RefLocks&) = delete;

 private:
  std::vector<std::mutex*> mus_;
};

// REQUIRES: the ref inputs' locks are held. FailedPrecondition for an
// uninitialized ref; InvalidArgument when a ref or an input in `same` does not
// have the variable's shape, or an input in `scalars` is not a scalar
// (CheckInputs in training_kernels.cc).
Status CheckInputs(OpKernelContext* ctx, std::initializer_list<int> refs, std::initializer_list<int> same,
                   std::initializer_list<int> scalars) {
  const Node& node = ctx->node();
  auto arg = [&](int i) { return node.def().inputs[static_cast<size_t>(i)].name; };
  for (int i : refs) {
    if (!ctx->mutable_input(i)->IsInitialized()) {
      return errors::FailedPrecondition("Attempting to use uninitialized value ", VariableName(node, i));
    }
  }
  const TensorShape& var_shape = ctx->mutable_input(0)->shape();
  for (int i : refs) {
    const TensorShape& s = ctx->mutable_input(i)->shape();
    if (s != var_shape) {
      return errors::InvalidArgument(arg(i), " ", VariableName(node, i), " has shape ", s.ToString(),
                                     " but variable ", VariableName(node, 0), " has shape ",
                                     var_shape.ToString());
    }
  }
  for (int i : same) {
    const TensorShape& s = ctx->input(i).shape();
    if (s != var_shape) {
      return errors::InvalidArgument("var and ", arg(i), " do not have the same shape: variable ",
                                     VariableName(node, 0), " has shape ", var_shape.ToString(), ", ", arg(i),
                                     " (", ctx->input_name(i), ") has shape ", s.ToString());
    }
  }
  for (int i : scalars) {
    if (ctx->input(i).rank() != 0) {
      return errors::InvalidArgument(arg(i), " is not a scalar: ", ctx->input(i).shape().ToString(), " (",
                                     ctx->input_name(i), ")");
    }
  }
  return Status::OK();
}

// ---- ApplyGradientDescent ------------------------------------------------------

template <typename T>
__global__ void ApplyGradientDescentKernel(T* __restrict__ var, const T* __restrict__ delta, T alpha,
                                           int64_t n) {
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) var[k] -= delta[k] * alpha;
}

template <typename T>
Status LaunchApplyGradientDescent(const GpuDevice& gpu, T* var, const T* delta, T alpha, int64_t n) {
  const LaunchShape s = LaunchShapeFor(n, gpu);
  ApplyGradientDescentKernel<T><<<s.blocks, s.threads, 0, gpu.stream()>>>(var, delta, alpha, n);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

// Inputs: var (ref), alpha (host), delta.
template <typename T>
class GpuApplyGradientDescentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    {
      RefLocks locks(ctx, {0});
      TW_OP_REQUIRES_OK(ctx, CheckInputs(ctx, {0}, {2}, {1}));
      Tensor* var = ctx->mutable_input(0);
      const int64_t n = var->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, LaunchApplyGradientDescent<T>(*gpu, var->data<T>(), ctx->input(2).data<T>(),
                                                             ctx->input(1).scalar<T>(), n));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

// ---- ApplyMomentum ---------------------------------------------------------------

template <typename T, bool kNesterov>
__global__ void ApplyMomentumKernel(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ grad,
                                    T lr, T momentum, int64_t n) {
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    const T g = grad[k];
    const T acc = accum[k] * momentum + g;
    accum[k] = acc;
    if constexpr (kNesterov) {
      var[k] -= g * lr + acc * momentum * lr;
    } else {
      var[k] -= acc * lr;
    }
  }
}

template <typename T, bool kNesterov>
Status LaunchApplyMomentum(const GpuDevice& gpu, T* var, T* accum, const T* grad, T lr, T momentum,
                           int64_t n) {
  const LaunchShape s = LaunchShapeFor(n, gpu);
  ApplyMomentumKernel<T, kNesterov>
      <<<s.blocks, s.threads, 0, gpu.stream()>>>(var, accum, grad, lr, momentum, n);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

// Inputs: var (ref), accum (ref), lr (host), grad, momentum (host).
template <typename T>
class GpuApplyMomentumOp : public OpKernel {
 public:
  explicit GpuApplyMomentumOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    {
      RefLocks locks(ctx, {0, 1});
      TW_OP_REQUIRES_OK(ctx, CheckInputs(ctx, {0, 1}, {3}, {2, 4}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* accum = ctx->mutable_input(1)->data<T>();
      const T lr = ctx->input(2).scalar<T>();
      const T* grad = ctx->input(3).data<T>();
      const T momentum = ctx->input(4).scalar<T>();
      const int64_t n = ctx->mutable_input(0)->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(
            ctx, (use_nesterov_ ? LaunchApplyMomentum<T, true>(*gpu, var, accum, grad, lr, momentum, n)
                                : LaunchApplyMomentum<T, false>(*gpu, var, accum, grad, lr, momentum, n)));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool use_nesterov_ = false;
};

// ---- ApplyAdam -----------------------------------------------------------------------

// The step's constants, computed once on the host.
template <typename T>
struct AdamConstants {
  T alpha;            // lr * sqrt(1 - beta2_power) / (1 - beta1_power)
  T one_minus_beta1;  // 1 - beta1
  T beta1;
  T one_minus_beta2;  // 1 - beta2
  T epsilon;
};

template <typename T, bool kNesterov>
__global__ void ApplyAdamKernel(T* __restrict__ var, T* __restrict__ m, T* __restrict__ v,
                                const T* __restrict__ grad, AdamConstants<T> a, int64_t n) {
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    const T g = grad[k];
    T mk = m[k];
    mk += (g - mk) * a.one_minus_beta1;
    m[k] = mk;
    T vk = v[k];
    vk += (g * g - vk) * a.one_minus_beta2;
    v[k] = vk;
    const T step = kNesterov ? (g * a.one_minus_beta1 + a.beta1 * mk) : mk;
    var[k] -= (step * a.alpha) / (cuda_util::Sqrt(vk) + a.epsilon);
  }
}

template <typename T, bool kNesterov>
Status LaunchApplyAdam(const GpuDevice& gpu, T* var, T* m, T* v, const T* grad, const AdamConstants<T>& a,
                       int64_t n) {
  const LaunchShape s = LaunchShapeFor(n, gpu);
  ApplyAdamKernel<T, kNesterov><<<s.blocks, s.threads, 0, gpu.stream()>>>(var, m, v, grad, a, n);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

// Inputs: var, m, v (refs), beta1_power, beta2_power, lr, beta1, beta2,
// epsilon (host), grad.
template <typename T>
class GpuApplyAdamOp : public OpKernel {
 public:
  explicit GpuApplyAdamOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    {
      RefLocks locks(ctx, {0, 1, 2});
      TW_OP_REQUIRES_OK(ctx, CheckInputs(ctx, {0, 1, 2}, {9}, {3, 4, 5, 6, 7, 8}));
      const T beta1_power = ctx->input(3).scalar<T>();
      const T beta2_power = ctx->input(4).scalar<T>();
      const T lr = ctx->input(5).scalar<T>();
      const T beta1 = ctx->input(6).scalar<T>();
      const T beta2 = ctx->input(7).scalar<T>();
      // Bias correction of both moments folded into one step size, as on the CPU.
      const AdamConstants<T> a{lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power), T(1) - beta1, beta1,
                               T(1) - beta2, ctx->input(8).scalar<T>()};
      T* var = ctx->mutable_input(0)->data<T>();
      T* m = ctx->mutable_input(1)->data<T>();
      T* v = ctx->mutable_input(2)->data<T>();
      const T* grad = ctx->input(9).data<T>();
      const int64_t n = ctx->mutable_input(0)->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, (use_nesterov_ ? LaunchApplyAdam<T, true>(*gpu, var, m, v, grad, a, n)
                                              : LaunchApplyAdam<T, false>(*gpu, var, m, v, grad, a, n)));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool use_nesterov_ = false;
};

// Registers Kernel<T> for each T under "GPU" with the given host-memory inputs.
template <template <typename> class Kernel, typename... Ts>
void RegisterWithHostInputs(KernelRegistry& r, const std::string& op, const std::vector<int>& host_inputs) {
  (r.Register(KernelDef{
       op,
       kDeviceGpu,
       "T",
       {DataTypeOf<Ts>()},
       [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> { return std::make_unique<Kernel<Ts>>(c); },
       host_inputs,
       {}}),
   ...);
}

}  // namespace

void RegisterTrainingCudaKernels(KernelRegistry& r, const KernelRegistry& cpu) {
  RegisterWithHostInputs<GpuApplyGradientDescentOp, float, double>(r, "ApplyGradientDescent", {1});
  RegisterWithHostInputs<GpuApplyMomentumOp, float, double>(r, "ApplyMomentum", {2, 4});
  RegisterWithHostInputs<GpuApplyAdamOp, float, double>(r, "ApplyAdam", {3, 4, 5, 6, 7, 8});
}

}  // namespace tw
