// CUDA kernels of the training update ops, float and double. CPU twins:
// training_kernels.cc (ApplyGradientDescent, ApplyMomentum, ApplyAdam).
//
// - ApplyGradientDescentKernel<T>: var[k] -= delta[k] * alpha.
// - ApplyMomentumKernel<T, kNesterov>: accum and var in one pass.
// - ApplyAdamKernel<T, kNesterov>: m, v and var in one pass.
// - Apply{GradientDescent,Momentum,Adam}GroupKernel: an update group's
//   variables (kernels/update_group.h), 32 per launch, each element as its
//   single op's kernel updates it (the group kernel's frame:
//   internal/update_group_cuda.cuh); CPU twin: SequentialGroupKernel.
// Each is one fused grid-stride loop over the variable's elements, with the
// formulas written in the CPU twin's (and TF's) order.
//
// As on the CPU, the kernels lock the mutexes of their ref inputs (variable and
// slots) while they check shapes and queue the update, then forward the
// variable's ref: the lock orders the enqueue against an Assign that would
// replace the buffer, and the device's single compute stream orders the work.
// The locks and checks are the CPU twin's own (variable_args.h).
// The scalar hyper-parameters (lr, momentum, the betas and their powers,
// epsilon) stay in device memory, as in TF's GPU kernels: each thread reads them
// before its loop. In host memory, a GPU-resident value (the optimizer's
// constants, colocated with the variable; Adam's beta powers, variables on the
// GPU) would cross to the host, and the step would wait for the GPU at every
// update; a value from the host crosses the other way, without a wait.

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/internal/update_group_cuda.cuh"
#include "towerflow/kernels/update_group.h"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;
using update_group_cuda::kGroupChunk;
using update_group_cuda::MakeGroupKernel;
using update_group_cuda::StepBump;

// ---- ApplyGradientDescent ------------------------------------------------------

template <typename T>
__global__ void ApplyGradientDescentKernel(T* __restrict__ var, const T* __restrict__ delta,
                                           const T* __restrict__ alpha_in, int64_t n) {
  const T alpha = *alpha_in;
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) var[k] -= delta[k] * alpha;
}

template <typename T>
Status LaunchApplyGradientDescent(const GpuDevice& gpu, T* var, const T* delta, const T* alpha, int64_t n) {
  return LaunchGridStride(gpu, n, ApplyGradientDescentKernel<T>, var, delta, alpha, n);
}

// Inputs: var (ref), alpha, delta.
template <typename T>
class GpuApplyGradientDescentOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    {
      RefLocks locks(ctx, {0});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0}, {2}, {1}));
      Tensor* var = ctx->mutable_input(0);
      const int64_t n = var->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, LaunchApplyGradientDescent<T>(gpu, var->data<T>(), ctx->input(2).data<T>(),
                                                             ctx->input(1).data<T>(), n));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

// ---- ApplyMomentum ---------------------------------------------------------------

// One element of the update, in the CPU twin's (and TF's) order.
template <typename T, bool kNesterov>
__device__ __forceinline__ void MomentumElement(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ grad,
                                                int64_t k, T lr, T momentum) {
  const T g = grad[k];
  const T acc = accum[k] * momentum + g;
  accum[k] = acc;
  if constexpr (kNesterov) {
    var[k] -= g * lr + acc * momentum * lr;
  } else {
    var[k] -= acc * lr;
  }
}

template <typename T, bool kNesterov>
__global__ void ApplyMomentumKernel(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ grad,
                                    const T* __restrict__ lr_in, const T* __restrict__ momentum_in, int64_t n) {
  const T lr = *lr_in, momentum = *momentum_in;
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    MomentumElement<T, kNesterov>(var, accum, grad, k, lr, momentum);
  }
}

template <typename T, bool kNesterov>
Status LaunchApplyMomentum(const GpuDevice& gpu, T* var, T* accum, const T* grad, const T* lr,
                           const T* momentum, int64_t n) {
  return LaunchGridStride(gpu, n, ApplyMomentumKernel<T, kNesterov>, var, accum, grad, lr, momentum, n);
}

// Inputs: var (ref), accum (ref), lr, grad, momentum.
template <typename T>
class GpuApplyMomentumOp : public GpuOpKernel {
 public:
  explicit GpuApplyMomentumOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov_));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    {
      RefLocks locks(ctx, {0, 1});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0, 1}, {3}, {2, 4}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* accum = ctx->mutable_input(1)->data<T>();
      const T* lr = ctx->input(2).data<T>();
      const T* grad = ctx->input(3).data<T>();
      const T* momentum = ctx->input(4).data<T>();
      const int64_t n = ctx->mutable_input(0)->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(
            ctx, (use_nesterov_ ? LaunchApplyMomentum<T, true>(gpu, var, accum, grad, lr, momentum, n)
                                : LaunchApplyMomentum<T, false>(gpu, var, accum, grad, lr, momentum, n)));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool use_nesterov_ = false;
};

// ---- Update groups (internal/update_group_cuda.cuh) ----------------------------------

// ApplyMomentum's group. Inputs per member: var (ref), accum (ref), lr, grad, momentum.
template <typename T>
struct MomentumChunk {
  T* var[kGroupChunk];
  T* accum[kGroupChunk];
  const T* grad[kGroupChunk];
  int64_t n[kGroupChunk];
  StepBump bump;
};

template <typename T, bool kNesterov>
__global__ void ApplyMomentumGroupKernel(const MomentumChunk<T> chunk, const T* __restrict__ lr_in,
                                         const T* __restrict__ momentum_in) {
  chunk.bump.ApplyOnce();
  const int t = blockIdx.y;
  T* __restrict__ var = chunk.var[t];
  T* __restrict__ accum = chunk.accum[t];
  const T* __restrict__ grad = chunk.grad[t];
  const int64_t n = chunk.n[t];
  const T lr = *lr_in, momentum = *momentum_in;
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    MomentumElement<T, kNesterov>(var, accum, grad, k, lr, momentum);
  }
}

template <typename T>
struct MomentumUpdate {
  using Chunk = MomentumChunk<T>;
  static constexpr std::array<int, 2> kRefs{{0, 1}};
  explicit MomentumUpdate(OpKernelConstruction* c) { TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &nesterov)); }
  static Status Check(OpKernelContext* mc) { return CheckApplyInputs(mc, {0, 1}, {3}, {2, 4}); }
  static void Add(OpKernelContext* mc, int i, Chunk* chunk) {
    chunk->var[i] = mc->mutable_input(0)->data<T>();
    chunk->accum[i] = mc->mutable_input(1)->data<T>();
    chunk->grad[i] = mc->input(3).data<T>();
  }
  void Launch(const GpuDevice& gpu, dim3 grid, int threads, const Chunk& chunk, OpKernelContext* first) const {
    const T* lr = first->input(2).data<T>();
    const T* momentum = first->input(4).data<T>();
    if (nesterov) {
      ApplyMomentumGroupKernel<T, true><<<grid, threads, 0, gpu.stream()>>>(chunk, lr, momentum);
    } else {
      ApplyMomentumGroupKernel<T, false><<<grid, threads, 0, gpu.stream()>>>(chunk, lr, momentum);
    }
  }
  bool nesterov = false;
};

// ApplyGradientDescent's group. Inputs per member: var (ref), alpha, delta.
template <typename T>
struct GradientDescentChunk {
  T* var[kGroupChunk];
  const T* delta[kGroupChunk];
  int64_t n[kGroupChunk];
  StepBump bump;
};

template <typename T>
__global__ void ApplyGradientDescentGroupKernel(const GradientDescentChunk<T> chunk, const T* __restrict__ alpha_in) {
  chunk.bump.ApplyOnce();
  const int t = blockIdx.y;
  T* __restrict__ var = chunk.var[t];
  const T* __restrict__ delta = chunk.delta[t];
  const int64_t n = chunk.n[t];
  const T alpha = *alpha_in;
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) var[k] -= delta[k] * alpha;
}

template <typename T>
struct GradientDescentUpdate {
  using Chunk = GradientDescentChunk<T>;
  static constexpr std::array<int, 1> kRefs{{0}};
  explicit GradientDescentUpdate(OpKernelConstruction*) {}
  static Status Check(OpKernelContext* mc) { return CheckApplyInputs(mc, {0}, {2}, {1}); }
  static void Add(OpKernelContext* mc, int i, Chunk* chunk) {
    chunk->var[i] = mc->mutable_input(0)->data<T>();
    chunk->delta[i] = mc->input(2).data<T>();
  }
  void Launch(const GpuDevice& gpu, dim3 grid, int threads, const Chunk& chunk, OpKernelContext* first) const {
    ApplyGradientDescentGroupKernel<T><<<grid, threads, 0, gpu.stream()>>>(chunk, first->input(1).data<T>());
  }
};

// ---- ApplyAdam -----------------------------------------------------------------------

// The step's scalars, in device memory.
template <typename T>
struct AdamScalars {
  const T* beta1_power;
  const T* beta2_power;
  const T* lr;
  const T* beta1;
  const T* beta2;
  const T* epsilon;
};

// The step's constants, computed by every thread from the scalars in the CPU
// twin's order (bias correction of both moments folded into one step size).
template <typename T>
struct AdamConstants {
  T alpha;            // lr * sqrt(1 - beta2_power) / (1 - beta1_power)
  T one_minus_beta1;  // 1 - beta1
  T beta1;
  T one_minus_beta2;  // 1 - beta2
  T epsilon;

  __device__ explicit AdamConstants(const AdamScalars<T>& s)
      : alpha(*s.lr * cuda_util::Sqrt(T(1) - *s.beta2_power) / (T(1) - *s.beta1_power)),
        one_minus_beta1(T(1) - *s.beta1), beta1(*s.beta1), one_minus_beta2(T(1) - *s.beta2),
        epsilon(*s.epsilon) {}
};

// One element of the update, in the CPU twin's order.
template <typename T, bool kNesterov>
__device__ __forceinline__ void AdamElement(T* __restrict__ var, T* __restrict__ m, T* __restrict__ v,
                                            const T* __restrict__ grad, int64_t k, const AdamConstants<T>& a) {
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

template <typename T, bool kNesterov>
__global__ void ApplyAdamKernel(T* __restrict__ var, T* __restrict__ m, T* __restrict__ v,
                                const T* __restrict__ grad, AdamScalars<T> scalars, int64_t n) {
  const AdamConstants<T> a(scalars);
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) AdamElement<T, kNesterov>(var, m, v, grad, k, a);
}

template <typename T, bool kNesterov>
Status LaunchApplyAdam(const GpuDevice& gpu, T* var, T* m, T* v, const T* grad, const AdamScalars<T>& a,
                       int64_t n) {
  return LaunchGridStride(gpu, n, ApplyAdamKernel<T, kNesterov>, var, m, v, grad, a, n);
}

// Inputs: var, m, v (refs), beta1_power, beta2_power, lr, beta1, beta2,
// epsilon, grad.
template <typename T>
class GpuApplyAdamOp : public GpuOpKernel {
 public:
  explicit GpuApplyAdamOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov_));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    {
      RefLocks locks(ctx, {0, 1, 2});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0, 1, 2}, {9}, {3, 4, 5, 6, 7, 8}));
      const AdamScalars<T> a{ctx->input(3).data<T>(), ctx->input(4).data<T>(), ctx->input(5).data<T>(),
                             ctx->input(6).data<T>(), ctx->input(7).data<T>(), ctx->input(8).data<T>()};
      T* var = ctx->mutable_input(0)->data<T>();
      T* m = ctx->mutable_input(1)->data<T>();
      T* v = ctx->mutable_input(2)->data<T>();
      const T* grad = ctx->input(9).data<T>();
      const int64_t n = ctx->mutable_input(0)->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, (use_nesterov_ ? LaunchApplyAdam<T, true>(gpu, var, m, v, grad, a, n)
                                              : LaunchApplyAdam<T, false>(gpu, var, m, v, grad, a, n)));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool use_nesterov_ = false;
};

// ApplyAdam's group. Inputs per member: var, m, v (refs), beta1_power,
// beta2_power, lr, beta1, beta2, epsilon, grad.
template <typename T>
struct AdamChunk {
  T* var[kGroupChunk];
  T* m[kGroupChunk];
  T* v[kGroupChunk];
  const T* grad[kGroupChunk];
  int64_t n[kGroupChunk];
  StepBump bump;
};

template <typename T, bool kNesterov>
__global__ void ApplyAdamGroupKernel(const AdamChunk<T> chunk, AdamScalars<T> scalars) {
  chunk.bump.ApplyOnce();
  const int t = blockIdx.y;
  const AdamConstants<T> a(scalars);
  const int64_t n = chunk.n[t];
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    AdamElement<T, kNesterov>(chunk.var[t], chunk.m[t], chunk.v[t], chunk.grad[t], k, a);
  }
}

template <typename T>
struct AdamUpdate {
  using Chunk = AdamChunk<T>;
  static constexpr std::array<int, 3> kRefs{{0, 1, 2}};
  explicit AdamUpdate(OpKernelConstruction* c) { TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &nesterov)); }
  static Status Check(OpKernelContext* mc) { return CheckApplyInputs(mc, {0, 1, 2}, {9}, {3, 4, 5, 6, 7, 8}); }
  static void Add(OpKernelContext* mc, int i, Chunk* chunk) {
    chunk->var[i] = mc->mutable_input(0)->data<T>();
    chunk->m[i] = mc->mutable_input(1)->data<T>();
    chunk->v[i] = mc->mutable_input(2)->data<T>();
    chunk->grad[i] = mc->input(9).data<T>();
  }
  void Launch(const GpuDevice& gpu, dim3 grid, int threads, const Chunk& chunk, OpKernelContext* first) const {
    const AdamScalars<T> a{first->input(3).data<T>(), first->input(4).data<T>(), first->input(5).data<T>(),
                           first->input(6).data<T>(), first->input(7).data<T>(), first->input(8).data<T>()};
    if (nesterov) {
      ApplyAdamGroupKernel<T, true><<<grid, threads, 0, gpu.stream()>>>(chunk, a);
    } else {
      ApplyAdamGroupKernel<T, false><<<grid, threads, 0, gpu.stream()>>>(chunk, a);
    }
  }
  bool nesterov = false;
};

}  // namespace

void RegisterTrainingCudaKernels(KernelRegistry& r, const KernelRegistry& cpu) {
  RegisterGpuKernels<GpuApplyGradientDescentOp, float, double>(r, "ApplyGradientDescent", {}, {});
  RegisterGpuKernels<GpuApplyMomentumOp, float, double>(r, "ApplyMomentum", {}, {});
  RegisterGpuKernels<GpuApplyAdamOp, float, double>(r, "ApplyAdam", {}, {});
  r.RegisterGroup(GroupDef{"ApplyMomentum", kDeviceGpu, {kFloat32, kFloat64}, &MakeGroupKernel<MomentumUpdate>,
                           &MomentumGroupCompatible, /*twin_only=*/false, /*step_bump=*/true});
  r.RegisterGroup(GroupDef{"ApplyGradientDescent", kDeviceGpu, {kFloat32, kFloat64},
                           &MakeGroupKernel<GradientDescentUpdate>, &GradientDescentGroupCompatible,
                           /*twin_only=*/false, /*step_bump=*/true});
  r.RegisterGroup(GroupDef{"ApplyAdam", kDeviceGpu, {kFloat32, kFloat64}, &MakeGroupKernel<AdamUpdate>,
                           &AdamGroupCompatible, /*twin_only=*/false, /*step_bump=*/true});
}

}  // namespace tw
