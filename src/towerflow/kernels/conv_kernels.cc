// CPU kernels of 2-D convolution (NHWC input, HWIO filter): Conv2D,
// Conv2DBackpropInput, Conv2DBackpropFilter, as im2col + OpenBLAS GEMM.
//
// im2col lays the input patch under each output position out as one row of
// K = KH*KW*C values, in the filter's (kh, kw, c) order, so the filter read as
// a [K, O] row-major matrix multiplies it directly and the product rows are the
// NHWC output rows. The batch is processed in chunks of images whose patch
// matrix stays within kColBudgetBytes (the whole batch at once would be tens of
// megabytes for the tutorial CNN's second layer): the im2col/col2im of a chunk
// runs over its images in parallel on the intra-op pool, and its GEMM is one
// call that OpenBLAS threads itself. 1x1 stride-1 convolutions skip im2col.
// MaxPool is in pool_kernels.cc and registered from here.
#include <cblas.h>

#include <algorithm>
#include <climits>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"

namespace tw {

void RegisterPoolKernels(KernelRegistry& registry);  // pool_kernels.cc

namespace {

constexpr int64_t kColBudgetBytes = 8 << 20;

// C[m,n] = alpha * op(A) op(B) + beta * C, row-major.
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb),
              beta, c, static_cast<int>(ldc));
}
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// Sizes of one convolution. Output size and padding split are TF's: SAME pads
// max(0, (out-1)*stride + k - in) in total, the smaller half before.
struct ConvGeometry {
  int64_t n, h, w, c;  // input
  int64_t kh, kw, o;   // filter
  int64_t sh, sw;
  int64_t oh, ow, pad_top, pad_left;
  int64_t k() const { return kh * kw * c; }
  int64_t rows() const { return oh * ow; }  // output positions per image
  TensorShape input_shape() const { return TensorShape{n, h, w, c}; }
  TensorShape filter_shape() const { return TensorShape{kh, kw, c, o}; }
  TensorShape output_shape() const { return TensorShape{n, oh, ow, o}; }
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && n * h * w * std::max(c, o) < INT_MAX;
  }
};

StatusOr<int64_t> Windowed(int64_t in, int64_t k, int64_t stride, bool same, int64_t* pad_before) {
  if (same) {
    const int64_t out = (in + stride - 1) / stride;
    *pad_before = std::max<int64_t>(0, (out - 1) * stride + k - in) / 2;
    return out;
  }
  *pad_before = 0;
  if (in < k) return errors::InvalidArgument("window of ", k, " is larger than the input's ", in);
  return (in - k + stride) / stride;
}

StatusOr<ConvGeometry> MakeGeometry(const char* op, const TensorShape& input, const TensorShape& filter,
                                    const std::vector<int64_t>& strides, bool same) {
  if (input.rank() != 4 || filter.rank() != 4 || input.dim(3) != filter.dim(2)) {
    return errors::InvalidArgument(op, ": input must be [N,H,W,C] and filter [KH,KW,C,O] with one C, got input ",
                                   input.ToString(), " and filter ", filter.ToString());
  }
  ConvGeometry g{input.dim(0), input.dim(1), input.dim(2), input.dim(3), filter.dim(0), filter.dim(1),
                 filter.dim(3), strides[1], strides[2], 0, 0, 0, 0};
  auto oh = Windowed(g.h, g.kh, g.sh, same, &g.pad_top);
  auto ow = Windowed(g.w, g.kw, g.sw, same, &g.pad_left);
  if (!oh.ok() || !ow.ok()) {
    return errors::InvalidArgument(op, ": a VALID window of filter ", filter.ToString(), " does not fit input ",
                                   input.ToString());
  }
  g.oh = *oh;
  g.ow = *ow;
  return g;
}

// The patches of one image: col is [oh*ow, K].
template <typename T>
void Im2Col(const ConvGeometry& g, const T* __restrict img, T* __restrict col) {
  const int64_t kwc = g.kw * g.c;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      T* row = col + (oy * g.ow + ox) * g.k();
      const int64_t iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
      const bool x_inside = ix0 >= 0 && ix0 + g.kw <= g.w;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = iy0 + ky;
        T* dst = row + ky * kwc;
        if (iy < 0 || iy >= g.h) {
          std::fill_n(dst, kwc, T(0));
        } else if (x_inside) {  // the kw pixels of this patch row are contiguous in NHWC
          std::copy_n(img + (iy * g.w + ix0) * g.c, kwc, dst);
        } else {
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t ix = ix0 + kx;
            if (ix < 0 || ix >= g.w) {
              std::fill_n(dst + kx * g.c, g.c, T(0));
            } else {
              std::copy_n(img + (iy * g.w + ix) * g.c, g.c, dst + kx * g.c);
            }
          }
        }
      }
    }
  }
}

// The adjoint of Im2Col: adds each patch value back into its pixel of img
// (zeroed first).
template <typename T>
void Col2Im(const ConvGeometry& g, const T* __restrict col, T* __restrict img) {
  std::fill_n(img, g.h * g.w * g.c, T(0));
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const T* row = col + (oy * g.ow + ox) * g.k();
      const int64_t iy0 = oy * g.sh - g.pad_top, ix0 = ox * g.sw - g.pad_left;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = iy0 + ky;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t ix = ix0 + kx;
          if (ix < 0 || ix >= g.w) continue;
          const T* src = row + (ky * g.kw + kx) * g.c;
          T* dst = img + (iy * g.w + ix) * g.c;
          for (int64_t ch = 0; ch < g.c; ++ch) dst[ch] += src[ch];
        }
      }
    }
  }
}

// Images per chunk so that a chunk's patch matrix fits kColBudgetBytes (at
// least one image).
template <typename T>
int64_t ChunkImages(const ConvGeometry& g) {
  const int64_t per_image = std::max<int64_t>(1, g.rows() * g.k() * static_cast<int64_t>(sizeof(T)));
  return std::clamp<int64_t>(kColBudgetBytes / per_image, 1, std::max<int64_t>(g.n, 1));
}

// Reads strides and padding; shared by the three kernels.
class ConvKernelBase : public OpKernel {
 public:
  explicit ConvKernelBase(OpKernelConstruction* c) : OpKernel(c) {
    std::string padding;
    TW_OP_REQUIRES_OK(c, c->GetAttr("strides", &strides_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("padding", &padding));
    TW_OP_REQUIRES(c, strides_.size() == 4 && strides_[0] == 1 && strides_[3] == 1 && strides_[1] >= 1 && strides_[2] >= 1,
                   errors::InvalidArgument("attr 'strides' must be [1, h, w, 1] with h, w >= 1, got ",
                                           PartialShape(strides_).ToString()));
    TW_OP_REQUIRES(c, padding == "SAME" || padding == "VALID",
                   errors::InvalidArgument("attr 'padding' must be \"SAME\" or \"VALID\", got \"", padding, "\""));
    same_ = padding == "SAME";
  }

 protected:
  // The shape in int32 vector input i (input_sizes, filter_sizes).
  static StatusOr<TensorShape> SizesInput(OpKernelContext* ctx, int i) {
    const Tensor& t = ctx->input(i);
    if (t.dtype() != kInt32 || t.rank() != 1 || t.NumElements() != 4) {
      return errors::InvalidArgument(ctx->node().op(), ": input ", i, " must be 4 int32 sizes, got ",
                                     t.DebugString());
    }
    const int32_t* p = t.data<int32_t>();
    return TensorShape::Make({p[0], p[1], p[2], p[3]});
  }
  // Checks that out_backprop (input 2) has the forward output's shape.
  static Status CheckBackprop(OpKernelContext* ctx, const ConvGeometry& g) {
    const TensorShape& dy = ctx->input(2).shape();
    if (dy != g.output_shape()) {
      return errors::InvalidArgument(ctx->node().op(), ": out_backprop has shape ", dy.ToString(),
                                     " but the convolution of input ", g.input_shape().ToString(), " by filter ",
                                     g.filter_shape().ToString(), " gives ", g.output_shape().ToString());
    }
    return Status::OK();
  }

  std::vector<int64_t> strides_;
  bool same_ = true;
};

template <typename T>
class Conv2DOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    auto geo = MakeGeometry("Conv2D", input.shape(), filter.shape(), strides_, same_);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const ConvGeometry& g = *geo;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    T* y = out->data<T>();
    if (out->NumElements() == 0) return;
    if (g.k() == 0) {
      std::fill_n(y, out->NumElements(), T(0));
      return;
    }
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    if (g.is_pointwise()) {
      Gemm(false, false, g.n * g.h * g.w, g.o, g.c, x, g.c, w, g.o, T(0), y, g.o);
      return;
    }
    const int64_t chunk = ChunkImages<T>(g);
    Tensor col;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeOf<T>(), TensorShape{chunk * g.rows(), g.k()}, &col));
    T* cp = col.data<T>();
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t cnt = std::min(chunk, g.n - n0);
      ParallelFor(ctx->intra_op_pool(), cnt, g.rows() * g.k(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) Im2Col(g, x + (n0 + i) * g.h * g.w * g.c, cp + i * g.rows() * g.k());
      });
      Gemm(false, false, cnt * g.rows(), g.o, g.k(), cp, g.k(), w, g.o, T(0), y + n0 * g.rows() * g.o, g.o);
    }
  }
};

template <typename T>
class Conv2DBackpropInputOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    auto sizes = SizesInput(ctx, 0);
    TW_OP_REQUIRES_OK(ctx, sizes.status());
    const Tensor& filter = ctx->input(1);
    auto geo = MakeGeometry("Conv2DBackpropInput", *sizes, filter.shape(), strides_, same_);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const ConvGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, CheckBackprop(ctx, g));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *sizes, &out));
    T* dx = out->data<T>();
    const T* dy = ctx->input(2).data<T>();
    const T* w = filter.data<T>();
    if (out->NumElements() == 0) return;
    if (g.o == 0 || g.rows() == 0) {
      std::fill_n(dx, out->NumElements(), T(0));
      return;
    }
    // d col = dy W^T ([rows, O] x [O, K]); col2im scatters it back to pixels.
    if (g.is_pointwise()) {
      Gemm(false, true, g.n * g.h * g.w, g.c, g.o, dy, g.o, w, g.o, T(0), dx, g.c);
      return;
    }
    const int64_t chunk = ChunkImages<T>(g);
    Tensor col;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeOf<T>(), TensorShape{chunk * g.rows(), g.k()}, &col));
    T* cp = col.data<T>();
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t cnt = std::min(chunk, g.n - n0);
      Gemm(false, true, cnt * g.rows(), g.k(), g.o, dy + n0 * g.rows() * g.o, g.o, w, g.o, T(0), cp, g.k());
      ParallelFor(ctx->intra_op_pool(), cnt, g.rows() * g.k(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) Col2Im(g, cp + i * g.rows() * g.k(), dx + (n0 + i) * g.h * g.w * g.c);
      });
    }
  }
};

template <typename T>
class Conv2DBackpropFilterOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto sizes = SizesInput(ctx, 1);
    TW_OP_REQUIRES_OK(ctx, sizes.status());
    auto geo = MakeGeometry("Conv2DBackpropFilter", input.shape(), *sizes, strides_, same_);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const ConvGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, CheckBackprop(ctx, g));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *sizes, &out));
    T* dw = out->data<T>();
    const T* x = input.data<T>();
    const T* dy = ctx->input(2).data<T>();
    if (out->NumElements() == 0) return;
    if (g.n * g.rows() == 0) {
      std::fill_n(dw, out->NumElements(), T(0));
      return;
    }
    // dW = sum over chunks of col^T dy ([K, rows] x [rows, O]).
    if (g.is_pointwise()) {
      Gemm(true, false, g.c, g.o, g.n * g.h * g.w, x, g.c, dy, g.o, T(0), dw, g.o);
      return;
    }
    const int64_t chunk = ChunkImages<T>(g);
    Tensor col;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeOf<T>(), TensorShape{chunk * g.rows(), g.k()}, &col));
    T* cp = col.data<T>();
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t cnt = std::min(chunk, g.n - n0);
      ParallelFor(ctx->intra_op_pool(), cnt, g.rows() * g.k(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) Im2Col(g, x + (n0 + i) * g.h * g.w * g.c, cp + i * g.rows() * g.k());
      });
      Gemm(true, false, g.k(), g.o, cnt * g.rows(), cp, g.k(), dy + n0 * g.rows() * g.o, g.o,
           n0 == 0 ? T(0) : T(1), dw, g.o);
    }
  }
};

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  r.RegisterTyped<Conv2DOp, float, double>("Conv2D", kDeviceCpu);
  r.RegisterTyped<Conv2DBackpropInputOp, float, double>("Conv2DBackpropInput", kDeviceCpu);
  r.RegisterTyped<Conv2DBackpropFilterOp, float, double>("Conv2DBackpropFilter", kDeviceCpu);
  RegisterPoolKernels(r);
}

}  // namespace tw
