// CPU kernels of max pooling (NHWC): MaxPool, MaxPoolGrad, MaxPoolGradGrad.
// Registered from RegisterConvKernels (conv_kernels.cc).
//
// Windows and padding are TF's (see conv_kernels.cc); padded positions never
// win a max. The gradients route through each window's first maximum in scan
// order (kh, then kw), as TF's CPU kernel does, recomputed from orig_input.
// Every loop runs over channels innermost (contiguous in NHWC) and the batch is
// split over the intra-op pool.
#include <algorithm>
#include <functional>
#include <limits>
#include <type_traits>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

struct PoolGeometry {
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw;
  int64_t oh, ow, pad_top, pad_left;
  TensorShape output_shape() const { return TensorShape{n, oh, ow, c}; }
};

int64_t OutputSize(int64_t in, int64_t k, int64_t stride, bool same, int64_t* pad_before) {
  if (same) {
    const int64_t out = (in + stride - 1) / stride;
    *pad_before = std::max<int64_t>(0, (out - 1) * stride + k - in) / 2;
    return out;
  }
  *pad_before = 0;
  return in < k ? -1 : (in - k + stride) / stride;
}

// Reads ksize, strides and padding; shared by the three kernels.
class PoolKernelBase : public OpKernel {
 public:
  explicit PoolKernelBase(OpKernelConstruction* c) : OpKernel(c) {
    std::string padding;
    TW_OP_REQUIRES_OK(c, c->GetAttr("ksize", &ksize_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("strides", &strides_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("padding", &padding));
    for (const auto* v : {&ksize_, &strides_}) {
      TW_OP_REQUIRES(c, v->size() == 4 && (*v)[0] == 1 && (*v)[3] == 1 && (*v)[1] >= 1 && (*v)[2] >= 1,
                     errors::InvalidArgument("attrs 'ksize' and 'strides' must be [1, h, w, 1] with h, w >= 1, got ",
                                             PartialShape(*v).ToString()));
    }
    TW_OP_REQUIRES(c, padding == "SAME" || padding == "VALID",
                   errors::InvalidArgument("attr 'padding' must be \"SAME\" or \"VALID\", got \"", padding, "\""));
    same_ = padding == "SAME";
  }

 protected:
  StatusOr<PoolGeometry> Geometry(const TensorShape& in) const {
    if (in.rank() != 4) {
      return errors::InvalidArgument(node().op(), ": input must be [N,H,W,C], got ", in.ToString());
    }
    PoolGeometry g{in.dim(0), in.dim(1), in.dim(2), in.dim(3), ksize_[1], ksize_[2], strides_[1], strides_[2],
                   0, 0, 0, 0};
    g.oh = OutputSize(g.h, g.kh, g.sh, same_, &g.pad_top);
    g.ow = OutputSize(g.w, g.kw, g.sw, same_, &g.pad_left);
    if (g.oh < 0 || g.ow < 0) {
      return errors::InvalidArgument(node().op(), ": a VALID window of ", g.kh, "x", g.kw,
                                     " does not fit input of shape ", in.ToString());
    }
    return g;
  }
  // Checks input i against `want`, naming both.
  static Status CheckShape(OpKernelContext* ctx, int i, const TensorShape& want) {
    const TensorShape& got = ctx->input(i).shape();
    if (got != want) {
      return errors::InvalidArgument(ctx->node().op(), ": input ", i, " has shape ", got.ToString(),
                                     " but pooling input ", ctx->input(0).shape().ToString(), " requires ",
                                     want.ToString());
    }
    return Status::OK();
  }
  // Runs fn(image_begin, image_end) over the batch on the intra-op pool.
  static void ForImages(OpKernelContext* ctx, const PoolGeometry& g, const std::function<void(int64_t, int64_t)>& fn) {
    ParallelFor(ctx->intra_op_pool(), g.n, g.oh * g.ow * g.kh * g.kw * g.c + 1, fn);
  }

  std::vector<int64_t> ksize_, strides_;
  bool same_ = true;
};

// Element indices within one image, as wide as T so that the arg-max update
// vectorises (lanes of one width).
template <typename T>
using ImageIndex = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

// For each output position of one image (NHWC `img`), finds per channel the
// element index (within the image) of the window's first maximum, and calls
// fn(output_position, idx). `best` and `idx` are scratch of c entries.
// REQUIRES: the image's element count fits ImageIndex<T>.
template <typename T, typename Fn>
void ForEachArgMax(const PoolGeometry& g, const T* __restrict img, T* __restrict best,
                   ImageIndex<T>* __restrict idx, Fn&& fn) {
  using I = ImageIndex<T>;
  const I c = static_cast<I>(g.c);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const int64_t y0 = std::max<int64_t>(oy * g.sh - g.pad_top, 0);
      const int64_t y1 = std::min(oy * g.sh - g.pad_top + g.kh, g.h);
      const int64_t x0 = std::max<int64_t>(ox * g.sw - g.pad_left, 0);
      const int64_t x1 = std::min(ox * g.sw - g.pad_left + g.kw, g.w);
      bool first = true;
      for (int64_t y = y0; y < y1; ++y) {
        for (int64_t x = x0; x < x1; ++x) {
          const I base = static_cast<I>((y * g.w + x) * g.c);
          const T* px = img + base;
          if (first) {
            for (I ch = 0; ch < c; ++ch) {
              best[ch] = px[ch];
              idx[ch] = base + ch;
            }
            first = false;
            continue;
          }
          // Branch-free (a branch mispredicts half the time on real data): the
          // comparison becomes an all-ones/zero mask that selects the index, a
          // form the compiler vectorises.
          for (I ch = 0; ch < c; ++ch) {
            const T v = px[ch], b = best[ch];
            const I mask = -static_cast<I>(v > b);
            best[ch] = v > b ? v : b;
            idx[ch] ^= (idx[ch] ^ (base + ch)) & mask;
          }
        }
      }
      fn(oy * g.ow + ox, idx);
    }
  }
}

template <typename T>
Status CheckIndexable(OpKernelContext* ctx, int64_t image_elements) {
  if (image_elements >= std::numeric_limits<ImageIndex<T>>::max()) {
    return errors::InvalidArgument(ctx->node().op(), ": images of ", image_elements,
                                   " elements are too large (indices are ", 8 * sizeof(ImageIndex<T>), "-bit)");
  }
  return Status::OK();
}

template <typename T>
class MaxPoolOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto geo = Geometry(input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    const T* x = input.data<T>();
    T* y = out->data<T>();
    ForImages(ctx, g, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) {
        const T* __restrict img = x + n * g.h * g.w * g.c;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t y0 = std::max<int64_t>(oy * g.sh - g.pad_top, 0);
          const int64_t y1 = std::min(oy * g.sh - g.pad_top + g.kh, g.h);
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t x0 = std::max<int64_t>(ox * g.sw - g.pad_left, 0);
            const int64_t x1 = std::min(ox * g.sw - g.pad_left + g.kw, g.w);
            T* __restrict o = y + ((n * g.oh + oy) * g.ow + ox) * g.c;
            std::fill_n(o, g.c, std::numeric_limits<T>::lowest());
            for (int64_t yy = y0; yy < y1; ++yy) {
              for (int64_t xx = x0; xx < x1; ++xx) {
                const T* __restrict px = img + (yy * g.w + xx) * g.c;
                for (int64_t ch = 0; ch < g.c; ++ch) o[ch] = px[ch] > o[ch] ? px[ch] : o[ch];
              }
            }
          }
        }
      }
    });
  }
};

// d input: grad[o] added at the first maximum of window o.
template <typename T>
class MaxPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto geo = Geometry(input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 1, g.output_shape()));
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 2, g.output_shape()));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    const T* x = input.data<T>();
    const T* dy = ctx->input(2).data<T>();
    T* dx = out->data<T>();
    const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.c;
    TW_OP_REQUIRES_OK(ctx, CheckIndexable<T>(ctx, in_image));
    ForImages(ctx, g, [&](int64_t b, int64_t e) {
      std::vector<T> best(static_cast<size_t>(g.c));
      std::vector<ImageIndex<T>> idx(static_cast<size_t>(g.c));
      for (int64_t n = b; n < e; ++n) {
        T* dxi = dx + n * in_image;
        const T* dyi = dy + n * out_image;
        std::fill_n(dxi, in_image, T(0));
        ForEachArgMax(g, x + n * in_image, best.data(), idx.data(), [&](int64_t pos, const ImageIndex<T>* arg) {
          for (int64_t ch = 0; ch < g.c; ++ch) dxi[arg[ch]] += dyi[pos * g.c + ch];
        });
      }
    });
  }
};

// d grad of MaxPoolGrad: each window's output reads the incoming gradient at
// the window's first maximum (input 2 has orig_input's shape).
template <typename T>
class MaxPoolGradGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto geo = Geometry(input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 1, g.output_shape()));
    TW_OP_REQUIRES_OK(ctx, CheckShape(ctx, 2, input.shape()));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    const T* x = input.data<T>();
    const T* gin = ctx->input(2).data<T>();
    T* y = out->data<T>();
    const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.c;
    TW_OP_REQUIRES_OK(ctx, CheckIndexable<T>(ctx, in_image));
    ForImages(ctx, g, [&](int64_t b, int64_t e) {
      std::vector<T> best(static_cast<size_t>(g.c));
      std::vector<ImageIndex<T>> idx(static_cast<size_t>(g.c));
      for (int64_t n = b; n < e; ++n) {
        const T* gi = gin + n * in_image;
        T* yi = y + n * out_image;
        ForEachArgMax(g, x + n * in_image, best.data(), idx.data(), [&](int64_t pos, const ImageIndex<T>* arg) {
          for (int64_t ch = 0; ch < g.c; ++ch) yi[pos * g.c + ch] = gi[arg[ch]];
        });
      }
    });
  }
};

}  // namespace

void RegisterPoolKernels(KernelRegistry& r) {
  r.RegisterTyped<MaxPoolOp, float, double>("MaxPool", kDeviceCpu);
  r.RegisterTyped<MaxPoolGradOp, float, double>("MaxPoolGrad", kDeviceCpu);
  r.RegisterTyped<MaxPoolGradGradOp, float, double>("MaxPoolGradGrad", kDeviceCpu);
}

}  // namespace tw
