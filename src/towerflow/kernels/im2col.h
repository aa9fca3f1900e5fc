// im2col and col2im for NHWC convolutions with HWIO filters, and the geometry
// they share (TF's output sizes and padding split). Internal to kernels/;
// stateless, thread-safe.
//
// Im2Col lays the input patch under each output position out as one row of
// K = KH*KW*C values, in the filter's (kh, kw, c) order, so the filter read as a
// [K, O] row-major matrix multiplies it directly and the product's rows are the
// NHWC output rows. Col2Im is its adjoint (adds patch values back into pixels).
#ifndef TOWERFLOW_KERNELS_IM2COL_H_
#define TOWERFLOW_KERNELS_IM2COL_H_

#include <algorithm>
#include <vector>

#include "towerflow/core/tensor_shape.h"

namespace tw::conv {

// Patch rows shorter than this (in elements) are copied element by element.
inline constexpr int64_t kSmallRun = 16;

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
  // A 1x1 stride-1 convolution: the input rows are the patch rows.
  bool is_pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1; }
};

inline StatusOr<int64_t> Windowed(int64_t in, int64_t k, int64_t stride, bool same, int64_t* pad_before) {
  if (same) {
    const int64_t out = (in + stride - 1) / stride;
    *pad_before = std::max<int64_t>(0, (out - 1) * stride + k - in) / 2;
    return out;
  }
  *pad_before = 0;
  if (in < k) return errors::InvalidArgument("window of ", k, " is larger than the input's ", in);
  return (in - k + stride) / stride;
}

inline StatusOr<ConvGeometry> MakeGeometry(const char* op, const TensorShape& input, const TensorShape& filter,
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

// Im2Col for patch rows of few elements (the first layer's single channel):
// output columns run innermost, as strided stores, because a memcpy call per
// 5-float run costs more than the copy itself.
template <typename T>
void Im2ColNarrow(const ConvGeometry& g, const T* __restrict img, T* __restrict col) {
  const int64_t k = g.k();
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    T* rows = col + oy * g.ow * k;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t iy = oy * g.sh - g.pad_top + ky;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        // Output columns [lo, hi) read inside the image; the rest read padding.
        const int64_t off = kx - g.pad_left;  // ix = ox * sw + off
        const int64_t lo = std::clamp<int64_t>(off >= 0 ? 0 : (-off + g.sw - 1) / g.sw, 0, g.ow);
        const int64_t hi = std::clamp<int64_t>(g.w - off <= 0 ? 0 : (g.w - off + g.sw - 1) / g.sw, lo, g.ow);
        const bool row_inside = iy >= 0 && iy < g.h;
        for (int64_t ch = 0; ch < g.c; ++ch) {
          T* dst = rows + (ky * g.kw + kx) * g.c + ch;
          if (!row_inside) {
            for (int64_t ox = 0; ox < g.ow; ++ox) dst[ox * k] = T(0);
            continue;
          }
          const T* src = img + (iy * g.w + off) * g.c + ch;
          for (int64_t ox = 0; ox < lo; ++ox) dst[ox * k] = T(0);
          for (int64_t ox = lo; ox < hi; ++ox) dst[ox * k] = src[ox * g.sw * g.c];
          for (int64_t ox = hi; ox < g.ow; ++ox) dst[ox * k] = T(0);
        }
      }
    }
  }
}

// The patches of one image: col is [oh*ow, K].
template <typename T>
void Im2Col(const ConvGeometry& g, const T* __restrict img, T* __restrict col) {
  const int64_t kwc = g.kw * g.c;
  if (kwc < kSmallRun) {
    Im2ColNarrow(g, img, col);
    return;
  }
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

}  // namespace tw::conv

#endif  // TOWERFLOW_KERNELS_IM2COL_H_
