// Helpers shared by the shape kernels (shape_kernels.cc, slice_kernels.cc):
// reading int32 shape/index inputs and walking strided boxes. Internal to
// kernels/; stateless, thread-safe.
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
