// CPU kernels of the resize ops: ResizeBilinear, ResizeNearestNeighbor and
// their gradients, NHWC. The arithmetic is TF's, in its order and in float:
// the scale in/out (or (in-1)/(out-1) with align_corners), each output
// coordinate mapped back by the legacy or the half-pixel rule, bilinear
// interpolation as top + (bottom - top) * y_lerp of the two rows'
// left + (right - left) * x_lerp. Forward rows are split over the intra-op
// pool; the gradients split over images (each sums into its own image, in
// the order of TF's loops, so results do not depend on the thread count).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/resize_args.h"

namespace tw {
namespace {

using resize::Geometry;

// Output coordinate i mapped into the input, bilinear (TF's legacy or
// half-pixel scaler).
float BilinearSource(int64_t i, float scale, bool half_pixel) {
  return half_pixel ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
}

struct Interpolation {
  int64_t lower = 0, upper = 0;
  float lerp = 0;
};

std::vector<Interpolation> Interpolations(int64_t out_size, int64_t in_size, float scale, bool half_pixel) {
  std::vector<Interpolation> v(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    const float in = BilinearSource(i, scale, half_pixel);
    const float in_f = std::floor(in);
    Interpolation& w = v[static_cast<size_t>(i)];
    w.lower = std::max(static_cast<int64_t>(in_f), int64_t{0});
    w.upper = std::min(static_cast<int64_t>(std::ceil(in)), in_size - 1);
    w.lerp = in - in_f;
  }
  return v;
}

// The input pixel an output coordinate takes, nearest-neighbour.
int64_t NearestSource(int64_t i, float scale, int64_t in_size, const resize::Attrs& a) {
  const float in = a.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
  int64_t k = std::min(a.align_corners ? static_cast<int64_t>(std::round(in)) : static_cast<int64_t>(std::floor(in)),
                       in_size - 1);
  if (a.half_pixel_centers) k = std::max(int64_t{0}, k);
  return k;
}

// One output row of a bilinear resize: each pixel's channels interpolated
// from the input rows `top` and `bottom`. `xs` hold input columns already
// multiplied by the channel count; a compile-time kChannels (1, 3, 4)
// unrolls the channel loop, 0 reads it from `c`.
template <typename T, int kChannels>
void BilinearRow(const T* top, const T* bottom, float y_lerp, const std::vector<Interpolation>& xs, int64_t c,
                 float* dst) {
  const int64_t ch = kChannels > 0 ? kChannels : c;
  for (const Interpolation& w : xs) {
    const T* tl = top + w.lower;
    const T* tr = top + w.upper;
    const T* bl = bottom + w.lower;
    const T* br = bottom + w.upper;
    for (int64_t k = 0; k < ch; ++k) {
      const float t = static_cast<float>(tl[k]) + (static_cast<float>(tr[k]) - static_cast<float>(tl[k])) * w.lerp;
      const float b = static_cast<float>(bl[k]) + (static_cast<float>(br[k]) - static_cast<float>(bl[k])) * w.lerp;
      dst[k] = t + (b - t) * y_lerp;
    }
    dst += ch;
  }
}

template <typename T>
class ResizeBilinearOp : public resize::KernelBase {
 public:
  using KernelBase::KernelBase;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto geometry = resize::Output(ctx, attrs_, "ResizeBilinear", &out);
    TW_OP_REQUIRES_OK(ctx, geometry.status());
    if (out->NumElements() == 0) return;
    const Geometry g = *geometry;
    const std::vector<Interpolation> ys = Interpolations(g.out_h, g.in_h, g.h_scale, attrs_.half_pixel_centers);
    std::vector<Interpolation> xs = Interpolations(g.out_w, g.in_w, g.w_scale, attrs_.half_pixel_centers);
    const int64_t c = g.channels, row = g.in_w * c;
    for (Interpolation& w : xs) w.lower *= c, w.upper *= c;
    auto* row_fn = c == 3 ? &BilinearRow<T, 3> : c == 1 ? &BilinearRow<T, 1> : c == 4 ? &BilinearRow<T, 4>
                                                                                      : &BilinearRow<T, 0>;
    const T* in = ctx->input(0).data<T>();
    float* o = out->data<float>();
    ParallelFor(ctx->intra_op_pool(), g.batch * g.out_h, g.out_w * c * 8, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const Interpolation& y = ys[static_cast<size_t>(r % g.out_h)];
        const T* image = in + (r / g.out_h) * g.in_h * row;
        row_fn(image + y.lower * row, image + y.upper * row, y.lerp, xs, c, o + r * g.out_w * c);
      }
    });
  }
};

template <typename T>
class ResizeNearestNeighborOp : public resize::KernelBase {
 public:
  using KernelBase::KernelBase;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto g = resize::Output(ctx, attrs_, "ResizeNearestNeighbor", &out);
    TW_OP_REQUIRES_OK(ctx, g.status());
    if (out->NumElements() == 0) return;
    std::vector<int64_t> xs(static_cast<size_t>(g->out_w));
    for (int64_t x = 0; x < g->out_w; ++x) xs[static_cast<size_t>(x)] = NearestSource(x, g->w_scale, g->in_w, attrs_);
    const T* in = ctx->input(0).data<T>();
    T* o = out->data<T>();
    const int64_t c = g->channels, row = g->in_w * c;
    ParallelFor(ctx->intra_op_pool(), g->batch * g->out_h, g->out_w * c * 2, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t b = r / g->out_h;
        const T* src = in + (b * g->in_h + NearestSource(r % g->out_h, g->h_scale, g->in_h, attrs_)) * row;
        T* dst = o + r * g->out_w * c;
        for (int64_t x = 0; x < g->out_w; ++x) std::copy_n(src + xs[static_cast<size_t>(x)] * c, c, dst + x * c);
      }
    });
  }
};

// Inputs: grads (float32, the resized shape), original_image (T).
template <typename T>
class ResizeBilinearGradOp : public resize::KernelBase {
 public:
  using KernelBase::KernelBase;
  void Compute(OpKernelContext* ctx) override {
    auto geo = resize::GradGeometry(ctx, attrs_, "ResizeBilinearGrad");
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const Tensor& grads = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(1).shape(), &out));
    T* o = out->data<T>();
    std::fill_n(o, out->NumElements(), T(0));
    if (grads.NumElements() == 0) return;
    const int64_t batch = geo->batch, rh = geo->out_h, rw = geo->out_w, c = geo->channels;
    const int64_t oh = geo->in_h, ow = geo->in_w;
    const std::vector<Interpolation> ys = Interpolations(rh, oh, geo->h_scale, attrs_.half_pixel_centers);
    const std::vector<Interpolation> xs = Interpolations(rw, ow, geo->w_scale, attrs_.half_pixel_centers);
    const float* dy = grads.data<float>();
    ParallelFor(ctx->intra_op_pool(), batch, rh * rw * c * 16, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        T* image = o + b * oh * ow * c;
        for (int64_t y = 0; y < rh; ++y) {
          const Interpolation& iy = ys[static_cast<size_t>(y)];
          const float inv_y = 1.0f - iy.lerp;
          T* top = image + iy.lower * ow * c;
          T* bottom = image + iy.upper * ow * c;
          for (int64_t x = 0; x < rw; ++x) {
            const Interpolation& ix = xs[static_cast<size_t>(x)];
            const float inv_x = 1.0f - ix.lerp;
            const float* g = dy + ((b * rh + y) * rw + x) * c;
            for (int64_t k = 0; k < c; ++k) {
              top[ix.lower * c + k] += static_cast<T>(g[k] * inv_y * inv_x);
              top[ix.upper * c + k] += static_cast<T>(g[k] * inv_y * ix.lerp);
              bottom[ix.lower * c + k] += static_cast<T>(g[k] * iy.lerp * inv_x);
              bottom[ix.upper * c + k] += static_cast<T>(g[k] * iy.lerp * ix.lerp);
            }
          }
        }
      }
    });
  }
};

// Inputs: grads (T, the resized shape), size (the input's [height, width]).
template <typename T>
class ResizeNearestNeighborGradOp : public resize::KernelBase {
 public:
  using KernelBase::KernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grads = ctx->input(0);
    TW_OP_REQUIRES_OK(ctx, resize::CheckImages(grads, "grads", "ResizeNearestNeighborGrad"));
    auto hw = resize::SizeArg(ctx, 1, "ResizeNearestNeighborGrad");
    TW_OP_REQUIRES_OK(ctx, hw.status());
    const int64_t batch = grads.dim(0), rh = grads.dim(1), rw = grads.dim(2), c = grads.dim(3);
    const int64_t oh = hw->first, ow = hw->second;
    auto shape = TensorShape::Make({batch, oh, ow, c});
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* o = out->data<T>();
    std::fill_n(o, out->NumElements(), T(0));
    if (grads.NumElements() == 0) return;
    const float h_scale = resize::Scale(oh, rh, attrs_.align_corners);
    const float w_scale = resize::Scale(ow, rw, attrs_.align_corners);
    std::vector<int64_t> xs(static_cast<size_t>(rw));
    for (int64_t x = 0; x < rw; ++x) xs[static_cast<size_t>(x)] = NearestSource(x, w_scale, ow, attrs_);
    const T* dy = grads.data<T>();
    ParallelFor(ctx->intra_op_pool(), batch, rh * rw * c * 2, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        for (int64_t y = 0; y < rh; ++y) {
          T* dst = o + (b * oh + NearestSource(y, h_scale, oh, attrs_)) * ow * c;
          const T* g = dy + (b * rh + y) * rw * c;
          for (int64_t x = 0; x < rw; ++x) {
            for (int64_t k = 0; k < c; ++k) dst[xs[static_cast<size_t>(x)] * c + k] += g[x * c + k];
          }
        }
      }
    });
  }
};

}  // namespace

void RegisterImageKernels(KernelRegistry& r) {
  r.RegisterTyped<ResizeBilinearOp, float, double, int32_t, int64_t, uint8_t>("ResizeBilinear", kDeviceCpu);
  r.RegisterTyped<ResizeNearestNeighborOp, float, double, int32_t, int64_t, uint8_t>("ResizeNearestNeighbor",
                                                                                      kDeviceCpu);
  r.RegisterTyped<ResizeBilinearGradOp, float, double>("ResizeBilinearGrad", kDeviceCpu);
  r.RegisterTyped<ResizeNearestNeighborGradOp, float, double>("ResizeNearestNeighborGrad", kDeviceCpu);
}

}  // namespace tw
