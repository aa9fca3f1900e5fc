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
#include <limits>
#include <vector>

#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

// What a resize kernel works on: images [batch, in_h, in_w, channels] and
// the resized [batch, out_h, out_w, channels].
struct Geometry {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  float h_scale = 0, w_scale = 0;
};

float ResizeScale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

struct ResizeAttrs {
  bool align_corners = false;
  bool half_pixel_centers = false;
};

Status ReadAttrs(OpKernelConstruction& c, ResizeAttrs* a) {
  TW_RETURN_IF_ERROR(c.GetAttr("align_corners", &a->align_corners));
  TW_RETURN_IF_ERROR(c.GetAttr("half_pixel_centers", &a->half_pixel_centers));
  if (a->align_corners && a->half_pixel_centers) {
    return errors::InvalidArgument("If half_pixel_centers is True, align_corners must be False.");
  }
  return Status::OK();
}

// The [height, width] int32 vector in input i (each > 0), as TF checks it.
StatusOr<std::pair<int64_t, int64_t>> SizeArg(OpKernelContext* ctx, int i, const char* op) {
  const Tensor& size = ctx->input(i);
  if (size.dtype() != kInt32 || size.rank() != 1 || size.NumElements() != 2) {
    return errors::InvalidArgument(op, ": size must be an int32 vector of two elements [height, width], got ",
                                   size.DebugString());
  }
  const int32_t h = size.data<int32_t>()[0], w = size.data<int32_t>()[1];
  if (h <= 0 || w <= 0) {
    return errors::InvalidArgument(op, ": output dimensions must be positive, got size [", h, ", ", w, "]");
  }
  return std::make_pair(int64_t{h}, int64_t{w});
}

Status CheckImages(const Tensor& images, const char* what, const char* op) {
  if (images.rank() != 4) {
    return errors::InvalidArgument(op, ": ", what, " must be 4-dimensional [batch, height, width, channels], got ",
                                   images.shape().ToString());
  }
  for (int d = 1; d < 3; ++d) {
    if (images.dim(d) > std::numeric_limits<int32_t>::max()) {
      return errors::InvalidArgument(op, ": ", what, " of shape ", images.shape().ToString(),
                                     " is larger than int32 in height or width");
    }
  }
  return Status::OK();
}

// Resizing `images` (input 0) to size (input 1): checks and output 0.
StatusOr<Geometry> ResizeOutput(OpKernelContext* ctx, const ResizeAttrs& a, const char* op, Tensor** out) {
  const Tensor& images = ctx->input(0);
  TW_RETURN_IF_ERROR(CheckImages(images, "input", op));
  TW_ASSIGN_OR_RETURN(auto hw, SizeArg(ctx, 1, op));
  if (images.dim(1) == 0 || images.dim(2) == 0) {
    return errors::InvalidArgument(op, ": input image must be of non-zero size, got shape ",
                                   images.shape().ToString());
  }
  Geometry g{images.dim(0), images.dim(1), images.dim(2), images.dim(3), hw.first, hw.second};
  g.h_scale = ResizeScale(g.in_h, g.out_h, a.align_corners);
  g.w_scale = ResizeScale(g.in_w, g.out_w, a.align_corners);
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make({g.batch, g.out_h, g.out_w, g.channels}));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return g;
}

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
int64_t NearestSource(int64_t i, float scale, int64_t in_size, const ResizeAttrs& a) {
  const float in = a.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
  int64_t k = std::min(a.align_corners ? static_cast<int64_t>(std::round(in)) : static_cast<int64_t>(std::floor(in)),
                       in_size - 1);
  if (a.half_pixel_centers) k = std::max(int64_t{0}, k);
  return k;
}

class ResizeBase : public OpKernel {
 public:
  explicit ResizeBase(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, ReadAttrs(*c, &attrs_)); }

 protected:
  ResizeAttrs attrs_;
};

template <typename T>
class ResizeBilinearOp : public ResizeBase {
 public:
  using ResizeBase::ResizeBase;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto g = ResizeOutput(ctx, attrs_, "ResizeBilinear", &out);
    TW_OP_REQUIRES_OK(ctx, g.status());
    if (out->NumElements() == 0) return;
    const std::vector<Interpolation> ys = Interpolations(g->out_h, g->in_h, g->h_scale, attrs_.half_pixel_centers);
    const std::vector<Interpolation> xs = Interpolations(g->out_w, g->in_w, g->w_scale, attrs_.half_pixel_centers);
    const T* in = ctx->input(0).data<T>();
    float* o = out->data<float>();
    const int64_t c = g->channels, row = g->in_w * c;
    ParallelFor(ctx->intra_op_pool(), g->batch * g->out_h, g->out_w * c * 8, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t b = r / g->out_h;
        const Interpolation& y = ys[static_cast<size_t>(r % g->out_h)];
        const T* top = in + (b * g->in_h + y.lower) * row;
        const T* bottom = in + (b * g->in_h + y.upper) * row;
        float* dst = o + r * g->out_w * c;
        for (int64_t x = 0; x < g->out_w; ++x) {
          const Interpolation& w = xs[static_cast<size_t>(x)];
          for (int64_t k = 0; k < c; ++k) {
            const float tl = static_cast<float>(top[w.lower * c + k]), tr = static_cast<float>(top[w.upper * c + k]);
            const float bl = static_cast<float>(bottom[w.lower * c + k]);
            const float br = static_cast<float>(bottom[w.upper * c + k]);
            const float t = tl + (tr - tl) * w.lerp;
            const float bo = bl + (br - bl) * w.lerp;
            dst[x * c + k] = t + (bo - t) * y.lerp;
          }
        }
      }
    });
  }
};

template <typename T>
class ResizeNearestNeighborOp : public ResizeBase {
 public:
  using ResizeBase::ResizeBase;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto g = ResizeOutput(ctx, attrs_, "ResizeNearestNeighbor", &out);
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
class ResizeBilinearGradOp : public ResizeBase {
 public:
  using ResizeBase::ResizeBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grads = ctx->input(0);
    const Tensor& original = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckImages(grads, "grads", "ResizeBilinearGrad"));
    TW_OP_REQUIRES_OK(ctx, CheckImages(original, "original_image", "ResizeBilinearGrad"));
    TW_OP_REQUIRES(ctx, grads.dim(0) == original.dim(0) && grads.dim(3) == original.dim(3),
                   errors::InvalidArgument("ResizeBilinearGrad: grads of shape ", grads.shape().ToString(),
                                           " and original_image of shape ", original.shape().ToString(),
                                           " must agree in batch and channels"));
    TW_OP_REQUIRES(ctx, grads.NumElements() == 0 || (original.dim(1) > 0 && original.dim(2) > 0),
                   errors::InvalidArgument("ResizeBilinearGrad: original_image must be of non-zero size, got shape ",
                                           original.shape().ToString()));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, original.shape(), &out));
    T* o = out->data<T>();
    std::fill_n(o, out->NumElements(), T(0));
    if (grads.NumElements() == 0) return;
    const int64_t batch = grads.dim(0), rh = grads.dim(1), rw = grads.dim(2), c = grads.dim(3);
    const int64_t oh = original.dim(1), ow = original.dim(2);
    const std::vector<Interpolation> ys =
        Interpolations(rh, oh, ResizeScale(oh, rh, attrs_.align_corners), attrs_.half_pixel_centers);
    const std::vector<Interpolation> xs =
        Interpolations(rw, ow, ResizeScale(ow, rw, attrs_.align_corners), attrs_.half_pixel_centers);
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
class ResizeNearestNeighborGradOp : public ResizeBase {
 public:
  using ResizeBase::ResizeBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grads = ctx->input(0);
    TW_OP_REQUIRES_OK(ctx, CheckImages(grads, "grads", "ResizeNearestNeighborGrad"));
    auto hw = SizeArg(ctx, 1, "ResizeNearestNeighborGrad");
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
    const float h_scale = ResizeScale(oh, rh, attrs_.align_corners);
    const float w_scale = ResizeScale(ow, rw, attrs_.align_corners);
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
