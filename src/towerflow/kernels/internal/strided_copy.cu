// strided_copy_cuda.h's launches.
//
// CUDA kernels:
//   StridedCopyKernel<E>  one thread per element of a box, grid-stride: copies
//                         src[box index . src strides] to dst[box index . dst
//                         strides]. E is the unsigned integer of the element's
//                         size.
//   FillKernel<E>         one thread per element, grid-stride.
#include <cuda_runtime.h>

#include <cstring>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/internal/strided_copy_cuda.h"

namespace tw {
namespace strided_copy {
namespace {

// Kernel parameters (under the 4 KiB launch limit).
struct CopyBox {
  int rank = 0;
  int64_t size[kMaxBoxRank] = {};
  int64_t src_stride[kMaxBoxRank] = {};
  int64_t dst_stride[kMaxBoxRank] = {};
};

template <typename E>
__global__ void StridedCopyKernel(const E* __restrict__ src, E* __restrict__ dst, int64_t n,
                                  const __grid_constant__ CopyBox box) {
  for (int64_t i = cuda_util::GridThreadIndex(); i < n; i += cuda_util::GridThreadCount()) {
    int64_t rest = i, s = 0, d = 0;
    for (int k = box.rank - 1; k >= 0; --k) {
      const int64_t idx = rest % box.size[k];
      rest /= box.size[k];
      s += idx * box.src_stride[k];
      d += idx * box.dst_stride[k];
    }
    dst[d] = src[s];
  }
}

template <typename E>
__global__ void FillKernel(E* __restrict__ dst, int64_t n, E value) {
  for (int64_t i = cuda_util::GridThreadIndex(); i < n; i += cuda_util::GridThreadCount()) dst[i] = value;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

template <typename E>
Status LaunchCopy(const GpuDevice& gpu, const void* src, void* dst, int64_t n, const CopyBox& box) {
  return cuda_util::LaunchGridStride(gpu, n, StridedCopyKernel<E>, static_cast<const E*>(src),
                                     static_cast<E*>(dst), n, box);
}

template <typename E>
Status LaunchFillOf(const GpuDevice& gpu, void* dst, int64_t n, const void* value) {
  E v;
  std::memcpy(&v, value, sizeof(E));
  return cuda_util::LaunchGridStride(gpu, n, FillKernel<E>, static_cast<E*>(dst), n, v);
}

}  // namespace

void Coalesce(std::vector<int64_t>& size, const std::vector<std::vector<int64_t>*>& strides) {
  std::vector<int64_t> merged;
  std::vector<std::vector<int64_t>> merged_strides(strides.size());
  for (size_t k = 0; k < size.size(); ++k) {
    if (size[k] == 1) continue;
    bool contiguous = !merged.empty();
    for (size_t s = 0; contiguous && s < strides.size(); ++s) {
      contiguous = merged_strides[s].back() == (*strides[s])[k] * size[k];
    }
    if (contiguous) merged.back() *= size[k];
    if (!contiguous) merged.push_back(size[k]);
    for (size_t s = 0; s < strides.size(); ++s) {
      if (contiguous) merged_strides[s].back() = (*strides[s])[k];
      if (!contiguous) merged_strides[s].push_back((*strides[s])[k]);
    }
  }
  size = std::move(merged);
  for (size_t s = 0; s < strides.size(); ++s) *strides[s] = std::move(merged_strides[s]);
}

Status LaunchStridedCopy(const GpuDevice& gpu, size_t elem_bytes, const void* src, void* dst,
                         std::vector<int64_t> size, std::vector<int64_t> src_stride,
                         std::vector<int64_t> dst_stride) {
  const int64_t n = Product(size);  // fits: the box lies inside a tensor
  if (n == 0) return Status::OK();
  Coalesce(size, {&src_stride, &dst_stride});
  const int rank = static_cast<int>(size.size());
  if (rank == 0 || (rank == 1 && src_stride[0] == 1 && dst_stride[0] == 1)) {
    return gpu.CopyOnDevice(src, dst, static_cast<size_t>(n) * elem_bytes);
  }
  if (rank > kMaxBoxRank) return errors::Internal("a copy box of rank ", rank, " after merging axes");
  CopyBox box;
  box.rank = rank;
  for (int k = 0; k < rank; ++k) {
    box.size[k] = size[static_cast<size_t>(k)];
    box.src_stride[k] = src_stride[static_cast<size_t>(k)];
    box.dst_stride[k] = dst_stride[static_cast<size_t>(k)];
  }
  switch (elem_bytes) {
    case 1: return LaunchCopy<uint8_t>(gpu, src, dst, n, box);
    case 2: return LaunchCopy<uint16_t>(gpu, src, dst, n, box);
    case 4: return LaunchCopy<uint32_t>(gpu, src, dst, n, box);
    case 8: return LaunchCopy<uint64_t>(gpu, src, dst, n, box);
    default: return errors::Internal("no strided copy for ", elem_bytes, "-byte elements");
  }
}

Status LaunchFill(const GpuDevice& gpu, size_t elem_bytes, void* dst, int64_t n, const void* value) {
  if (n == 0) return Status::OK();
  const unsigned char* bytes = static_cast<const unsigned char*>(value);
  bool zero = true;
  for (size_t b = 0; b < elem_bytes; ++b) zero = zero && bytes[b] == 0;
  if (zero && elem_bytes <= 8) {
    return CudaStatus(cudaMemsetAsync(dst, 0, static_cast<size_t>(n) * elem_bytes, gpu.stream()),
                      "cudaMemsetAsync", __FILE__, __LINE__);
  }
  switch (elem_bytes) {
    case 1: return LaunchFillOf<uint8_t>(gpu, dst, n, value);
    case 2: return LaunchFillOf<uint16_t>(gpu, dst, n, value);
    case 4: return LaunchFillOf<uint32_t>(gpu, dst, n, value);
    case 8: return LaunchFillOf<uint64_t>(gpu, dst, n, value);
    default: return errors::Internal("no fill for ", elem_bytes, "-byte elements");
  }
}

}  // namespace strided_copy
}  // namespace tw
