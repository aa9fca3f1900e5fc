// CUDA kernels of local response normalization: LRN and LRNGrad, float and
// double. CPU twins: lrn_kernels.cc; both do lrn_args.h's arithmetic in its
// order (products rounded alone, cuda_util::MulRn), so the results are equal
// to the CPU's for beta 1 and 0.5 and within the device's exp and log
// otherwise.
//
// - LrnNormKernel<T>: a grid-stride loop over the elements: norm[i], the
//   squares of its depth window summed in ascending order, * alpha + bias.
// - LrnKernel<T>: a grid-stride loop over the elements: the norm as above,
//   out = in * scale(norm).
// - LrnGradKernel<T>: a grid-stride loop over the elements (the gradient's
//   targets k): the sum over the windows j that hold k, ascending, reading
//   the norms LrnNormKernel wrote (a temporary of the input's shape).
#include <cstdint>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/lrn_args.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;
using cuda_util::MulRn;

template <typename T>
struct LrnParams {
  int64_t total, depth, radius;
  T alpha, bias, beta;
  bool beta_is_one, beta_is_half;
};

template <typename T>
__device__ __forceinline__ T Norm(const T* __restrict__ row, int64_t c, const LrnParams<T>& p) {
  const int64_t begin = c - p.radius > 0 ? c - p.radius : 0;
  const int64_t end = c + p.radius + 1 < p.depth ? c + p.radius + 1 : p.depth;
  T sum = T(0);
  for (int64_t k = begin; k < end; ++k) sum += MulRn(row[k], row[k]);
  return MulRn(sum, p.alpha) + p.bias;
}

template <typename T>
__device__ __forceinline__ T Scale(T norm, const LrnParams<T>& p) {
  if (p.beta_is_one) return T(1) / norm;
  if (p.beta_is_half) return T(1) / cuda_util::Sqrt(norm);
  return cuda_util::Exp(MulRn(cuda_util::Log(norm), -p.beta));
}

template <typename T>
__global__ void LrnKernel(const T* __restrict__ x, T* __restrict__ y, LrnParams<T> p) {
  for (int64_t i = GridThreadIndex(); i < p.total; i += GridThreadCount()) {
    const int64_t c = i % p.depth;
    y[i] = MulRn(x[i], Scale(Norm(x + (i - c), c, p), p));
  }
}

template <typename T>
__global__ void LrnNormKernel(const T* __restrict__ x, T* __restrict__ norm, LrnParams<T> p) {
  for (int64_t i = GridThreadIndex(); i < p.total; i += GridThreadCount()) {
    const int64_t c = i % p.depth;
    norm[i] = Norm(x + (i - c), c, p);
  }
}

template <typename T>
__global__ void LrnGradKernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
                              const T* __restrict__ norm, T* __restrict__ dx, LrnParams<T> p) {
  for (int64_t i = GridThreadIndex(); i < p.total; i += GridThreadCount()) {
    const int64_t k = i % p.depth, row = i - k;
    const int64_t begin = k - p.radius > 0 ? k - p.radius : 0;
    const int64_t end = k + p.radius + 1 < p.depth ? k + p.radius + 1 : p.depth;
    const T minus_two_alpha_beta = MulRn(MulRn(T(-2), p.alpha), p.beta);
    T acc = T(0);
    for (int64_t j = begin; j < end; ++j) {
      const T n = norm[row + j];
      T dyi = MulRn(MulRn(minus_two_alpha_beta, x[i]), y[row + j]) / n;
      if (j == k) dyi += Scale(n, p);
      acc += MulRn(dyi, dy[row + j]);
    }
    dx[i] = acc;
  }
}

template <typename T>
LrnParams<T> ParamsOf(const lrn::Attrs& a, int64_t total, int64_t depth) {
  return LrnParams<T>{total,
                      depth,
                      a.depth_radius,
                      static_cast<T>(a.alpha),
                      static_cast<T>(a.bias),
                      static_cast<T>(a.beta),
                      a.beta == 1.0,
                      a.beta == 0.5};
}

class LrnGpuBase : public GpuOpKernel {
 public:
  explicit LrnGpuBase(OpKernelConstruction* c) : GpuOpKernel(c) { TW_OP_REQUIRES_OK(c, lrn::ReadAttrs(*c, &attrs_)); }

 protected:
  lrn::Attrs attrs_;
};

template <typename T>
class LrnGpuOp : public LrnGpuBase {
 public:
  using LrnGpuBase::LrnGpuBase;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    TW_OP_REQUIRES_OK(ctx, lrn::CheckInput(ctx));
    const Tensor& input = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    const LrnParams<T> p = ParamsOf<T>(attrs_, total, input.dim(3));
    TW_OP_REQUIRES_OK(ctx, LaunchGridStride(gpu, total, LrnKernel<T>, input.data<T>(), out->data<T>(), p));
  }
};

template <typename T>
class LrnGradGpuOp : public LrnGpuBase {
 public:
  using LrnGpuBase::LrnGpuBase;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    TW_OP_REQUIRES_OK(ctx, lrn::CheckGradInputs(ctx));
    const Tensor& grads = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, grads.shape(), &out));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    const LrnParams<T> p = ParamsOf<T>(attrs_, total, grads.dim(3));
    Tensor norm;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeOf<T>(), grads.shape(), &norm));
    const T* x = ctx->input(1).data<T>();
    TW_OP_REQUIRES_OK(ctx, LaunchGridStride(gpu, total, LrnNormKernel<T>, x, norm.data<T>(), p));
    TW_OP_REQUIRES_OK(ctx, LaunchGridStride(gpu, total, LrnGradKernel<T>, grads.data<T>(), x,
                                            ctx->input(2).data<T>(), static_cast<const T*>(norm.data<T>()),
                                            out->data<T>(), p));
  }
};

}  // namespace

void RegisterLrnCudaKernels(KernelRegistry& target, const KernelRegistry& /*cpu*/) {
  target.RegisterTyped<LrnGpuOp, float, double>("LRN", kDeviceGpu);
  target.RegisterTyped<LrnGradGpuOp, float, double>("LRNGrad", kDeviceGpu);
}

}  // namespace tw
