// Helpers shared by the CUDA kernel files (kernels/*_cuda.cu): grid-stride
// loop indices and the host launch of a grid-stride kernel, float/double
// overloads of the math functions (so that a kernel templated on T calls expf
// for float and exp for double, never a double function on a float), and a
// block-wide reduction. Internal to kernels/; included only by *_cuda.cu
// files. Stateless; every function is safe to call from any thread.
#ifndef TOWERFLOW_KERNELS_INTERNAL_CUDA_DEVICE_UTIL_CUH_
#define TOWERFLOW_KERNELS_INTERNAL_CUDA_DEVICE_UTIL_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "towerflow/device/cuda/gpu_kernel_util.h"

namespace tw {
namespace cuda_util {

// The first element of this thread in a grid-stride loop, and the stride; in
// int64 so that loops over more than 2^31 elements do not overflow.
__device__ __forceinline__ int64_t GridThreadIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridThreadCount() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The body of a grid-stride kernel's host launcher: queues kernel(args...) on
// the device's compute stream with LaunchShapeFor(n, gpu, threads) and returns
// the launch's error as a Status (OK when it queued). `n` is the count of
// elements the kernel's loop covers.
template <typename... Params, typename... Args>
Status LaunchGridStride(const GpuDevice& gpu, int64_t n, int threads, void (*kernel)(Params...),
                        Args... args) {
  const LaunchShape s = LaunchShapeFor(n, gpu, threads);
  kernel<<<s.blocks, s.threads, 0, gpu.stream()>>>(args...);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}
// The same with LaunchShapeFor's default threads per block.
template <typename... Params, typename... Args>
Status LaunchGridStride(const GpuDevice& gpu, int64_t n, void (*kernel)(Params...), Args... args) {
  return LaunchGridStride(gpu, n, LaunchShape{}.threads, kernel, args...);
}

// Per-row kernels (one block per row, grid-stride over the rows): threads per
// row, the row rounded up to a warp, at most 256 (longer rows loop); blocks,
// at most 32 per multiprocessor.
inline int RowThreads(int64_t c) { return static_cast<int>(std::clamp<int64_t>((c + 31) / 32 * 32, 32, 256)); }
inline int RowBlocks(const GpuDevice& gpu, int64_t rows) {
  return static_cast<int>(std::min<int64_t>(rows, int64_t{std::max(1, gpu.sm_count())} * 32));
}

__device__ __forceinline__ float Exp(float x) { return expf(x); }
__device__ __forceinline__ double Exp(double x) { return exp(x); }
__device__ __forceinline__ float Log(float x) { return logf(x); }
__device__ __forceinline__ double Log(double x) { return log(x); }
// a * b rounded on its own: never contracted with a following add into a
// fused multiply-add (nvcc contracts by default; the CPU twins build with
// -ffp-contract=off), for kernels whose results must equal their twin's.
__device__ __forceinline__ float MulRn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double MulRn(double a, double b) { return __dmul_rn(a, b); }

__device__ __forceinline__ float Log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double Log1p(double x) { return log1p(x); }
__device__ __forceinline__ float Sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double Sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float Tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double Tanh(double x) { return tanh(x); }

struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
// std::max's rule (a < b ? b : a), as the CPU twins' std::max_element uses.
struct MaxOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

// The reduction of every thread's `v` with `op` over the block, returned to
// every thread. `identity` is op's neutral element (0 for a sum, -inf for a
// max); `scratch` is shared memory of 32 elements. REQUIRES: blockDim.x is a
// multiple of 32 and at most 1024, blockDim.y == blockDim.z == 1, and every
// thread of the block calls it (it synchronises the block).
template <typename T, typename Op>
__device__ T BlockReduce(T v, Op op, T identity, T* scratch) {
  constexpr unsigned kFullMask = 0xffffffffu;
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_down_sync(kFullMask, v, offset));
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>(blockDim.x) >> 5;
    v = lane < warps ? scratch[lane] : identity;
    for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_down_sync(kFullMask, v, offset));
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  const T result = scratch[0];
  __syncthreads();  // scratch may be reused by the caller's next reduction
  return result;
}

}  // namespace cuda_util
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_INTERNAL_CUDA_DEVICE_UTIL_CUH_
