// GPU kernels of Sum, Mean, Max (float, double; reduction_indices in host
// memory) and ArgMax (float, double; dimension in host memory; int64 or int32
// indices). CPU reference: reduction_kernels.cc, whose checks, messages and
// results (empty reductions, ties) these follow. The int32 variants are
// registered elsewhere (host-memory kernels).
//
// A reduction is planned on the host with the CPU twin's own MakeReducePlan
// (reduction_plan.h; ArgMax with MakeArgMaxPlan): size-1 dimensions dropped,
// neighbouring dimensions that are both reduced or both kept merged, leaving
// alternating kept (K) and reduced (R) dimensions. Each reduced group is then
// folded as a view [outer, len, inner], the innermost group first: [R], [K,R],
// [R,K] and [K,R,K] take one fold; [R,K,R] and longer patterns one per reduced
// group, with scratch tensors in between. A fold whose outputs are too few to
// fill the GPU cuts `len` into chunks, writes [outer, chunks, inner] partial
// results and folds those again. Mean divides by the element count in the very
// last launch. CUDA kernels:
//   ReduceRowsWarpKernel   inner == 1: one warp per row (or row chunk),
//                          lane-strided loads and a shuffle tree; grid-strided.
//   ReduceRowsBlockKernel  inner == 1, rows of kBlockRowLen or more: one
//                          256-thread block per row (chunk), cub::BlockReduce.
//   ReduceColumnsKernel    inner > 1 (or len == 1): one thread per
//                          (outer, chunk, inner) output looping over its part of
//                          len; neighbouring threads read neighbouring inner
//                          elements, so loads coalesce.
//   cub::DeviceReduce      everything to one scalar; then ScaleKernel (one
//                          thread) divides for Mean.
//   an empty input: every output is the identity (Sum 0, Max -inf) or NaN
//                          (Mean: 0/0, as the CPU twin), by strided_copy_cuda.h's fill.
//   ArgMaxRowsKernel       ArgMax with inner == 1: one warp per row.
//   ArgMaxColumnsKernel    ArgMax with inner > 1: one thread per (outer, inner)
//                          output scanning the axis, exactly as the CPU twin.
// Sums accumulate in T, as the CPU twin does; their order differs from the
// CPU's (trees instead of eight running sums), so float results agree to
// rounding, not bit for bit. Max folds with the CPU's a < b ? b : a.
#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/limits>
#include <limits>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/internal/strided_copy_cuda.h"
#include "towerflow/kernels/reduction_plan.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 256;
constexpr int kBlockRowThreads = 256;
// Rows at least this long get a block each instead of a warp.
constexpr int64_t kBlockRowLen = 4096;
// Smallest chunk of a row (rows) or of a reduced column (columns) worth a unit of its own.
constexpr int64_t kRowChunk = 1024;
constexpr int64_t kColumnChunk = 32;

template <typename T>
struct SumFn {
  __host__ __device__ static T Identity() { return T(0); }
  __host__ __device__ T operator()(const T& a, const T& b) const { return a + b; }
};
template <typename T>
struct MaxFn {
  __host__ __device__ static T Identity() { return -cuda::std::numeric_limits<T>::infinity(); }
  // NaN is dropped whichever side it comes from, as the CPU twin drops it
  // (and CUB's last step folds the identity in on the left: a < b ? b : a
  // would turn max(-inf, NaN) into -inf, or keep a NaN met first).
  __host__ __device__ T operator()(const T& a, const T& b) const {
    if (a != a) return b;
    if (b != b) return a;
    return a < b ? b : a;
  }
};

// Output u of a chunked fold is (o, c) for rows, (o, c, i) for columns; chunk c
// covers [c * chunk_len, min(len, (c + 1) * chunk_len)) of the reduced axis.
template <typename T, typename R>
__global__ void ReduceRowsWarpKernel(const T* in, T* out, int64_t units, int64_t len, int64_t chunks,
                                     int64_t chunk_len, bool divide, T count) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = blockDim.x / 32;
  for (int64_t u = blockIdx.x * warps + threadIdx.x / 32; u < units; u += gridDim.x * warps) {
    const int64_t begin = (u % chunks) * chunk_len;
    const int64_t n = std::min(chunk_len, len - begin);
    const T* x = in + (u / chunks) * len + begin;
    T acc = R::Identity();
    for (int64_t j = lane; j < n; j += 32) acc = R()(acc, x[j]);
    for (int offset = 16; offset > 0; offset /= 2) acc = R()(acc, __shfl_down_sync(kFullMask, acc, offset));
    if (lane == 0) out[u] = divide ? acc / count : acc;
  }
}

template <typename T, typename R>
__global__ void ReduceRowsBlockKernel(const T* in, T* out, int64_t units, int64_t len, int64_t chunks,
                                      int64_t chunk_len, bool divide, T count) {
  using BlockReduce = cub::BlockReduce<T, kBlockRowThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const int64_t begin = (u % chunks) * chunk_len;
    const int64_t n = std::min(chunk_len, len - begin);
    const T* x = in + (u / chunks) * len + begin;
    T acc = R::Identity();
    for (int64_t j = threadIdx.x; j < n; j += kBlockRowThreads) acc = R()(acc, x[j]);
    acc = BlockReduce(temp).Reduce(acc, R());
    if (threadIdx.x == 0) out[u] = divide ? acc / count : acc;
    __syncthreads();  // `temp` is reused by the next row
  }
}

template <typename T, typename R>
__global__ void ReduceColumnsKernel(const T* in, T* out, int64_t units, int64_t len, int64_t inner,
                                    int64_t chunks, int64_t chunk_len, bool divide, T count) {
  for (int64_t u = GridThreadIndex(); u < units; u += GridThreadCount()) {
    const int64_t i = u % inner;
    const int64_t oc = u / inner;
    const int64_t begin = (oc % chunks) * chunk_len;
    const int64_t n = std::min(chunk_len, len - begin);
    const T* x = in + ((oc / chunks) * len + begin) * inner + i;
    T acc = R::Identity();
    for (int64_t j = 0; j < n; ++j) acc = R()(acc, x[j * inner]);
    out[u] = divide ? acc / count : acc;
  }
}

template <typename T>
__global__ void ScaleKernel(T* out, T count) {
  out[0] = out[0] / count;
}

// The CPU twin's result per row: x[0] when it is NaN, else the first largest
// of the non-NaN values. Lanes scan their elements in order skipping NaNs; the
// shuffle keeps the larger value, on ties the smaller index.
template <typename T, typename I>
__global__ void ArgMaxRowsKernel(const T* in, I* out, int64_t rows, int64_t len) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = blockDim.x / 32;
  for (int64_t row = blockIdx.x * warps + threadIdx.x / 32; row < rows; row += gridDim.x * warps) {
    const T* x = in + row * len;
    T best = T(0);
    int64_t at = -1;
    for (int64_t j = lane; j < len; j += 32) {
      const T v = x[j];
      if (v == v && (at < 0 || v > best)) {
        best = v;
        at = j;
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      const T other = __shfl_down_sync(kFullMask, best, offset);
      const int64_t other_at = __shfl_down_sync(kFullMask, at, offset);
      if (other_at >= 0 && (at < 0 || other > best || (other == best && other_at < at))) {
        best = other;
        at = other_at;
      }
    }
    if (lane == 0) out[row] = static_cast<I>(x[0] != x[0] || at < 0 ? 0 : at);
  }
}

template <typename T, typename I>
__global__ void ArgMaxColumnsKernel(const T* in, I* out, int64_t units, int64_t len, int64_t inner) {
  for (int64_t u = GridThreadIndex(); u < units; u += GridThreadCount()) {
    const T* x = in + (u / inner) * len * inner + u % inner;
    T best = x[0];
    int64_t at = 0;
    for (int64_t j = 1; j < len; ++j) {
      if (x[j * inner] > best) {
        best = x[j * inner];
        at = j;
      }
    }
    out[u] = static_cast<I>(at);
  }
}

// Host launchers: one per CUDA kernel, each queued on the compute stream.
// REQUIRES: every count >= 1.
template <typename T, typename R>
Status LaunchReduceRowsWarp(const GpuDevice& gpu, const T* in, T* out, int64_t units, int64_t len,
                            int64_t chunks, int64_t chunk_len, bool divide, T count) {
  return LaunchGridStride(gpu, units * 32, kThreads, ReduceRowsWarpKernel<T, R>, in, out, units, len, chunks,
                          chunk_len, divide, count);
}

template <typename T, typename R>
Status LaunchReduceRowsBlock(const GpuDevice& gpu, const T* in, T* out, int64_t units, int64_t len,
                             int64_t chunks, int64_t chunk_len, bool divide, T count) {
  const int blocks = static_cast<int>(std::min<int64_t>(units, std::max(1, gpu.sm_count()) * 32));
  ReduceRowsBlockKernel<T, R>
      <<<blocks, kBlockRowThreads, 0, gpu.stream()>>>(in, out, units, len, chunks, chunk_len, divide, count);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T, typename R>
Status LaunchReduceColumns(const GpuDevice& gpu, const T* in, T* out, int64_t units, int64_t len,
                           int64_t inner, int64_t chunks, int64_t chunk_len, bool divide, T count) {
  return LaunchGridStride(gpu, units, kThreads, ReduceColumnsKernel<T, R>, in, out, units, len, inner, chunks,
                          chunk_len, divide, count);
}

template <typename T>
Status LaunchScale(const GpuDevice& gpu, T* out, T count) {
  ScaleKernel<T><<<1, 1, 0, gpu.stream()>>>(out, count);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T, typename I>
Status LaunchArgMaxRows(const GpuDevice& gpu, const T* in, I* out, int64_t rows, int64_t len) {
  return LaunchGridStride(gpu, rows * 32, kThreads, ArgMaxRowsKernel<T, I>, in, out, rows, len);
}

template <typename T, typename I>
Status LaunchArgMaxColumns(const GpuDevice& gpu, const T* in, I* out, int64_t units, int64_t len,
                           int64_t inner) {
  return LaunchGridStride(gpu, units, kThreads, ArgMaxColumnsKernel<T, I>, in, out, units, len, inner);
}

// Everything to out[0] with CUB; its scratch space is a byte tensor from the
// device's stream-ordered pool, released (stream-ordered) on return.
template <typename T, typename R>
Status DeviceReduceAll(OpKernelContext* ctx, const GpuDevice& gpu, const T* in, T* out, int64_t n) {
  size_t bytes = 0;
  TW_CUDA_RETURN_IF_ERROR(
      cub::DeviceReduce::Reduce(nullptr, bytes, in, out, n, R(), R::Identity(), gpu.stream()));
  Tensor temp;
  TW_RETURN_IF_ERROR(
      ctx->allocate_temp(kUInt8, TensorShape{static_cast<int64_t>(std::max<size_t>(bytes, 1))}, &temp));
  TW_CUDA_RETURN_IF_ERROR(
      cub::DeviceReduce::Reduce(temp.raw_data(), bytes, in, out, n, R(), R::Identity(), gpu.stream()));
  return Status::OK();
}

// Folds the view [outer, len, inner] of `in` into `out` ([outer, inner]),
// dividing by `count` at the end when `divide`. REQUIRES: all >= 1.
template <typename T, typename R>
Status FoldView(OpKernelContext* ctx, const GpuDevice& gpu, const T* in, T* out, int64_t outer, int64_t len,
                int64_t inner, bool divide, T count) {
  const int64_t sms = std::max(1, gpu.sm_count());
  Tensor scratch;  // the partial results `in` points to after a chunked fold
  while (true) {
    if (outer * inner == 1 && len > 1) {
      TW_RETURN_IF_ERROR((DeviceReduceAll<T, R>(ctx, gpu, in, out, len)));
      return divide ? LaunchScale(gpu, out, count) : Status::OK();
    }
    const bool rows = inner == 1 && len > 1;
    const int64_t units = outer * inner;
    // Enough warps (rows) or threads (columns) to fill every SM.
    const int64_t wanted = rows ? sms * 32 : sms * 1024;
    const int64_t min_chunk = rows ? kRowChunk : kColumnChunk;
    if (units < wanted && len >= 2 * min_chunk) {
      const int64_t want_chunks = std::min((wanted + units - 1) / units, len / min_chunk);
      const int64_t chunk_len = (len + want_chunks - 1) / want_chunks;
      const int64_t chunks = (len + chunk_len - 1) / chunk_len;
      Tensor next;
      TW_RETURN_IF_ERROR(ctx->allocate_temp(DataTypeOf<T>(), TensorShape{outer * chunks * inner}, &next));
      T* partial = next.data<T>();
      if (!rows) {
        TW_RETURN_IF_ERROR((LaunchReduceColumns<T, R>(gpu, in, partial, units * chunks, len, inner, chunks,
                                                      chunk_len, false, count)));
      } else if (chunk_len >= kBlockRowLen) {
        TW_RETURN_IF_ERROR((LaunchReduceRowsBlock<T, R>(gpu, in, partial, units * chunks, len, chunks,
                                                        chunk_len, false, count)));
      } else {
        TW_RETURN_IF_ERROR((LaunchReduceRowsWarp<T, R>(gpu, in, partial, units * chunks, len, chunks,
                                                       chunk_len, false, count)));
      }
      // The old scratch goes back to the pool stream-ordered, after the
      // launch just queued has read it.
      scratch = std::move(next);
      in = partial;
      len = chunks;
      continue;
    }
    if (!rows) return LaunchReduceColumns<T, R>(gpu, in, out, units, len, inner, 1, len, divide, count);
    if (len >= kBlockRowLen)
      return LaunchReduceRowsBlock<T, R>(gpu, in, out, units, len, 1, len, divide, count);
    return LaunchReduceRowsWarp<T, R>(gpu, in, out, units, len, 1, len, divide, count);
  }
}

// Runs the plan's folds, innermost reduced group first. REQUIRES: !p.empty.
template <typename T, typename R>
Status RunReduce(OpKernelContext* ctx, const GpuDevice& gpu, ReducePlan p, const T* in, T* out, bool mean) {
  const T count = static_cast<T>(p.count);
  if (std::find(p.reduced.begin(), p.reduced.end(), 1) == p.reduced.end()) {
    // Nothing to fold (no axes, or only size-1 ones): a copy, divided by 1 for Mean.
    int64_t n = 1;
    for (int64_t d : p.dims) n *= d;
    return LaunchReduceColumns<T, R>(gpu, in, out, n, 1, 1, 1, 1, mean, count);
  }
  Tensor scratch;
  while (true) {
    const size_t j =
        static_cast<size_t>(std::find(p.reduced.rbegin(), p.reduced.rend(), 1) - p.reduced.rbegin());
    const size_t g = p.reduced.size() - 1 - j;  // the innermost reduced group
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < g; ++i) outer *= p.dims[i];
    for (size_t i = g + 1; i < p.dims.size(); ++i) inner *= p.dims[i];
    const bool last = std::count(p.reduced.begin(), p.reduced.end(), 1) == 1;
    T* dst = out;
    Tensor next;
    if (!last) {
      TW_RETURN_IF_ERROR(ctx->allocate_temp(DataTypeOf<T>(), TensorShape{outer * inner}, &next));
      dst = next.data<T>();
    }
    TW_RETURN_IF_ERROR((FoldView<T, R>(ctx, gpu, in, dst, outer, p.dims[g], inner, last && mean, count)));
    if (last) return Status::OK();
    // Drop the folded group; the kept groups on either side become neighbours.
    p.dims.erase(p.dims.begin() + static_cast<std::ptrdiff_t>(g));
    p.reduced.erase(p.reduced.begin() + static_cast<std::ptrdiff_t>(g));
    if (g > 0 && g < p.dims.size()) {
      p.dims[g - 1] *= p.dims[g];
      p.dims.erase(p.dims.begin() + static_cast<std::ptrdiff_t>(g));
      p.reduced.erase(p.reduced.begin() + static_cast<std::ptrdiff_t>(g));
    }
    scratch = std::move(next);
    in = dst;
  }
}

enum class ReduceKind { kSum, kMean, kMax };

template <typename T, ReduceKind kKind>
class ReductionGpuOp : public GpuOpKernel {
 public:
  explicit ReductionGpuOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("keep_dims", &keep_dims_));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    auto plan = MakeReducePlan(x.shape(), ctx->input(1), keep_dims_);  // input 1 is in host memory
    TW_OP_REQUIRES_OK(ctx, plan.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    T* o = out->data<T>();
    if (plan->empty) {
      T value = kKind == ReduceKind::kMax ? MaxFn<T>::Identity() : T(0);
      if (kKind == ReduceKind::kMean) value = std::numeric_limits<T>::quiet_NaN();  // 0 / 0
      TW_OP_REQUIRES_OK(ctx, strided_copy::LaunchFill<T>(gpu, o, n, value));
      return;
    }
    if constexpr (kKind == ReduceKind::kMax) {
      TW_OP_REQUIRES_OK(ctx, (RunReduce<T, MaxFn<T>>(ctx, gpu, std::move(*plan), x.data<T>(), o, false)));
    } else {
      TW_OP_REQUIRES_OK(ctx, (RunReduce<T, SumFn<T>>(ctx, gpu, std::move(*plan), x.data<T>(), o,
                                                     kKind == ReduceKind::kMean)));
    }
  }

 private:
  bool keep_dims_ = false;
};

template <typename T>
class ArgMaxGpuOp : public GpuOpKernel {
 public:
  explicit ArgMaxGpuOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("output_type", &out_type_));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    auto plan = MakeArgMaxPlan(x.shape(), ctx->input(1));  // input 1 is in host memory
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t outer = plan->outer, len = plan->len, inner = plan->inner;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &out));
    if (out->NumElements() == 0) return;
    const T* in = x.data<T>();
    auto run = [&]<typename I>(I* idx) -> Status {
      if (inner == 1) return LaunchArgMaxRows<T, I>(gpu, in, idx, outer, len);
      return LaunchArgMaxColumns<T, I>(gpu, in, idx, outer * inner, len, inner);
    };
    TW_OP_REQUIRES_OK(ctx, out_type_ == kInt32 ? run(out->data<int32_t>()) : run(out->data<int64_t>()));
  }

 private:
  DataType out_type_ = kInt64;
};

template <typename T>
using SumGpuOp = ReductionGpuOp<T, ReduceKind::kSum>;
template <typename T>
using MeanGpuOp = ReductionGpuOp<T, ReduceKind::kMean>;
template <typename T>
using MaxGpuOp = ReductionGpuOp<T, ReduceKind::kMax>;

}  // namespace

void RegisterReductionCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  // reduction_indices / dimension (input 1) are read on the host.
  RegisterGpuKernels<SumGpuOp, float, double>(target, "Sum", {1}, {});
  RegisterGpuKernels<MeanGpuOp, float, double>(target, "Mean", {1}, {});
  RegisterGpuKernels<MaxGpuOp, float, double>(target, "Max", {1}, {});
  RegisterGpuKernels<ArgMaxGpuOp, float, double>(target, "ArgMax", {1}, {});
}

}  // namespace tw
