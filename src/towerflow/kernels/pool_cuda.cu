// CUDA kernels of max pooling (NHWC), float and double: MaxPool, MaxPoolGrad,
// MaxPoolGradGrad. CPU twins: pool_kernels.cc (same geometry, checks and
// messages; TF's windows and SAME padding split, the smaller half before).
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
//
// Why not cuDNN's pooling: cuDNN pads symmetrically, so TF's SAME padding with
// an odd total (one more at the end) would need a -inf padded copy of the
// input, and cuDNN does not document which of tied maxima its backward pass
// routes the gradient to, while the CPU twin (and TF's CPU kernel) routes it to
// the first. These kernels read the input in place and keep the tie rule.
#include <algorithm>
#include <limits>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;

// Sizes of one pooling, passed to the kernels by value.
struct PoolGeometry {
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw;
  int64_t oh, ow, pad_top, pad_left;
  TensorShape output_shape() const { return TensorShape{n, oh, ow, c}; }
};

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
    const int64_t ch = i % g.c;
    int64_t t = i / g.c;
    const int64_t x = t % g.w;
    t /= g.w;
    const int64_t y = t % g.h;
    const int64_t n = t / g.h;
    // The windows that contain (y, x): oy * sh - pad_top <= y < oy * sh - pad_top + kh.
    const int64_t ny = y + g.pad_top - g.kh + 1, nx = x + g.pad_left - g.kw + 1;
    const int64_t oy0 = ny <= 0 ? 0 : (ny + g.sh - 1) / g.sh;
    const int64_t ox0 = nx <= 0 ? 0 : (nx + g.sw - 1) / g.sw;
    const int64_t oy1 = (y + g.pad_top) / g.sh < g.oh - 1 ? (y + g.pad_top) / g.sh : g.oh - 1;
    const int64_t ox1 = (x + g.pad_left) / g.sw < g.ow - 1 ? (x + g.pad_left) / g.sw : g.ow - 1;
    const int64_t self = y * g.w + x;
    T acc = T(0);
    for (int64_t oy = oy0; oy <= oy1; ++oy) {
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        const int64_t o = ((n * g.oh + oy) * g.ow + ox) * g.c + ch;
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

// ---- Host launchers: one per CUDA kernel, on the device's compute stream ----

template <typename T>
Status LaunchMaxPool(const GpuDevice& gpu, const T* x, T* y, const PoolGeometry& g, int64_t total) {
  const LaunchShape s = LaunchShapeFor(total, gpu);
  MaxPoolKernel<T><<<s.blocks, s.threads, 0, gpu.stream()>>>(x, y, g, total);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T>
Status LaunchMaxPoolArgMax(const GpuDevice& gpu, const T* x, int64_t* arg, const PoolGeometry& g,
                           int64_t total) {
  const LaunchShape s = LaunchShapeFor(total, gpu);
  MaxPoolArgMaxKernel<T><<<s.blocks, s.threads, 0, gpu.stream()>>>(x, arg, g, total);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T>
Status LaunchMaxPoolGrad(const GpuDevice& gpu, const int64_t* arg, const T* dy, T* dx, const PoolGeometry& g,
                         int64_t total) {
  const LaunchShape s = LaunchShapeFor(total, gpu);
  MaxPoolGradKernel<T><<<s.blocks, s.threads, 0, gpu.stream()>>>(arg, dy, dx, g, total);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T>
Status LaunchMaxPoolGradGrad(const GpuDevice& gpu, const int64_t* arg, const T* grad, T* y,
                             const PoolGeometry& g, int64_t total) {
  const LaunchShape s = LaunchShapeFor(total, gpu);
  MaxPoolGradGradKernel<T><<<s.blocks, s.threads, 0, gpu.stream()>>>(arg, grad, y, g, total);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

// ---- OpKernels: the CPU twin's attr, shape and size checks, then the launches

int64_t OutputSize(int64_t in, int64_t k, int64_t stride, bool same, int64_t* pad_before) {
  if (same) {
    const int64_t out = (in + stride - 1) / stride;
    *pad_before = std::max<int64_t>(0, (out - 1) * stride + k - in) / 2;
    return out;
  }
  *pad_before = 0;
  return in < k ? -1 : (in - k + stride) / stride;
}

class PoolGpuKernelBase : public OpKernel {
 public:
  explicit PoolGpuKernelBase(OpKernelConstruction* c) : OpKernel(c) {
    std::string padding;
    TW_OP_REQUIRES_OK(c, c->GetAttr("ksize", &ksize_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("strides", &strides_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("padding", &padding));
    for (const auto* v : {&ksize_, &strides_}) {
      TW_OP_REQUIRES(
          c, v->size() == 4 && (*v)[0] == 1 && (*v)[3] == 1 && (*v)[1] >= 1 && (*v)[2] >= 1,
          errors::InvalidArgument("attrs 'ksize' and 'strides' must be [1, h, w, 1] with h, w >= 1, got ",
                                  PartialShape(*v).ToString()));
    }
    TW_OP_REQUIRES(
        c, padding == "SAME" || padding == "VALID",
        errors::InvalidArgument("attr 'padding' must be \"SAME\" or \"VALID\", got \"", padding, "\""));
    same_ = padding == "SAME";
  }

 protected:
  StatusOr<PoolGeometry> Geometry(const TensorShape& in) const {
    if (in.rank() != 4) {
      return errors::InvalidArgument(node().op(), ": input must be [N,H,W,C], got ", in.ToString());
    }
    PoolGeometry g{in.dim(0),   in.dim(1),   in.dim(2), in.dim(3), ksize_[1], ksize_[2],
                   strides_[1], strides_[2], 0,         0,         0,         0};
    g.oh = OutputSize(g.h, g.kh, g.sh, same_, &g.pad_top);
    g.ow = OutputSize(g.w, g.kw, g.sw, same_, &g.pad_left);
    if (g.oh < 0 || g.ow < 0) {
      return errors::InvalidArgument(node().op(), ": a VALID window of ", g.kh, "x", g.kw,
                                     " does not fit input of shape ", in.ToString());
    }
    return g;
  }
  static Status CheckShape(OpKernelContext* ctx, int i, const TensorShape& want) {
    const TensorShape& got = ctx->input(i).shape();
    if (got != want) {
      return errors::InvalidArgument(ctx->node().op(), ": input ", i, " has shape ", got.ToString(),
                                     " but pooling input ", ctx->input(0).shape().ToString(), " requires ",
                                     want.ToString());
    }
    return Status::OK();
  }
  // The CPU twin's limit on image sizes (its arg-max indices are as wide as T),
  // kept so that both devices accept the same inputs.
  template <typename T>
  static Status CheckIndexable(OpKernelContext* ctx, const PoolGeometry& g) {
    const int64_t image_elements = g.h * g.w * g.c;
    const int bits = sizeof(T) == 4 ? 32 : 64;
    const int64_t limit =
        sizeof(T) == 4 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
    if (image_elements >= limit) {
      return errors::InvalidArgument(ctx->node().op(), ": images of ", image_elements,
                                     " elements are too large (indices are ", bits, "-bit)");
    }
    return Status::OK();
  }
  // The first-maximum positions of every window of input 0, in a temp tensor
  // shaped like the output (int64 spatial indices within the image).
  template <typename T>
  static StatusOr<Tensor> ArgMax(OpKernelContext* ctx, const GpuDevice& gpu, const PoolGeometry& g) {
    Tensor arg;
    TW_RETURN_IF_ERROR(ctx->allocate_temp(kInt64, g.output_shape(), &arg));
    const int64_t total = arg.NumElements();
    if (total > 0)
      TW_RETURN_IF_ERROR(LaunchMaxPoolArgMax<T>(gpu, ctx->input(0).data<T>(), arg.data<int64_t>(), g, total));
    return arg;
  }

  std::vector<int64_t> ksize_, strides_;
  bool same_ = true;
};

template <typename T>
class MaxPoolGpuOp : public PoolGpuKernelBase {
 public:
  using PoolGpuKernelBase::PoolGpuKernelBase;
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    const Tensor& input = ctx->input(0);
    auto geo = Geometry(input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, geo->output_shape(), &out));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchMaxPool<T>(*gpu, input.data<T>(), out->data<T>(), *geo, total));
  }
};

// d input: grad[o] added at the first maximum of window o.
template <typename T>
class MaxPoolGradGpuOp : public PoolGpuKernelBase {
 public:
  using PoolGpuKernelBase::PoolGpuKernelBase;
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    const Tensor& input = ctx->input(0);
    auto geo = Geometry(input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 1, g.output_shape()));
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 2, g.output_shape()));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    TW_OP_REQUIRES_OK(ctx, CheckIndexable<T>(ctx, g));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    StatusOr<Tensor> arg = ArgMax<T>(ctx, *gpu, g);
    TW_OP_REQUIRES_OK(ctx, arg.status());
    // With no windows (an empty output) the kernel reads no arg-max and writes zeros.
    const int64_t* arg_data = arg->NumElements() > 0 ? arg->data<int64_t>() : nullptr;
    TW_OP_REQUIRES_OK(
        ctx, LaunchMaxPoolGrad<T>(*gpu, arg_data, ctx->input(2).data<T>(), out->data<T>(), g, total));
  }
};

// d grad of MaxPoolGrad: each window's output reads the incoming gradient at
// the window's first maximum (input 2 has orig_input's shape).
template <typename T>
class MaxPoolGradGradGpuOp : public PoolGpuKernelBase {
 public:
  using PoolGpuKernelBase::PoolGpuKernelBase;
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    const Tensor& input = ctx->input(0);
    auto geo = Geometry(input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 1, g.output_shape()));
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 2, input.shape()));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    TW_OP_REQUIRES_OK(ctx, CheckIndexable<T>(ctx, g));
    const int64_t total = out->NumElements();
    if (total == 0) return;
    StatusOr<Tensor> arg = ArgMax<T>(ctx, *gpu, g);
    TW_OP_REQUIRES_OK(ctx, arg.status());
    TW_OP_REQUIRES_OK(ctx, LaunchMaxPoolGradGrad<T>(*gpu, arg->data<int64_t>(), ctx->input(2).data<T>(),
                                                    out->data<T>(), g, total));
  }
};

}  // namespace

void RegisterPoolCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  target.RegisterTyped<MaxPoolGpuOp, float, double>("MaxPool", kDeviceGpu);
  target.RegisterTyped<MaxPoolGradGpuOp, float, double>("MaxPoolGrad", kDeviceGpu);
  target.RegisterTyped<MaxPoolGradGradGpuOp, float, double>("MaxPoolGradGrad", kDeviceGpu);
}

}  // namespace tw
