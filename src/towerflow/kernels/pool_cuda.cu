// CUDA kernels of pooling (NHWC), float and double: MaxPool, MaxPoolGrad,
// MaxPoolGradGrad, AvgPool, AvgPoolGrad. CPU twins: pool_kernels.cc and
// avg_pool_kernels.cc (the same geometry, checks and messages:
// window_params.h; TF's windows and SAME padding split, the smaller half
// before).
//
// - MaxPoolKernel<T>: a grid-stride loop over the output elements (n, oy, ox,
//   c); each thread takes the max of its window, starting from the lowest
//   value, with the CPU twin's comparison (v > best), so padded positions never
//   win and NaNs are skipped as on the CPU.
// - MaxPoolArgMaxKernel<T>: a grid-stride loop over the output elements; each
//   thread finds the spatial index (y * w + x) of its window's first maximum in
//   scan order (kh, then kw), the CPU twin's tie rule.
// - MaxPoolGradKernel<T>: a grid-stride loop over the input elements; each
//   thread sums the incoming gradient of the windows whose first maximum it is,
//   visiting them in output order (oy, then ox): the order in which the CPU
//   twin adds them, so the results are bitwise equal and no atomics are needed.
// - MaxPoolGradGradKernel<T>: a grid-stride loop over the output elements; each
//   thread reads the gradient at its window's first maximum.
// - AvgPoolKernel<T>: a grid-stride loop over the output elements; each thread
//   sums its window (rows, then columns) and scales by 1 / (positions of the
//   window inside the input): the CPU twin's sums in its order.
// - AvgPoolGradKernel<T>: a grid-stride loop over the input elements; each
//   thread adds grad[o] / count(o) of the windows o that contain it, in output
//   order, as the CPU twin does (products rounded before the sum: no fused
//   multiply-add, as on the CPU).
//
// Why not cuDNN's pooling (for both): cuDNN pads symmetrically, so TF's SAME padding with
// an odd total (one more at the end) would need a -inf padded copy of the
// input, and cuDNN does not document which of tied maxima its backward pass
// routes the gradient to, while the CPU twin (and TF's CPU kernel) routes it to
// the first. These kernels read the input in place and keep the tie rule.
#include <algorithm>
#include <limits>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/window_params.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;
using cuda_util::MulRn;

using window::PoolAttrs;
using window::PoolGeometry;

// The output element index i as (n, oy, ox, ch); its window's clipped rows
// [y0, y1) and columns [x0, x1).
struct Window {
  int64_t n, ch, y0, y1, x0, x1;
};
__device__ __forceinline__ Window WindowOf(const PoolGeometry& g, int64_t i) {
  Window win;
  win.ch = i % g.c;
  int64_t t = i / g.c;
  const int64_t ox = t % g.ow;
  t /= g.ow;
  const int64_t oy = t % g.oh;
  win.n = t / g.oh;
  const int64_t ys = oy * g.sh - g.pad_top, xs = ox * g.sw - g.pad_left;
  win.y0 = ys > 0 ? ys : 0;
  win.y1 = ys + g.kh < g.h ? ys + g.kh : g.h;
  win.x0 = xs > 0 ? xs : 0;
  win.x1 = xs + g.kw < g.w ? xs + g.kw : g.w;
  return win;
}

// The input element index i as (n, y, x, ch), and the windows that hold
// (y, x): rows [oy0, oy1] and columns [ox0, ox1] of the output, where
// oy * sh - pad_top <= y < oy * sh - pad_top + kh (empty when oy1 < oy0).
struct Holders {
  int64_t n, y, x, ch, oy0, oy1, ox0, ox1;
};
__device__ __forceinline__ Holders HoldersOf(const PoolGeometry& g, int64_t i) {
  Holders h;
  h.ch = i % g.c;
  int64_t t = i / g.c;
  h.x = t % g.w;
  t /= g.w;
  h.y = t % g.h;
  h.n = t / g.h;
  const int64_t ny = h.y + g.pad_top - g.kh + 1, nx = h.x + g.pad_left - g.kw + 1;
  h.oy0 = ny <= 0 ? 0 : (ny + g.sh - 1) / g.sh;
  h.ox0 = nx <= 0 ? 0 : (nx + g.sw - 1) / g.sw;
  h.oy1 = (h.y + g.pad_top) / g.sh < g.oh - 1 ? (h.y + g.pad_top) / g.sh : g.oh - 1;
  h.ox1 = (h.x + g.pad_left) / g.sw < g.ow - 1 ? (h.x + g.pad_left) / g.sw : g.ow - 1;
  return h;
}

template <typename T>
__global__ void MaxPoolKernel(const T* __restrict__ x, T* __restrict__ y, PoolGeometry g, int64_t total) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const Window win = WindowOf(g, i);
    const T* img = x + win.n * g.h * g.w * g.c + win.ch;
    T best = std::numeric_limits<T>::lowest();
    for (int64_t yy = win.y0; yy < win.y1; ++yy) {
      for (int64_t xx = win.x0; xx < win.x1; ++xx) {
        const T v = img[(yy * g.w + xx) * g.c];
        best = v > best ? v : best;
      }
    }
    y[i] = best;
  }
}

template <typename T>
__global__ void MaxPoolArgMaxKernel(const T* __restrict__ x, int64_t* __restrict__ arg, PoolGeometry g,
                                    int64_t total) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const Window win = WindowOf(g, i);
    const T* img = x + win.n * g.h * g.w * g.c + win.ch;
    // Every window holds at least one input position (pad_before < k), so the
    // first one seeds the search, as in the CPU twin.
    int64_t best_at = win.y0 * g.w + win.x0;
    T best = img[best_at * g.c];
    for (int64_t yy = win.y0; yy < win.y1; ++yy) {
      for (int64_t xx = win.x0; xx < win.x1; ++xx) {
        const T v = img[(yy * g.w + xx) * g.c];
        if (v > best) {
          best = v;
          best_at = yy * g.w + xx;
        }
      }
    }
    arg[i] = best_at;
  }
}

template <typename T>
__global__ void MaxPoolGradKernel(const int64_t* __restrict__ arg, const T* __restrict__ dy,
                                  T* __restrict__ dx, PoolGeometry g, int64_t total) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const Holders h = HoldersOf(g, i);
    const int64_t self = h.y * g.w + h.x;
    T acc = T(0);
    for (int64_t oy = h.oy0; oy <= h.oy1; ++oy) {
      for (int64_t ox = h.ox0; ox <= h.ox1; ++ox) {
        const int64_t o = ((h.n * g.oh + oy) * g.ow + ox) * g.c + h.ch;
        if (arg[o] == self) acc += dy[o];
      }
    }
    dx[i] = acc;
  }
}

template <typename T>
__global__ void MaxPoolGradGradKernel(const int64_t* __restrict__ arg, const T* __restrict__ grad,
                                      T* __restrict__ y, PoolGeometry g, int64_t total) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const int64_t ch = i % g.c;
    const int64_t n = i / (g.c * g.ow * g.oh);
    y[i] = grad[(n * g.h * g.w + arg[i]) * g.c + ch];
  }
}

// The positions of output (oy, ox)'s window inside the input.
__device__ __forceinline__ int64_t WindowCount(const PoolGeometry& g, int64_t oy, int64_t ox) {
  const int64_t ys = oy * g.sh - g.pad_top, xs = ox * g.sw - g.pad_left;
  const int64_t y0 = ys > 0 ? ys : 0, y1 = ys + g.kh < g.h ? ys + g.kh : g.h;
  const int64_t x0 = xs > 0 ? xs : 0, x1 = xs + g.kw < g.w ? xs + g.kw : g.w;
  return (y1 - y0) * (x1 - x0);
}

template <typename T>
__global__ void AvgPoolKernel(const T* __restrict__ x, T* __restrict__ y, PoolGeometry g, int64_t total) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const Window win = WindowOf(g, i);
    const T* img = x + win.n * g.h * g.w * g.c + win.ch;
    T acc = T(0);
    for (int64_t yy = win.y0; yy < win.y1; ++yy) {
      for (int64_t xx = win.x0; xx < win.x1; ++xx) acc += img[(yy * g.w + xx) * g.c];
    }
    y[i] = MulRn(acc, T(1) / static_cast<T>((win.y1 - win.y0) * (win.x1 - win.x0)));
  }
}

template <typename T>
__global__ void AvgPoolGradKernel(const T* __restrict__ dy, T* __restrict__ dx, PoolGeometry g, int64_t total) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const Holders h = HoldersOf(g, i);
    T acc = T(0);
    for (int64_t oy = h.oy0; oy <= h.oy1; ++oy) {
      for (int64_t ox = h.ox0; ox <= h.ox1; ++ox) {
        const T inv = T(1) / static_cast<T>(WindowCount(g, oy, ox));
        acc += MulRn(dy[((h.n * g.oh + oy) * g.ow + ox) * g.c + h.ch], inv);
      }
    }
    dx[i] = acc;
  }
}

// ---- Host launchers: one per CUDA kernel, on the device's compute stream ----

template <typename T>
Status LaunchMaxPool(const GpuDevice& gpu, const T* x, T* y, const PoolGeometry& g, int64_t total) {
  return LaunchGridStride(gpu, total, MaxPoolKernel<T>, x, y, g, total);
}

template <typename T>
Status LaunchMaxPoolArgMax(const GpuDevice& gpu, const T* x, int64_t* arg, const PoolGeometry& g,
                           int64_t total) {
  return LaunchGridStride(gpu, total, MaxPoolArgMaxKernel<T>, x, arg, g, total);
}

template <typename T>
Status LaunchMaxPoolGrad(const GpuDevice& gpu, const int64_t* arg, const T* dy, T* dx, const PoolGeometry& g,
                         int64_t total) {
  return LaunchGridStride(gpu, total, MaxPoolGradKernel<T>, arg, dy, dx, g, total);
}

template <typename T>
Status LaunchMaxPoolGradGrad(const GpuDevice& gpu, const int64_t* arg, const T* grad, T* y,
                             const PoolGeometry& g, int64_t total) {
  return LaunchGridStride(gpu, total, MaxPoolGradGradKernel<T>, arg, grad, y, g, total);
}

template <typename T>
Status LaunchAvgPool(const GpuDevice& gpu, const T* x, T* y, const PoolGeometry& g, int64_t total) {
  return LaunchGridStride(gpu, total, AvgPoolKernel<T>, x, y, g, total);
}

template <typename T>
Status LaunchAvgPoolGrad(const GpuDevice& gpu, const T* dy, T* dx, const PoolGeometry& g, int64_t total) {
  return LaunchGridStride(gpu, total, AvgPoolGradKernel<T>, dy, dx, g, total);
}

// ---- OpKernels: the CPU twin's attr, shape and size checks (window_params.h),
// then the launches

class PoolGpuKernelBase : public GpuOpKernel {
 public:
  explicit PoolGpuKernelBase(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, window::ReadPoolAttrs(*c, &attrs_));
  }

 protected:
  PoolAttrs attrs_;
};

template <typename T>
class MaxPoolGpuOp : public PoolGpuKernelBase {
 public:
  using PoolGpuKernelBase::PoolGpuKernelBase;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& input = ctx->input(0);
    auto geo = window::MakePoolGeometry(node().op(), attrs_, input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, geo->output_shape(), &out));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchMaxPool<T>(gpu, input.data<T>(), out->data<T>(), *geo, total));
  }
};

// MaxPoolGrad (d input: grad[o] added at the first maximum of window o) and,
// with kGradOfGrad, MaxPoolGradGrad (d grad of MaxPoolGrad: each window's
// output reads the incoming gradient at the window's first maximum; input 2
// has orig_input's shape). Both first find every window's first maximum in a
// temp tensor shaped like the pooling's output (int64 spatial indices within
// the image).
template <typename T, bool kGradOfGrad>
class MaxPoolGradGpuOpBase : public PoolGpuKernelBase {
 public:
  using PoolGpuKernelBase::PoolGpuKernelBase;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& input = ctx->input(0);
    auto geo = window::CheckPoolGradInputs(ctx, attrs_, kGradOfGrad);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, kGradOfGrad ? g.output_shape() : input.shape(), &out));
    TW_OP_REQUIRES_OK(ctx, window::CheckPoolIndexable<T>(ctx, g));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    Tensor arg;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(kInt64, g.output_shape(), &arg));
    const int64_t windows = arg.NumElements();
    if (windows > 0) {
      TW_OP_REQUIRES_OK(ctx, LaunchMaxPoolArgMax<T>(gpu, input.data<T>(), arg.data<int64_t>(), g, windows));
    }
    const T* grad = ctx->input(2).data<T>();
    if constexpr (kGradOfGrad) {
      TW_OP_REQUIRES_OK(ctx,
                        LaunchMaxPoolGradGrad<T>(gpu, arg.data<int64_t>(), grad, out->data<T>(), g, total));
    } else {
      // With no windows (an empty output) the kernel reads no arg-max and writes zeros.
      const int64_t* arg_data = windows > 0 ? arg.data<int64_t>() : nullptr;
      TW_OP_REQUIRES_OK(ctx, LaunchMaxPoolGrad<T>(gpu, arg_data, grad, out->data<T>(), g, total));
    }
  }
};
template <typename T>
using MaxPoolGradGpuOp = MaxPoolGradGpuOpBase<T, false>;
template <typename T>
using MaxPoolGradGradGpuOp = MaxPoolGradGpuOpBase<T, true>;

template <typename T>
class AvgPoolGpuOp : public PoolGpuKernelBase {
 public:
  using PoolGpuKernelBase::PoolGpuKernelBase;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& input = ctx->input(0);
    auto geo = window::MakePoolGeometry("AvgPool", attrs_, input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, geo->output_shape(), &out));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchAvgPool<T>(gpu, input.data<T>(), out->data<T>(), *geo, total));
  }
};

// Inputs: orig_input_shape (4 int32 sizes, host memory) and grad.
template <typename T>
class AvgPoolGradGpuOp : public PoolGpuKernelBase {
 public:
  using PoolGpuKernelBase::PoolGpuKernelBase;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    auto geo = window::AvgPoolGradGeometry(ctx, attrs_);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, geo->input_shape(), &out));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchAvgPoolGrad<T>(gpu, ctx->input(1).data<T>(), out->data<T>(), *geo, total));
  }
};

}  // namespace

void RegisterPoolCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  target.RegisterTyped<MaxPoolGpuOp, float, double>("MaxPool", kDeviceGpu);
  target.RegisterTyped<MaxPoolGradGpuOp, float, double>("MaxPoolGrad", kDeviceGpu);
  target.RegisterTyped<MaxPoolGradGradGpuOp, float, double>("MaxPoolGradGrad", kDeviceGpu);
  target.RegisterTyped<AvgPoolGpuOp, float, double>("AvgPool", kDeviceGpu);
  RegisterGpuKernels<AvgPoolGradGpuOp, float, double>(target, "AvgPoolGrad", {0}, {});
}

}  // namespace tw
