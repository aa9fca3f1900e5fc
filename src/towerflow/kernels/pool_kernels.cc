// CPU kernels of max pooling (NHWC): MaxPool, MaxPoolGrad, MaxPoolGradGrad,
// and MaxPoolGrad fused with the ReluGrad that alone reads it (runtime/fusion.h).
// Registered from RegisterConvKernels (conv_kernels.cc).
//
// Windows, padding and the argument checks are window_params.h's (TF's
// windows; shared with the CUDA twins, pool_cuda.cu); padded positions never
// win a max. The gradients route through each window's first maximum in scan
// order (kh, then kw), as TF's CPU kernel does, recomputed from orig_input;
// windows that tile the input (stride == window) take a scatter-free path
// (TiledMaxPoolGradImage). Every loop runs over channels innermost (contiguous
// in NHWC), the hot ones on the CPU's widest vectors (internal/cpu_clones.h),
// and the batch is split over the intra-op pool.
#include <algorithm>
#include <functional>
#include <limits>
#include <memory>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/nn_args.h"
#include "towerflow/kernels/internal/cpu_clones.h"
#include "towerflow/kernels/internal/column_sums.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/window_params.h"

namespace tw {
namespace {

using window::PoolAttrs;
using window::PoolGeometry;

// Reads ksize, strides and padding (window_params.h); shared by the three kernels.
class PoolKernelBase : public OpKernel {
 public:
  explicit PoolKernelBase(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, window::ReadPoolAttrs(*c, &attrs_));
  }

 protected:
  // Runs fn(image_begin, image_end) over the batch on the intra-op pool.
  static void ForImages(OpKernelContext* ctx, const PoolGeometry& g, const std::function<void(int64_t, int64_t)>& fn) {
    ParallelFor(ctx->intra_op_pool(), g.n, g.oh * g.ow * g.kh * g.kw * g.c + 1, fn);
  }

  PoolAttrs attrs_;
};

template <typename T>
using ImageIndex = window::PoolImageIndex<T>;

// The input rows (or columns) [begin, end) of output row oy's (column ox's)
// windows, clipped to the input: padded positions never win a max.
struct Span {
  int64_t begin, end;
};
inline Span WindowRows(const PoolGeometry& g, int64_t oy) {
  return {std::max<int64_t>(oy * g.sh - g.pad_top, 0), std::min(oy * g.sh - g.pad_top + g.kh, g.h)};
}
inline Span WindowCols(const PoolGeometry& g, int64_t ox) {
  return {std::max<int64_t>(ox * g.sw - g.pad_left, 0), std::min(ox * g.sw - g.pad_left + g.kw, g.w)};
}

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
      const auto [y0, y1] = WindowRows(g, oy);
      const auto [x0, x1] = WindowCols(g, ox);
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

// How a pooling gradient masks its result: not at all (MaxPoolGrad), by the
// window's maximum itself (fused with the ReluGrad of the ReLU it pools), or
// by separate ReLU features (fused with another ReluGrad).
enum class ReluMask { kNone, kByMaximum, kByFeatures };

// Windows that tile the input (stride == window, as a CNN's 2x2 / 2 pooling):
// each input element lies in at most one window, so one pass over each window
// finds the first maximum per channel and writes every element of the window
// once: the gradient at the maximum, zero elsewhere. No zero fill, no scatter;
// every loop runs over channels and vectorises. The window's size is bounded
// so that ranks within it are exact in float (below 2^24).
inline bool WindowsTile(const PoolGeometry& g) {
  return g.kh == g.sh && g.kw == g.sw && g.kh * g.kw < (int64_t{1} << 24);
}

// One image's MaxPoolGrad over tiling windows (WindowsTile(g)). `best` and
// `arg` are scratch of c entries: per channel, the window's maximum so far and
// its rank in the window's scan order (kh, then kw), held as a T so that the
// compare-and-select loops vectorise in one element width (exact: WindowsTile
// bounds the window's size). `features` is read for kByFeatures only.
template <typename T, ReluMask kMask>
TW_CPU_CLONES void TiledMaxPoolGradImage(const PoolGeometry& g, const T* __restrict img,
                                         const T* __restrict features, const T* __restrict dyi, T* __restrict dxi,
                                         T* __restrict best, T* __restrict arg) {
  const int64_t c = g.c;
  // Rows or columns beyond the last window (VALID pooling that does not
  // divide the input) belong to no window: their gradient is zero.
  if ((g.oh * g.sh - g.pad_top < g.h) || (g.ow * g.sw - g.pad_left < g.w)) std::fill_n(dxi, g.h * g.w * c, T(0));
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const auto [y0, y1] = WindowRows(g, oy);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const auto [x0, x1] = WindowCols(g, ox);
      const T* __restrict first = img + (y0 * g.w + x0) * c;
      for (int64_t ch = 0; ch < c; ++ch) {
        best[ch] = first[ch];
        arg[ch] = T(0);
      }
      T j = 0;
      for (int64_t y = y0; y < y1; ++y) {
        for (int64_t x = x0; x < x1; ++x, j += T(1)) {
          if (j == T(0)) continue;
          const T* __restrict px = img + (y * g.w + x) * c;
          for (int64_t ch = 0; ch < c; ++ch) {  // strictly greater: the first maximum wins
            const bool more = px[ch] > best[ch];
            best[ch] = more ? px[ch] : best[ch];
            arg[ch] = more ? j : arg[ch];
          }
        }
      }
      const T* __restrict d = dyi + (oy * g.ow + ox) * c;
      j = 0;
      for (int64_t y = y0; y < y1; ++y) {
        for (int64_t x = x0; x < x1; ++x, j += T(1)) {
          const int64_t at = (y * g.w + x) * c;
          T* __restrict o = dxi + at;
          if constexpr (kMask == ReluMask::kNone) {
            for (int64_t ch = 0; ch < c; ++ch) o[ch] = arg[ch] == j ? d[ch] : T(0);
          } else if constexpr (kMask == ReluMask::kByMaximum) {
            for (int64_t ch = 0; ch < c; ++ch) o[ch] = ((arg[ch] == j) & (best[ch] > T(0))) ? d[ch] : T(0);
          } else {
            const T* __restrict f = features + at;
            for (int64_t ch = 0; ch < c; ++ch) o[ch] = ((arg[ch] == j) & (f[ch] > T(0))) ? d[ch] : T(0);
          }
        }
      }
    }
  }
}

// One image's max pooling: out (oh x ow x c) from img (h x w x c).
template <typename T>
TW_CPU_CLONES void MaxPoolImage(const PoolGeometry& g, const T* __restrict img, T* __restrict out) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const auto [y0, y1] = WindowRows(g, oy);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const auto [x0, x1] = WindowCols(g, ox);
      T* __restrict o = out + (oy * g.ow + ox) * g.c;
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

template <typename T>
class MaxPoolOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto geo = window::MakePoolGeometry(node().op(), attrs_, input.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    const T* x = input.data<T>();
    T* y = out->data<T>();
    ForImages(ctx, g, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) MaxPoolImage(g, x + n * g.h * g.w * g.c, y + n * g.oh * g.ow * g.c);
    });
  }
};

// d input: grad[o] added at the first maximum of window o. Fused with the
// ReluGrad that alone reads it (runtime/fusion.h; MaxPoolGradReluGradOp),
// input 3 holds ReLU's features and each image's gradient keeps only the
// elements whose feature is positive, applied while the image is in cache.
template <typename T>
class MaxPoolGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto geo = window::CheckPoolGradInputs(ctx, attrs_, /*grad_of_grad=*/false);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    const T* features = nullptr;
    if (relu_grad_) {
      const Tensor& f = ctx->input(3);
      TW_OP_REQUIRES_OK(ctx, CheckReluGrad(input.shape(), f.shape()));  // the gradients have the input's shape
      features = f.data<T>();
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    const T* x = input.data<T>();
    const T* dy = ctx->input(2).data<T>();
    T* dx = out->data<T>();
    const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.c;
    TW_OP_REQUIRES_OK(ctx, window::CheckPoolIndexable<T>(ctx, g));
    const ReluMask mask = features == nullptr ? ReluMask::kNone
                          : features == x   ? ReluMask::kByMaximum
                                            : ReluMask::kByFeatures;
    ForImages(ctx, g, [&](int64_t b, int64_t e) {
      std::vector<T> best(static_cast<size_t>(g.c));
      std::vector<ImageIndex<T>> idx(static_cast<size_t>(g.c));
      std::vector<T> rank(static_cast<size_t>(g.c));
      for (int64_t n = b; n < e; ++n) {
        T* dxi = dx + n * in_image;
        const T* dyi = dy + n * out_image;
        if (WindowsTile(g)) {
          const T* xi = x + n * in_image;
          const T* fi = features == nullptr ? nullptr : features + n * in_image;
          switch (mask) {
            case ReluMask::kNone:
              TiledMaxPoolGradImage<T, ReluMask::kNone>(g, xi, fi, dyi, dxi, best.data(), rank.data());
              break;
            case ReluMask::kByMaximum:
              TiledMaxPoolGradImage<T, ReluMask::kByMaximum>(g, xi, fi, dyi, dxi, best.data(), rank.data());
              break;
            case ReluMask::kByFeatures:
              TiledMaxPoolGradImage<T, ReluMask::kByFeatures>(g, xi, fi, dyi, dxi, best.data(), rank.data());
              break;
          }
          continue;
        }
        std::fill_n(dxi, in_image, T(0));
        if (features == x) {
          // ReLU's features are the pooled input (a CNN's ReLU -> MaxPool):
          // only maxima receive gradient, and a maximum's feature is the
          // window's best value, so the select happens in the scatter.
          ForEachArgMax(g, x + n * in_image, best.data(), idx.data(), [&](int64_t pos, const ImageIndex<T>* arg) {
            for (int64_t ch = 0; ch < g.c; ++ch) dxi[arg[ch]] += best[ch] > T(0) ? dyi[pos * g.c + ch] : T(0);
          });
          continue;
        }
        ForEachArgMax(g, x + n * in_image, best.data(), idx.data(), [&](int64_t pos, const ImageIndex<T>* arg) {
          for (int64_t ch = 0; ch < g.c; ++ch) dxi[arg[ch]] += dyi[pos * g.c + ch];
        });
        if (features != nullptr) {  // ReluGrad's select, as nn_kernels.cc's
          const T* __restrict fi = features + n * in_image;
          for (int64_t i = 0; i < in_image; ++i) dxi[i] = fi[i] > T(0) ? dxi[i] : T(0);
        }
      }
    });
  }

 protected:
  MaxPoolGradOp(OpKernelConstruction* c, bool relu_grad) : PoolKernelBase(c), relu_grad_(relu_grad) {}

 private:
  const bool relu_grad_ = false;
};

// MaxPoolGrad fused with the ReluGrad that alone reads its output: inputs
// (orig_input, orig_output, grad, features), ReluGrad's output. Where the
// features are the pooled ReLU's own output (a CNN's Relu -> MaxPool, or its
// BiasAddRelu -> MaxPool through the fusion below), the select costs a pass
// over an image already in cache instead of ReluGrad's pass over the batch.
template <typename T>
class MaxPoolGradReluGradOp : public MaxPoolGradOp<T> {
 public:
  MaxPoolGradReluGradOp(OpKernelConstruction* c, const Node&) : MaxPoolGradOp<T>(c, true) {}
};

template <typename T>
std::unique_ptr<OpKernel> MakeMaxPoolGradReluGrad(OpKernelConstruction* c, const Node& consumer) {
  return std::make_unique<MaxPoolGradReluGradOp<T>>(c, consumer);
}

// MaxPoolGrad fused with the BiasAddReluGrad that alone reads its output (a
// CNN's conv layer, BiasAddRelu -> MaxPool): the mask as MaxPoolGradReluGrad
// applies it, then the bias gradient summed over the masked result. Inputs as
// MaxPoolGradReluGrad's (the features are BiasAddReluGrad's `outputs`);
// outputs BiasAddReluGrad's (backprops, bias_backprops), the bits of the two
// kernels run apart.
template <typename T>
class MaxPoolGradBiasAddReluGradOp : public MaxPoolGradOp<T> {
 public:
  MaxPoolGradBiasAddReluGradOp(OpKernelConstruction* c, const Node&) : MaxPoolGradOp<T>(c, true) {}
  void Compute(OpKernelContext* ctx) override {
    MaxPoolGradOp<T>::Compute(ctx);
    if (!ctx->status().ok()) return;
    const Tensor& dz = ctx->output(0).value;
    TW_OP_REQUIRES_OK(ctx, CheckBiasAddGrad(dz));
    internal::SumColumns<T>(ctx, dz.data<T>(), nullptr, nullptr, dz, 1);
  }
};

template <typename T>
std::unique_ptr<OpKernel> MakeMaxPoolGradBiasAddReluGrad(OpKernelConstruction* c, const Node& consumer) {
  return std::make_unique<MaxPoolGradBiasAddReluGradOp<T>>(c, consumer);
}

// d grad of MaxPoolGrad: each window's output reads the incoming gradient at
// the window's first maximum (input 2 has orig_input's shape).
template <typename T>
class MaxPoolGradGradOp : public PoolKernelBase {
 public:
  using PoolKernelBase::PoolKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto geo = window::CheckPoolGradInputs(ctx, attrs_, /*grad_of_grad=*/true);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const PoolGeometry& g = *geo;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    const T* x = input.data<T>();
    const T* gin = ctx->input(2).data<T>();
    T* y = out->data<T>();
    const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.c;
    TW_OP_REQUIRES_OK(ctx, window::CheckPoolIndexable<T>(ctx, g));
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
  r.RegisterFusion(FusionDef{"MaxPoolGrad", "ReluGrad", 0, kDeviceCpu, {kFloat32}, MakeMaxPoolGradReluGrad<float>});
  r.RegisterFusion(FusionDef{"MaxPoolGrad", "ReluGrad", 0, kDeviceCpu, {kFloat64}, MakeMaxPoolGradReluGrad<double>});
  r.RegisterFusion(FusionDef{"MaxPoolGrad", "BiasAddReluGrad", 0, kDeviceCpu, {kFloat32},
                             MakeMaxPoolGradBiasAddReluGrad<float>});
  r.RegisterFusion(FusionDef{"MaxPoolGrad", "BiasAddReluGrad", 0, kDeviceCpu, {kFloat64},
                             MakeMaxPoolGradBiasAddReluGrad<double>});
  r.RegisterTyped<MaxPoolGradGradOp, float, double>("MaxPoolGradGrad", kDeviceCpu);
}

}  // namespace tw
