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
// forwarded. These ops join no update group (kernels/update_group.h): each
// variable's update is a launch of its own.

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;

// The hyper-parameters in device memory, as the op's inputs.
template <typename T>
struct RMSPropScalars {
  const T* lr;
  const T* rho;
  const T* momentum;
  const T* epsilon;
};

// Centered: mg (the gradient's mean) kept too, and the denominator is the
// gradient's estimated variance; plain: mg is null.
template <typename T, bool kCentered>
__global__ void ApplyRMSPropKernel(T* __restrict__ var, T* __restrict__ mg, T* __restrict__ ms, T* __restrict__ mom,
                                   const T* __restrict__ grad, RMSPropScalars<T> s, int64_t n) {
  const T lr = *s.lr, one_minus_rho = T(1) - *s.rho, momentum = *s.momentum, epsilon = *s.epsilon;
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    const T g = grad[k];
    T msk = ms[k];
    msk += (g * g - msk) * one_minus_rho;
    ms[k] = msk;
    T denom = msk + epsilon;
    if constexpr (kCentered) {
      T mgk = mg[k];
      mgk += (g - mgk) * one_minus_rho;
      mg[k] = mgk;
      denom = (msk - mgk * mgk) + epsilon;
    }
    const T momk = mom[k] * momentum + (g * lr) / cuda_util::Sqrt(denom);
    mom[k] = momk;
    var[k] -= momk;
  }
}

template <typename T, bool kUpdateSlots>
__global__ void ApplyAdagradKernel(T* __restrict__ var, T* __restrict__ accum, const T* __restrict__ grad,
                                   const T* __restrict__ lr_in, int64_t n) {
  const T lr = *lr_in;
  for (int64_t k = GridThreadIndex(); k < n; k += GridThreadCount()) {
    const T g = grad[k];
    T a = accum[k];
    if constexpr (kUpdateSlots) {
      a += g * g;
      accum[k] = a;
    }
    var[k] -= g * lr * (T(1) / cuda_util::Sqrt(a));
  }
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

}  // namespace

void RegisterAdaptiveTrainingCudaKernels(KernelRegistry& r, const KernelRegistry& /*cpu*/) {
  RegisterGpuKernels<GpuApplyRMSPropOp, float, double>(r, "ApplyRMSProp", {}, {});
  RegisterGpuKernels<GpuApplyCenteredRMSPropOp, float, double>(r, "ApplyCenteredRMSProp", {}, {});
  RegisterGpuKernels<GpuApplyAdagradOp, float, double>(r, "ApplyAdagrad", {}, {});
}

}  // namespace tw
