// Device copies of strided boxes, and fills, for the CUDA kernels that move
// elements without arithmetic: shape_cuda.cu (Slice, SliceGrad, ConcatV2,
// BroadcastTo), layout_cuda.cu (Transpose, Tile, Pad); the fill also serves
// array_cuda.cu (Fill, ZerosLike, OnesLike) and reduction_cuda.cu (the
// identity of an empty reduction). Elements are moved as
// unsigned integers of their size (1, 2, 4 or 8 bytes), so one kernel serves
// every dtype of a size. Internal to kernels/; included by *_cuda.cu files
// only. Stateless; every function is safe to call from any thread.
#ifndef TOWERFLOW_KERNELS_INTERNAL_STRIDED_COPY_CUDA_H_
#define TOWERFLOW_KERNELS_INTERNAL_STRIDED_COPY_CUDA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "towerflow/core/status.h"

namespace tw {

class GpuDevice;

namespace strided_copy {

// The most axes a box keeps after Coalesce: each axis left has size >= 2 and
// a box holds fewer than 2^63 elements, so 62 would do.
inline constexpr int kMaxBoxRank = 64;

// Drops the size-1 axes of a box and merges each axis into the one kept before
// it when every stride list is contiguous across the pair. `size` and each
// list in `strides` have one entry per axis.
void Coalesce(std::vector<int64_t>& size, const std::vector<std::vector<int64_t>*>& strides);

// Copies the box `size` (row-major) from `src` to `dst`, each already offset
// to the box's first element, with the given element strides per axis, on the
// compute stream. A box left contiguous after Coalesce is one device-to-device
// copy. `elem_bytes` is 1, 2, 4 or 8 (else Internal). Nothing happens for an
// empty box; a rank-0 box copies one element.
Status LaunchStridedCopy(const GpuDevice& gpu, size_t elem_bytes, const void* src, void* dst,
                         std::vector<int64_t> size, std::vector<int64_t> src_stride,
                         std::vector<int64_t> dst_stride);

// dst[0, n) = the `elem_bytes`-byte element at `value` (a host pointer, read
// before returning), on the compute stream; a value of zero bytes is a memset.
// `elem_bytes` is 1, 2, 4 or 8 (else Internal). Nothing happens when n == 0.
Status LaunchFill(const GpuDevice& gpu, size_t elem_bytes, void* dst, int64_t n, const void* value);

// dst[0, n) = value, for an element type of 1, 2, 4 or 8 bytes.
template <typename T>
Status LaunchFill(const GpuDevice& gpu, T* dst, int64_t n, T value) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "no fill of this size");
  return LaunchFill(gpu, sizeof(T), dst, n, &value);
}

}  // namespace strided_copy
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_INTERNAL_STRIDED_COPY_CUDA_H_
