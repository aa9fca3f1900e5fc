// The argument checks and copy plans of Transpose, Tile and Pad / PadV2, on
// every device: layout_kernels.cc (CPU) and layout_cuda.cu (GPU) call the
// same functions, so both accept the same arguments and fail with one code
// and one message. Shape arguments (perm, multiples, paddings,
// constant_values) are host-memory inputs on every device. Internal to
// kernels/; host code only. Stateless; thread-safe.
#ifndef TOWERFLOW_KERNELS_LAYOUT_ARGS_H_
#define TOWERFLOW_KERNELS_LAYOUT_ARGS_H_

#include <cstdint>
#include <vector>

#include "towerflow/device/op_kernel.h"

namespace tw {
namespace layout {

// The int32 or int64 vector in input i, or InvalidArgument naming `what`.
StatusOr<std::vector<int64_t>> IntList(OpKernelContext* ctx, int i, const char* what);

// OK when `perm` is a permutation of [0, n), else InvalidArgument
// "<what>: <perm> is not a permutation of [0, n)".
Status CheckPermutation(const char* what, const std::vector<int64_t>& perm, int64_t n);

// A dense output made of source elements: output element at index (row-major
// over `dims`) i_0..i_r-1 reads source element sum_k i_k * src_strides[k].
// The box starts at source element src_offset (strides may be negative).
struct CopyPlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> src_strides;
  int64_t src_offset = 0;
};

// Transpose of x (input 0) by perm (input 1; negative axes count from the
// end, as TF's). When perm is the identity, output 0 is set to x and *out is
// nullptr; else output 0 is allocated in *out. InvalidArgument when perm is
// not an int vector of x's rank or not a permutation; else the allocation's.
StatusOr<CopyPlan> TransposeOutput(OpKernelContext* ctx, Tensor** out);

// ReverseV2 of x (input 0) along the axes of input 1 (int32 or int64 vector;
// negative axes count from the end): x's dims, its strides negated along the
// reversed axes and the offset of the element that comes first. When no axis
// of size above 1 is reversed, output 0 is set to x and *out is nullptr; else
// output 0 is allocated in *out. InvalidArgument (TF's texts) for an axis out
// of [-rank, rank) or named twice; else the allocation's error.
StatusOr<CopyPlan> ReverseOutput(OpKernelContext* ctx, Tensor** out);

// Tile's multiples (input 1) for x (input 0), output 0 allocated in *out.
// InvalidArgument when the multiples are not an int vector of x's rank, one
// is negative, or the tiled shape overflows; else the allocation's error.
StatusOr<std::vector<int64_t>> TileOutput(OpKernelContext* ctx, Tensor** out);

// Pad / PadV2 of x (input 0) by paddings (input 1, [rank, 2]): the padding
// before each axis, output 0 allocated in *out (not filled). With PadV2's
// constant_values (input 2), InvalidArgument unless it is a scalar; the
// caller reads its value. InvalidArgument for paddings of the wrong shape or
// dtype, negative or too large; else TensorShape::Make's or the allocation's.
StatusOr<std::vector<int64_t>> PadOutput(OpKernelContext* ctx, Tensor** out);

}  // namespace layout
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_LAYOUT_ARGS_H_
