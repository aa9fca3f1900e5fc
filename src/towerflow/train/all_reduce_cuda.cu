// CUDA kernels of the NCCL all-reducer (nccl_all_reduce_cuda.cc), for every
// numeric dtype. CPU reference: ReduceRange in all_reduce.cc (the same
// formulas: sum static_cast<T>(a + b), std::max's and std::min's comparisons,
// the mean's static_cast<T>(sum / T(n))).
//
// - CombineKernel<T, kOp>: a grid-stride loop over the elements:
//   acc[i] = op(acc[i], in[i]). Reduces the logical GPUs of one physical GPU,
//   whose buffers the first of them reads directly.
// - DivideKernel<T>: a grid-stride loop over the elements: acc[i] /= n (the
//   mean when NCCL's ncclAvg is not used).
// - CopySegmentsKernel<T>: blockIdx.y picks one of up to kMaxSegments
//   (source, destination, count) segments passed by value, and a grid-stride
//   loop in x copies its elements: packs small tensors into a bucket and
//   unpacks them (one launch for up to kMaxSegments tensors).
#include <algorithm>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/train/all_reduce.h"

namespace tw::train {
namespace {

constexpr int kMaxSegments = 64;

// Kernel parameters (1.5 KB, under the 4 KB limit).
struct SegmentTable {
  const void* src[kMaxSegments];
  void* dst[kMaxSegments];
  int64_t count[kMaxSegments];
};

__device__ __forceinline__ int64_t ThreadIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t ThreadCount() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <typename T, Reduction kOp>
__global__ void CombineKernel(T* __restrict__ acc, const T* __restrict__ in, int64_t n) {
  for (int64_t i = ThreadIndex(); i < n; i += ThreadCount()) {
    const T a = acc[i], b = in[i];
    if constexpr (kOp == Reduction::kMax) {
      acc[i] = a < b ? b : a;
    } else if constexpr (kOp == Reduction::kMin) {
      acc[i] = b < a ? b : a;
    } else {
      acc[i] = static_cast<T>(a + b);
    }
  }
}

template <typename T>
__global__ void DivideKernel(T* __restrict__ acc, int64_t n, T divisor) {
  for (int64_t i = ThreadIndex(); i < n; i += ThreadCount()) acc[i] = static_cast<T>(acc[i] / divisor);
}

template <typename T>
__global__ void CopySegmentsKernel(SegmentTable table) {
  const int s = blockIdx.y;
  const T* __restrict__ src = static_cast<const T*>(table.src[s]);
  T* __restrict__ dst = static_cast<T*>(table.dst[s]);
  for (int64_t i = ThreadIndex(); i < table.count[s]; i += ThreadCount()) dst[i] = src[i];
}

}  // namespace

// The host launchers, declared in nccl_all_reduce_cuda.cc. Each queues its
// work on gpu's compute stream. REQUIRES: gpu's ordinal is current, n > 0.

Status LaunchAllReduceCombine(const GpuDevice& gpu, DataType dtype, void* acc, const void* in, int64_t n,
                              Reduction op) {
  const LaunchShape s = LaunchShapeFor(n, gpu);
  return DispatchNumeric(dtype, "AllReduce", [&]<typename T>() -> Status {
    T* a = static_cast<T*>(acc);
    const T* b = static_cast<const T*>(in);
    switch (op) {
      case Reduction::kMax:
        CombineKernel<T, Reduction::kMax><<<s.blocks, s.threads, 0, gpu.stream()>>>(a, b, n);
        break;
      case Reduction::kMin:
        CombineKernel<T, Reduction::kMin><<<s.blocks, s.threads, 0, gpu.stream()>>>(a, b, n);
        break;
      default:  // sum, and the sum of a mean
        CombineKernel<T, Reduction::kSum><<<s.blocks, s.threads, 0, gpu.stream()>>>(a, b, n);
    }
    TW_CUDA_LAUNCH_CHECK();
    return Status::OK();
  });
}

Status LaunchAllReduceDivide(const GpuDevice& gpu, DataType dtype, void* acc, int64_t n, int64_t divisor) {
  const LaunchShape s = LaunchShapeFor(n, gpu);
  return DispatchNumeric(dtype, "AllReduce", [&]<typename T>() -> Status {
    DivideKernel<T>
        <<<s.blocks, s.threads, 0, gpu.stream()>>>(static_cast<T*>(acc), n, static_cast<T>(divisor));
    TW_CUDA_LAUNCH_CHECK();
    return Status::OK();
  });
}

// Copies count[k] elements from src[k] to dst[k] for every k.
Status LaunchCopySegments(const GpuDevice& gpu, DataType dtype, const std::vector<const void*>& src,
                          const std::vector<void*>& dst, const std::vector<int64_t>& count) {
  return DispatchNumeric(dtype, "AllReduce", [&]<typename T>() -> Status {
    for (size_t first = 0; first < src.size(); first += kMaxSegments) {
      const int segments = static_cast<int>(std::min<size_t>(kMaxSegments, src.size() - first));
      SegmentTable table{};
      int64_t longest = 0;
      for (int k = 0; k < segments; ++k) {
        table.src[k] = src[first + k];
        table.dst[k] = dst[first + k];
        table.count[k] = count[first + k];
        longest = std::max(longest, count[first + k]);
      }
      if (longest == 0) continue;
      // The blocks LaunchShapeFor would give the longest segment, shared out
      // among the segments.
      const LaunchShape s = LaunchShapeFor(longest, gpu);
      const dim3 grid(static_cast<unsigned>(std::max(1, s.blocks / segments)),
                      static_cast<unsigned>(segments));
      CopySegmentsKernel<T><<<grid, s.threads, 0, gpu.stream()>>>(table);
      TW_CUDA_LAUNCH_CHECK();
    }
    return Status::OK();
  });
}

}  // namespace tw::train
