// CPU kernels of average pooling (NHWC): AvgPool and AvgPoolGrad. Windows,
// padding and the argument checks are window_params.h's (TF's windows, shared
// with max pooling). As TF's, a window's mean is over its positions inside the
// input: SAME padding adds no zeros to the count. AvgPoolGrad spreads each
// gradient element evenly over its window, the adjoint of AvgPool. Channels
// are innermost (contiguous in NHWC); the batch is split over the intra-op pool.
// GPU twins: pool_cuda.cu (the same sums in the same order).
#include <algorithm>
#include <functional>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/window_params.h"

namespace tw {
namespace {

using window::PoolAttrs;
using window::PoolGeometry;

// The input rows and columns of output (oy, ox)'s window, clipped to the input.
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t count() const { return (y1 - y0) * (x1 - x0); }
};
Window WindowAt(const PoolGeometry& g, int64_t oy, int64_t ox) {
  const int64_t y = oy * g.sh - g.pad_top, x = ox * g.sw - g.pad_left;
  return {std::max<int64_t>(y, 0), std::min(y + g.kh, g.h), std::max<int64_t>(x, 0), std::min(x + g.kw, g.w)};
}

class AvgPoolBase : public OpKernel {
 public:
  explicit AvgPoolBase(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, window::ReadPoolAttrs(*c, &attrs_)); }

 protected:
  static void ForImages(OpKernelContext* ctx, const PoolGeometry& g, const std::function<void(int64_t, int64_t)>& fn) {
    ParallelFor(ctx->intra_op_pool(), g.n, g.oh * g.ow * g.kh * g.kw * g.c + 1, fn);
  }
  PoolAttrs attrs_;
};

template <typename T>
class AvgPoolOp : public AvgPoolBase {
 public:
  using AvgPoolBase::AvgPoolBase;
  void Compute(OpKernelContext* ctx) override {
    auto g = window::MakePoolGeometry("AvgPool", attrs_, ctx->input(0).shape());
    TW_OP_REQUIRES_OK(ctx, g.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g->output_shape(), &out));
    const T* x = ctx->input(0).data<T>();
    T* y = out->data<T>();
    const PoolGeometry geo = *g;
    ForImages(ctx, geo, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) {
        const T* img = x + n * geo.h * geo.w * geo.c;
        T* o = y + n * geo.oh * geo.ow * geo.c;
        for (int64_t oy = 0; oy < geo.oh; ++oy) {
          for (int64_t ox = 0; ox < geo.ow; ++ox, o += geo.c) {
            const Window w = WindowAt(geo, oy, ox);
            std::fill_n(o, geo.c, T(0));
            for (int64_t iy = w.y0; iy < w.y1; ++iy) {
              for (int64_t ix = w.x0; ix < w.x1; ++ix) {
                const T* p = img + (iy * geo.w + ix) * geo.c;
                for (int64_t c = 0; c < geo.c; ++c) o[c] += p[c];
              }
            }
            const T inv = T(1) / static_cast<T>(w.count());
            for (int64_t c = 0; c < geo.c; ++c) o[c] *= inv;
          }
        }
      }
    });
  }
};

// Inputs: orig_input_shape (4 int32 sizes) and grad (the pooling's output
// shape); output: the input's shape.
template <typename T>
class AvgPoolGradOp : public AvgPoolBase {
 public:
  using AvgPoolBase::AvgPoolBase;
  void Compute(OpKernelContext* ctx) override {
    auto g = window::AvgPoolGradGeometry(ctx, attrs_);
    TW_OP_REQUIRES_OK(ctx, g.status());
    const Tensor& grad = ctx->input(1);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g->input_shape(), &out));
    const T* dy = grad.data<T>();
    T* dx = out->data<T>();
    std::fill_n(dx, out->NumElements(), T(0));
    const PoolGeometry geo = *g;
    ForImages(ctx, geo, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) {
        T* img = dx + n * geo.h * geo.w * geo.c;
        const T* gy = dy + n * geo.oh * geo.ow * geo.c;
        for (int64_t oy = 0; oy < geo.oh; ++oy) {
          for (int64_t ox = 0; ox < geo.ow; ++ox, gy += geo.c) {
            const Window w = WindowAt(geo, oy, ox);
            const T inv = T(1) / static_cast<T>(w.count());
            for (int64_t iy = w.y0; iy < w.y1; ++iy) {
              for (int64_t ix = w.x0; ix < w.x1; ++ix) {
                T* p = img + (iy * geo.w + ix) * geo.c;
                for (int64_t c = 0; c < geo.c; ++c) p[c] += gy[c] * inv;
              }
            }
          }
        }
      }
    });
  }
};

}  // namespace

void RegisterAvgPoolKernels(KernelRegistry& r) {
  r.RegisterTyped<AvgPoolOp, float, double>("AvgPool", kDeviceCpu);
  r.RegisterTyped<AvgPoolGradOp, float, double>("AvgPoolGrad", kDeviceCpu);
}

}  // namespace tw
