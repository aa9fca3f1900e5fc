// Helpers shared by the shape kernels on every device (shape_kernels.cc,
// slice_kernels.cc, and their CUDA twins array_cuda.cu, shape_cuda.cu):
// reading int32 shape/index inputs, the argument checks of Fill, Slice,
// SliceGrad, ConcatV2, BroadcastTo and SumToShape (a GPU kernel calls the same
// function as its CPU twin, so both fail with one code and one message), and
// walking strided boxes. Internal to kernels/; host code only (no CUDA types);
// stateless, thread-safe.
#ifndef TOWERFLOW_KERNELS_SHAPE_UTIL_H_
#define TOWERFLOW_KERNELS_SHAPE_UTIL_H_

#include <string>
#include <vector>

#include "towerflow/device/kernel_registry.h"

namespace tw {
namespace shape_util {

inline std::string VecStr(const std::vector<int64_t>& v) { return PartialShape(v).ToString(); }

// The int32 vector in input i (a shape, begin or size), or InvalidArgument
// naming `what`.
inline StatusOr<std::vector<int64_t>> IntVector(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.rank() != 1 || t.dtype() != kInt32) {
    return errors::InvalidArgument(what, " must be an int32 vector, got ", t.DebugString());
  }
  std::vector<int64_t> v(static_cast<size_t>(t.NumElements()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = t.data<int32_t>()[k];
  return v;
}

// Fill's shape, the int32 vector input 0 ("Fill: dims"), with output 0
// allocated in that shape in *out (not filled). InvalidArgument when the dims
// are not an int32 vector, when the value (input 1) is not a scalar ("Fill:
// value must be a scalar, ..."), or when the dims are not a valid shape; else
// the allocation's error.
Status FillOutput(OpKernelContext* ctx, Tensor** out);

// Resolves Slice's begin and size against `shape` (size -1: to the end) in
// place in `size`. InvalidArgument "Slice: begin ... and size ... are out of
// bounds for input of shape ..." when their lengths are not the rank or the
// box does not fit.
Status ResolveSlice(const TensorShape& shape, const std::vector<int64_t>& begin, std::vector<int64_t>& size);

// A box of `size` at `begin` within a tensor.
struct SliceBox {
  std::vector<int64_t> begin, size;
};

// Slice's box: begin and size (inputs 1 and 2, int32 vectors) resolved
// against input 0; and output 0 in *out, nullptr when the box is the whole
// input (then input 0 is the output: nothing left to compute), else allocated
// with the box's size. IntVector's, ResolveSlice's and the allocation's errors.
StatusOr<SliceBox> SliceOutput(OpKernelContext* ctx, Tensor** out);

// SliceGrad's box: dy (input 0) at begin (input 1) within input_shape (input
// 2); and output 0 allocated with input_shape in *out (not zeroed).
// IntVector's, TensorShape::Make's, ResolveSlice's and the allocation's errors.
StatusOr<SliceBox> SliceGradOutput(OpKernelContext* ctx, Tensor** out);

// ConcatV2's axis (in [0, rank)) and output shape, for the values in inputs
// [0, ctx->num_inputs() - 1) and the axis tensor `axis_t` (the last input, or
// its copy on the host). InvalidArgument "ConcatV2: axis must be one int32,
// ...", "ConcatV2: axis ... is out of range ...", "ConcatV2: value shapes ...
// differ outside axis ...", or when the joined axis or the output's element
// count overflows int64.
struct ConcatPlan {
  int64_t axis = 0;
  TensorShape out_shape;
};
StatusOr<ConcatPlan> PlanConcat(OpKernelContext* ctx, const Tensor& axis_t);

// Aligns `small` (right-aligned, numpy rules) to `big`: strides of `small`
// per axis of `big`, 0 along broadcast axes. InvalidArgument "<op>: shape ...
// is not broadcast-compatible with ..." when `small` does not broadcast to
// `big`.
StatusOr<std::vector<int64_t>> BroadcastStrides(const char* op, const TensorShape& small,
                                                const TensorShape& big);

// The arguments of BroadcastTo (`to_shape` true: input 0 broadcast to the
// int32 shape in input 1) and of its adjoint SumToShape (false: input 0
// summed down to that shape): the shape, and the strides of the smaller of
// the two per axis of the larger (BroadcastStrides); and output 0 in *out,
// nullptr when the shape is input 0's (then input 0 is the output: nothing
// left to compute), else allocated with the shape. IntVector's,
// TensorShape::Make's, BroadcastStrides' (naming `op`) and the allocation's
// errors.
struct BroadcastArgs {
  TensorShape shape;
  std::vector<int64_t> strides;
};
StatusOr<BroadcastArgs> BroadcastOutput(OpKernelContext* ctx, const char* op, bool to_shape, Tensor** out);

// Calls fn(src_offset, dst_offset) for each innermost run of a copy of the box
// `size` (row-major), with element strides of source and destination per axis.
// REQUIRES: size is non-empty (rank >= 1).
template <typename Fn>
void ForEachRun(const std::vector<int64_t>& size, const std::vector<int64_t>& src_stride,
                const std::vector<int64_t>& dst_stride, Fn&& fn) {
  const int rank = static_cast<int>(size.size());
  for (int64_t s : size) {
    if (s == 0) return;
  }
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t src = 0, dst = 0;
  for (;;) {
    fn(src, dst);
    int a = rank - 2;
    for (; a >= 0; --a) {
      const size_t k = static_cast<size_t>(a);
      if (++idx[k] < size[k]) {
        src += src_stride[k];
        dst += dst_stride[k];
        break;
      }
      src -= src_stride[k] * (size[k] - 1);
      dst -= dst_stride[k] * (size[k] - 1);
      idx[k] = 0;
    }
    if (a < 0) return;
  }
}

inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  }
  return s;
}

// Registers ConcatV2, ConcatOffset, Slice and SliceGrad (slice_kernels.cc);
// called from RegisterShapeKernels.
void RegisterSliceKernels(KernelRegistry& registry);

}  // namespace shape_util
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_SHAPE_UTIL_H_
