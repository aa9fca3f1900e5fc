// The window parameters of the 2-D convolution and pooling kernels (NHWC),
// on every device: the attrs (strides, ksize, padding), the pooling geometry,
// and the argument checks that the kernels make at run time. conv_kernels.cc,
// pool_kernels.cc (CPU) and conv_cuda.cu, pool_cuda.cu (GPU) all call these,
// so both devices accept the same arguments and fail with one code and one
// message (avg_pool_kernels.cc too). The convolution geometry itself is conv::MakeGeometry (im2col.h).
//
// Output sizes and padding are TF's: SAME gives ceil(in / stride) outputs and
// pads max(0, (out - 1) * stride + k - in) in total, the smaller half before;
// VALID pads nothing and needs k <= in.
//
// Internal to kernels/; host code only (no CUDA types; PoolGeometry is plain
// data that CUDA kernels take by value). Stateless; thread-safe.
#ifndef TOWERFLOW_KERNELS_WINDOW_PARAMS_H_
#define TOWERFLOW_KERNELS_WINDOW_PARAMS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "towerflow/device/op_kernel.h"
#include "towerflow/kernels/im2col.h"

namespace tw::window {

// ---- Convolutions: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter ----

struct ConvAttrs {
  std::vector<int64_t> strides;  // [1, sh, sw, 1]
  bool same = true;              // padding == "SAME"
};

// Reads the attrs 'strides' and 'padding' of node `c`. Returns GetAttr's error
// for a missing attr; InvalidArgument "attr 'strides' must be [1, h, w, 1] with
// h, w >= 1, got ..." or "attr 'padding' must be \"SAME\" or \"VALID\", got
// ..."; OK otherwise.
Status ReadConvAttrs(const OpKernelConstruction& c, ConvAttrs* attrs);

// The shape held by the int32 vector input `i` (input_sizes, filter_sizes).
// InvalidArgument "<op>: input <i> must be 4 int32 sizes, got ..." unless it
// holds four int32 values; TensorShape::Make's error for a negative size.
StatusOr<TensorShape> ConvSizesInput(OpKernelContext* ctx, int i);

// InvalidArgument "<op>: out_backprop has shape ... but the convolution of
// input ... by filter ... gives ..." unless out_backprop (input 2) has the
// forward output's shape under `g`; OK otherwise.
Status CheckConvBackprop(OpKernelContext* ctx, const conv::ConvGeometry& g);

// ---- Max pooling: MaxPool, MaxPoolGrad, MaxPoolGradGrad ----

struct PoolAttrs {
  std::vector<int64_t> ksize;    // [1, kh, kw, 1]
  std::vector<int64_t> strides;  // [1, sh, sw, 1]
  bool same = true;              // padding == "SAME"
};

// Reads the attrs 'ksize', 'strides' and 'padding' of node `c`. Returns
// GetAttr's error for a missing attr; InvalidArgument "attrs 'ksize' and
// 'strides' must be [1, h, w, 1] with h, w >= 1, got ..." or "attr 'padding'
// must be ..."; OK otherwise.
Status ReadPoolAttrs(const OpKernelConstruction& c, PoolAttrs* attrs);

// Sizes of one pooling of an [n, h, w, c] input by [kh, kw] windows.
struct PoolGeometry {
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw;
  int64_t oh, ow, pad_top, pad_left;
  TensorShape input_shape() const { return TensorShape{n, h, w, c}; }
  TensorShape output_shape() const { return TensorShape{n, oh, ow, c}; }
};

// The geometry of pooling `in` with `attrs`, for op `op`. InvalidArgument
// "<op>: input must be [N,H,W,C], got ..." for another rank, "<op>: a VALID
// window of <kh>x<kw> does not fit input of shape ..." when it does not fit.
StatusOr<PoolGeometry> MakePoolGeometry(const std::string& op, const PoolAttrs& attrs, const TensorShape& in);

// The geometry of a pooling gradient kernel's input 0 (orig_input), and the
// checks of its inputs 1 (orig_output: the pooling's output shape) and 2 (the
// gradient: the output's shape for MaxPoolGrad, the input's when
// `grad_of_grad`, for MaxPoolGradGrad). MakePoolGeometry's errors, or
// InvalidArgument "<op>: input <i> has shape ... but pooling input ...
// requires ..." for an input of another shape.
StatusOr<PoolGeometry> CheckPoolGradInputs(OpKernelContext* ctx, const PoolAttrs& attrs, bool grad_of_grad);

// AvgPoolGrad's geometry: the pooling of the shape in input 0
// (orig_input_shape, 4 int32 sizes) checked against the gradient (input 1,
// the pooling's output shape). ConvSizesInput's and MakePoolGeometry's
// errors, or InvalidArgument "AvgPoolGrad: grad has shape ... but pooling
// input ... gives ...".
StatusOr<PoolGeometry> AvgPoolGradGeometry(OpKernelContext* ctx, const PoolAttrs& attrs);

// Element indices within one image as the CPU kernels store them: as wide as
// T, so that their arg-max update vectorises (lanes of one width).
template <typename T>
using PoolImageIndex = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

// The image-size limit of the pooling gradients of T (the CPU kernels' index
// width), kept by every device so that all accept the same inputs.
// InvalidArgument "<op>: images of <n> elements are too large (indices are
// <bits>-bit)" for images of PoolImageIndex<T>'s maximum or more elements.
template <typename T>
Status CheckPoolIndexable(OpKernelContext* ctx, const PoolGeometry& g) {
  const int64_t image_elements = g.h * g.w * g.c;
  if (image_elements >= std::numeric_limits<PoolImageIndex<T>>::max()) {
    return errors::InvalidArgument(ctx->node().op(), ": images of ", image_elements,
                                   " elements are too large (indices are ", 8 * sizeof(PoolImageIndex<T>),
                                   "-bit)");
  }
  return Status::OK();
}

}  // namespace tw::window

#endif  // TOWERFLOW_KERNELS_WINDOW_PARAMS_H_
