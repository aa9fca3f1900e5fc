// CUDA kernels of the adaptive-rate update ops, float and double. CPU twins:
// training_kernels.cc (ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad).
//
// - ApplyRMSPropKernel<T, kCentered>: ms, mom and var (and mg, centered) in
//   one pass.
// - ApplyAdagradKernel<T, kUpdateSlots>: accum and var in one pass.
// Each is one grid-stride loop over the variable's elements, with the formulas
// written in the CPU twin's (and TF's) order. As training_cuda.cu's kernels:
// the refs' mutexes are held while the shapes are checked and the launch is
// queued (variable_args.h, the twin's own checks), every scalar stays in device
// memory and is read by each thread before its loop, and the variable's ref is
// forwarded.
// - ApplyRMSPropGroupKernel<T, kCentered>, ApplyAdagradGroupKernel<T,
//   kUpdateSlots>: an update group's variables (kernels/update_group.h), up to
//   32 per launch (the frame: internal/update_group_cuda.cuh), each element as
//   its single op's kernel updates it; CPU twin: SequentialGroupKernel.

#include <array>
#include <initializer_list>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/internal/update_group_cuda.cuh"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;
using update_group_cuda::kGroupChunk;
using update_group_cuda::MakeGroupKernel;
using update_group_cuda::StepBump;

// The hyper-parameters in device memory, as the op's inputs.
template <typename T>
struct RMSPropScalars {
  const T* lr;
  const T* rho;
  const T* momentum;
  const T* epsilon;
};

// The step's scalars, read by every thread before its loop.
template <typename T>
struct RMSPropConstants {
  T lr, one_minus_rho, momentum, epsilon;
  __device__ explicit RMSPropConstants(const RMSPropScalars<T>& s)
      : lr(*s.lr), one_minus_rho(T(1) - *s.rho), momentum(*s.momentum), epsilon(*s.epsilon) {}
};

// One element of the update, in the CPU twin's order. Centered: mg (the
// gradient's mean) kept too, and the denominator is the gradient's estimated
// variance; plain: mg is null.
template <typename T, bool kCentered>
__device__ __forceinline__ void RMSPropElement(T* __restrict__ var, T* __restrict__ mg, T* __restrict__ ms,
                                               T* __restrict__ mom, const T* __restrict__ grad, int64_t k,
                                               const RMSPropConstants<T>& c) {
  const T g = grad[k];
  T msk = ms[k];
  msk += (g * g - msk) * c.one_minus_rho;
  ms[k] = msk;
  T denom = msk + c.epsilon;
  if constexpr (kCentered) {
    T mgk = mg[k];
    mgk += (g - mgk) * c.one_minus_rho;
    mg[k] = mgk;
    denom = (msk - mgk * mgk) + c.epsilon;
  }
  const T momk = mom[k] * c.momentum + (g * c.lr) / cuda_util::Sqrt(denom);
  mom[k] = momk;
  var[k] -= momk;
}

template <typename T, bool kCentered>
__global__ void ApplyRMSPropKernel(T* __restrict__ var, T* __restrict__ mg, T* __restrict__ ms, T* __restrict__ mom,
                                   const T* __restrict__ grad, RMSPropScalars<T> s, int64_t n) {
  const RMSPropConstants<T> c(s);
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    RMSPropElement<T, kCentered>(var, mg, ms, mom, grad, k, c);
  }
}

// One element of the update, in the CPU twin's order.
template <typename T, bool kUpdateSlots>
__device__ __forceinline__ void AdagradElement(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ grad,
                                               int64_t k, T lr) {
  const T g = grad[k];
  T a = accum[k];
  if constexpr (kUpdateSlots) {
    a += g * g;
    accum[k] = a;
  }
  var[k] -= g * lr * (T(1) / cuda_util::Sqrt(a));
}

template <typename T, bool kUpdateSlots>
__global__ void ApplyAdagradKernel(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ grad,
                                   const T* __restrict__ lr_in, int64_t n) {
  const T lr = *lr_in;
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) AdagradElement<T, kUpdateSlots>(var, accum, grad, k, lr);
}

// Inputs: var, ms, mom (refs), lr, rho, momentum, epsilon, grad; centered,
// mg (a ref) after var, every later input one further.
template <typename T, bool kCentered>
class GpuRMSPropOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    constexpr int c = kCentered ? 1 : 0;  // the inputs after var move by one
    {
      RefLocks locks(ctx, kCentered ? std::initializer_list<int>{0, 1, 2, 3} : std::initializer_list<int>{0, 1, 2});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, kCentered ? std::initializer_list<int>{0, 1, 2, 3}
                                                             : std::initializer_list<int>{0, 1, 2},
                                              {7 + c}, {3 + c, 4 + c, 5 + c, 6 + c}));
      const RMSPropScalars<T> s{ctx->input(3 + c).data<T>(), ctx->input(4 + c).data<T>(),
                                ctx->input(5 + c).data<T>(), ctx->input(6 + c).data<T>()};
      const int64_t n = ctx->mutable_input(0)->NumElements();
      T* var = ctx->mutable_input(0)->data<T>();
      T* ms = ctx->mutable_input(1 + c)->data<T>();
      T* mom = ctx->mutable_input(2 + c)->data<T>();
      const T* grad = ctx->input(7 + c).data<T>();
      T* mg = kCentered ? ctx->mutable_input(1)->data<T>() : nullptr;
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, LaunchGridStride(gpu, n, ApplyRMSPropKernel<T, kCentered>, var, mg, ms, mom, grad, s, n));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};
template <typename T>
using GpuApplyRMSPropOp = GpuRMSPropOp<T, false>;
template <typename T>
using GpuApplyCenteredRMSPropOp = GpuRMSPropOp<T, true>;

// Inputs: var, accum (refs), lr, grad.
template <typename T>
class GpuApplyAdagradOp : public GpuOpKernel {
 public:
  explicit GpuApplyAdagradOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("update_slots", &update_slots_));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    {
      RefLocks locks(ctx, {0, 1});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0, 1}, {3}, {2}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* accum = ctx->mutable_input(1)->data<T>();
      const T* lr = ctx->input(2).data<T>();
      const T* grad = ctx->input(3).data<T>();
      const int64_t n = ctx->mutable_input(0)->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, (update_slots_
                                    ? LaunchGridStride(gpu, n, ApplyAdagradKernel<T, true>, var, accum, grad, lr, n)
                                    : LaunchGridStride(gpu, n, ApplyAdagradKernel<T, false>, var, accum, grad, lr, n)));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool update_slots_ = true;
};

// ---- Update groups (internal/update_group_cuda.cuh) ----

// ApplyRMSProp's and ApplyCenteredRMSProp's group. Inputs per member: var,
// [mg,] ms, mom (refs), lr, rho, momentum, epsilon, grad.
template <typename T>
struct RMSPropChunk {
  T* var[kGroupChunk];
  T* mg[kGroupChunk];  // centered only
  T* ms[kGroupChunk];
  T* mom[kGroupChunk];
  const T* grad[kGroupChunk];
  int64_t n[kGroupChunk];
  StepBump bump;
};

template <typename T, bool kCentered>
__global__ void ApplyRMSPropGroupKernel(const RMSPropChunk<T> chunk, RMSPropScalars<T> s) {
  chunk.bump.ApplyOnce();
  const int t = blockIdx.y;
  const RMSPropConstants<T> c(s);
  const int64_t n = chunk.n[t];
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    RMSPropElement<T, kCentered>(chunk.var[t], chunk.mg[t], chunk.ms[t], chunk.mom[t], chunk.grad[t], k, c);
  }
}

template <typename T, bool kCentered>
struct RMSPropUpdateOf {
  static constexpr int c = kCentered ? 1 : 0;  // the inputs after var move by one
  using Chunk = RMSPropChunk<T>;
  static constexpr std::array<int, 3 + c> kRefs = [] {
    std::array<int, 3 + c> refs{};
    for (int i = 0; i < 3 + c; ++i) refs[static_cast<size_t>(i)] = i;
    return refs;
  }();
  explicit RMSPropUpdateOf(OpKernelConstruction*) {}
  static Status Check(OpKernelContext* mc) {
    return CheckApplyInputs(mc, kCentered ? std::initializer_list<int>{0, 1, 2, 3} : std::initializer_list<int>{0, 1, 2},
                            {7 + c}, {3 + c, 4 + c, 5 + c, 6 + c});
  }
  static void Add(OpKernelContext* mc, int i, Chunk* chunk) {
    chunk->var[i] = mc->mutable_input(0)->data<T>();
    chunk->mg[i] = kCentered ? mc->mutable_input(1)->data<T>() : nullptr;
    chunk->ms[i] = mc->mutable_input(1 + c)->data<T>();
    chunk->mom[i] = mc->mutable_input(2 + c)->data<T>();
    chunk->grad[i] = mc->input(7 + c).data<T>();
  }
  void Launch(const GpuDevice& gpu, dim3 grid, int threads, const Chunk& chunk, OpKernelContext* first) const {
    const RMSPropScalars<T> s{first->input(3 + c).data<T>(), first->input(4 + c).data<T>(),
                              first->input(5 + c).data<T>(), first->input(6 + c).data<T>()};
    ApplyRMSPropGroupKernel<T, kCentered><<<grid, threads, 0, gpu.stream()>>>(chunk, s);
  }
};
template <typename T>
using RMSPropUpdate = RMSPropUpdateOf<T, false>;
template <typename T>
using CenteredRMSPropUpdate = RMSPropUpdateOf<T, true>;

// ApplyAdagrad's group. Inputs per member: var, accum (refs), lr, grad.
template <typename T>
struct AdagradChunk {
  T* var[kGroupChunk];
  T* accum[kGroupChunk];
  const T* grad[kGroupChunk];
  int64_t n[kGroupChunk];
  StepBump bump;
};

template <typename T, bool kUpdateSlots>
__global__ void ApplyAdagradGroupKernel(const AdagradChunk<T> chunk, const T* __restrict__ lr_in) {
  chunk.bump.ApplyOnce();
  const int t = blockIdx.y;
  const T lr = *lr_in;
  const int64_t n = chunk.n[t];
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    AdagradElement<T, kUpdateSlots>(chunk.var[t], chunk.accum[t], chunk.grad[t], k, lr);
  }
}

template <typename T>
struct AdagradUpdate {
  using Chunk = AdagradChunk<T>;
  static constexpr std::array<int, 2> kRefs{{0, 1}};
  explicit AdagradUpdate(OpKernelConstruction* c) { TW_OP_REQUIRES_OK(c, c->GetAttr("update_slots", &update_slots)); }
  static Status Check(OpKernelContext* mc) { return CheckApplyInputs(mc, {0, 1}, {3}, {2}); }
  static void Add(OpKernelContext* mc, int i, Chunk* chunk) {
    chunk->var[i] = mc->mutable_input(0)->data<T>();
    chunk->accum[i] = mc->mutable_input(1)->data<T>();
    chunk->grad[i] = mc->input(3).data<T>();
  }
  void Launch(const GpuDevice& gpu, dim3 grid, int threads, const Chunk& chunk, OpKernelContext* first) const {
    const T* lr = first->input(2).data<T>();
    if (update_slots) {
      ApplyAdagradGroupKernel<T, true><<<grid, threads, 0, gpu.stream()>>>(chunk, lr);
    } else {
      ApplyAdagradGroupKernel<T, false><<<grid, threads, 0, gpu.stream()>>>(chunk, lr);
    }
  }
  bool update_slots = true;
};

}  // namespace

void RegisterAdaptiveTrainingCudaKernels(KernelRegistry& r, const KernelRegistry& /*cpu*/) {
  RegisterGpuKernels<GpuApplyRMSPropOp, float, double>(r, "ApplyRMSProp", {}, {});
  RegisterGpuKernels<GpuApplyCenteredRMSPropOp, float, double>(r, "ApplyCenteredRMSProp", {}, {});
  RegisterGpuKernels<GpuApplyAdagradOp, float, double>(r, "ApplyAdagrad", {}, {});
  r.RegisterGroup(GroupDef{"ApplyRMSProp", kDeviceGpu, {kFloat32, kFloat64}, &MakeGroupKernel<RMSPropUpdate>,
                           &RMSPropGroupCompatible, /*twin_only=*/false, /*step_bump=*/true});
  r.RegisterGroup(GroupDef{"ApplyCenteredRMSProp", kDeviceGpu, {kFloat32, kFloat64},
                           &MakeGroupKernel<CenteredRMSPropUpdate>, &RMSPropGroupCompatible, /*twin_only=*/false,
                           /*step_bump=*/true});
  r.RegisterGroup(GroupDef{"ApplyAdagrad", kDeviceGpu, {kFloat32, kFloat64}, &MakeGroupKernel<AdagradUpdate>,
                           &AdagradGroupCompatible, /*twin_only=*/false, /*step_bump=*/true});
}

}  // namespace tw
