// CUDA kernels of the nn ops, float and double (the cross-entropies are in
// xent_cuda.cu). CPU twins: nn_kernels.cc, with the same shape checks (nn_args.h).
//
// - BiasAddKernel<T, kRelu>: a grid-stride loop over value's elements adding
//   bias[i % C]; kRelu fuses the Relu (BiasAddRelu).
// - ReluKernel<T>, ReluGradKernel<T>: grid-stride loops over the elements.
// - BiasAddGradKernel<T, kRelu>: out_backprop seen as [rows, C], summed over
//   rows; kRelu (BiasAddReluGrad) masks each element by the forward's output
//   (ReluGrad) and writes it out as it sums.
//   Blocks of 32 x 8 threads: x runs over 32 consecutive channels (each row is
//   read coalesced), y over 8 interleaved rows of one chunk of rows
//   (blockIdx.y), and the 8 partial sums meet in shared memory. With several
//   chunks each writes one row of a [chunks, C] scratch tensor, which
//   BiasAddGradFinishKernel (grid-stride over channels) adds in chunk order.
//   Chosen over CUB's DeviceSegmentedReduce because the segments are strided
//   columns (it would need a transposed copy or uncoalesced strided loads), and
//   this is deterministic without a temp-storage query.
// - SoftmaxKernel<T>: one block per row (grid-stride over rows), sized to the
//   row; block reductions of the row's max and of the sum of exp(x - max).
// - L2LossPartialKernel<T> + L2LossFinishKernel<T>: a two-pass reduction in
//   double, as the CPU twin accumulates: blocks grid-stride over the elements
//   and write one partial sum each, then one block adds the partials. No
//   atomics, so a run repeats bit for bit; CUB's DeviceReduce would add a
//   temp-storage query per call for no gain at these sizes.
// - DropoutKernel<T>: a grid-stride loop over blocks of four elements, each
//   block's mask from one Philox call of the kernel instance's stream
//   (internal/dropout_stream.h), as the CPU twin draws it: same seed, same
//   masks, bit for bit.
//
#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/internal/dropout_stream.h"
#include "towerflow/kernels/internal/philox.h"
#include "towerflow/kernels/nn_args.h"

namespace tw {
namespace {

using cuda_util::BlockReduce;
using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;
using cuda_util::MaxOp;
using cuda_util::RowBlocks;
using cuda_util::RowThreads;
using cuda_util::SumOp;

// ---- BiasAdd, BiasAddRelu, Relu, ReluGrad ------------------------------------

template <typename T, bool kRelu>
__global__ void BiasAddKernel(const T* __restrict__ v, const T* __restrict__ b, T* __restrict__ o, int64_t n,
                              int64_t c) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) {
    const T s = v[i] + b[i % c];
    if constexpr (kRelu) {
      o[i] = s < T(0) ? T(0) : s;  // std::max(s, 0), as the CPU twin: NaN stays NaN
    } else {
      o[i] = s;
    }
  }
}

template <typename T, bool kRelu>
Status LaunchBiasAdd(const GpuDevice& gpu, const T* v, const T* b, T* o, int64_t n, int64_t c) {
  return LaunchGridStride(gpu, n, BiasAddKernel<T, kRelu>, v, b, o, n, c);
}

template <typename T, bool kRelu>
class GpuBiasAddOpBase : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckBiasAdd(value, bias));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, value.shape(), &out));
    const int64_t c = bias.dim(0), n = value.NumElements();
    if (c == 0 || n == 0) return;
    TW_OP_REQUIRES_OK(ctx,
                      (LaunchBiasAdd<T, kRelu>(gpu, value.data<T>(), bias.data<T>(), out->data<T>(), n, c)));
  }
};
template <typename T>
using BiasAddOp = GpuBiasAddOpBase<T, false>;
template <typename T>
using BiasAddReluOp = GpuBiasAddOpBase<T, true>;

template <typename T>
__global__ void ReluKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <typename T>
Status LaunchRelu(const GpuDevice& gpu, const T* x, T* y, int64_t n) {
  return LaunchGridStride(gpu, n, ReluKernel<T>, x, y, n);
}

template <typename T>
class GpuReluOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    if (x.NumElements() == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchRelu<T>(gpu, x.data<T>(), out->data<T>(), x.NumElements()));
  }
};

template <typename T>
__global__ void ReluGradKernel(const T* __restrict__ g, const T* __restrict__ f, T* __restrict__ o,
                               int64_t n) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) o[i] = f[i] > T(0) ? g[i] : T(0);
}

template <typename T>
Status LaunchReluGrad(const GpuDevice& gpu, const T* g, const T* f, T* o, int64_t n) {
  return LaunchGridStride(gpu, n, ReluGradKernel<T>, g, f, o, n);
}

template <typename T>
class GpuReluGradOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& g = ctx->input(0);
    const Tensor& f = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckReluGrad(g, f));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.shape(), &out));
    if (g.NumElements() == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchReluGrad<T>(gpu, g.data<T>(), f.data<T>(), out->data<T>(), g.NumElements()));
  }
};

// ---- BiasAddGrad ----------------------------------------------------------------

constexpr int kGradTileChannels = 32;  // blockDim.x: one warp across channels
constexpr int kGradTileRows = 8;       // blockDim.y: interleaved rows per block
constexpr int64_t kGradMinRowsPerChunk = 64;

// sums[chunk * c + j] = sum of g[r * c + j] over the rows r of chunk blockIdx.y.
// kRelu (BiasAddReluGrad): each element is first masked by y (ReluGrad:
// g where y > 0, else 0) and written to `masked` (which may be g: each element
// is read, then written, by one thread), and the masked values are summed.
template <typename T, bool kRelu>
__global__ void BiasAddGradKernel(const T* g, const T* __restrict__ y, T* masked, T* __restrict__ sums,
                                  int64_t rows, int64_t c, int64_t rows_per_chunk) {
  __shared__ T partial[kGradTileRows][kGradTileChannels + 1];  // +1: no bank conflicts on the column sum
  const int64_t tiles = (c + kGradTileChannels - 1) / kGradTileChannels;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t j = tile * kGradTileChannels + threadIdx.x;
    T acc = T(0);
    if (j < c) {
      for (int64_t r = r0 + threadIdx.y; r < r1; r += kGradTileRows) {
        T v;
        if constexpr (kRelu) {
          v = y[r * c + j] > T(0) ? g[r * c + j] : T(0);
          masked[r * c + j] = v;  // may be g's element, read above by this thread only
        } else {
          v = __ldg(g + r * c + j);  // read-only: g is not written here
        }
        acc += v;
      }
    }
    partial[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < c) {
      T s = partial[0][threadIdx.x];
      for (int k = 1; k < kGradTileRows; ++k) s += partial[k][threadIdx.x];
      sums[static_cast<int64_t>(blockIdx.y) * c + j] = s;
    }
    __syncthreads();  // partial is rewritten by the next tile
  }
}

template <typename T, bool kRelu>
Status LaunchBiasAddGrad(const GpuDevice& gpu, const T* g, const T* y, T* masked, T* sums, int64_t rows, int64_t c,
                         int64_t chunks, int64_t rows_per_chunk) {
  const int64_t tiles = (c + kGradTileChannels - 1) / kGradTileChannels;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, int64_t{std::max(1, gpu.sm_count())} * 32)),
                  static_cast<unsigned>(chunks));
  const dim3 block(kGradTileChannels, kGradTileRows);
  BiasAddGradKernel<T, kRelu><<<grid, block, 0, gpu.stream()>>>(g, y, masked, sums, rows, c, rows_per_chunk);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

// out[j] = sums[j] + sums[c + j] + ... over `chunks` rows, in chunk order.
template <typename T>
__global__ void BiasAddGradFinishKernel(const T* __restrict__ sums, T* __restrict__ out, int64_t chunks,
                                        int64_t c) {
  for (int64_t j = GridThreadIndex(); j < c; j += GridThreadCount()) {
    T s = sums[j];
    for (int64_t k = 1; k < chunks; ++k) s += sums[k * c + j];
    out[j] = s;
  }
}

template <typename T>
Status LaunchBiasAddGradFinish(const GpuDevice& gpu, const T* sums, T* out, int64_t chunks, int64_t c) {
  return LaunchGridStride(gpu, c, BiasAddGradFinishKernel<T>, sums, out, chunks, c);
}

// Column sums of g ([rows, C], C its last dimension) into output `output`;
// kRelu: masked by y into output 0 first (see BiasAddGradKernel).
template <typename T, bool kRelu>
void SumColumnsOnGpu(OpKernelContext* ctx, GpuDevice& gpu, const Tensor& g, const T* y, T* masked, int output) {
  const int64_t c = g.dim(g.rank() - 1);
  Tensor* out = nullptr;
  TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(output, TensorShape{c}, &out));
  const int64_t rows = c == 0 ? 0 : g.NumElements() / c;
  if (rows == 0) {  // a sum over no rows: zeros (all-zero bytes are +0.0)
    if (c > 0) TW_OP_REQUIRES_CUDA_OK(ctx, cudaMemsetAsync(out->data<T>(), 0, out->TotalBytes(), gpu.stream()));
    return;
  }
  // Enough chunks of rows to give the GPU ~8 blocks per SM, each chunk at
  // least kGradMinRowsPerChunk rows (grid.y is at most 65535).
  const int64_t tiles = (c + kGradTileChannels - 1) / kGradTileChannels;
  const int64_t wanted = std::max<int64_t>(1, int64_t{std::max(1, gpu.sm_count())} * 8 / tiles);
  int64_t chunks = std::min({wanted, (rows + kGradMinRowsPerChunk - 1) / kGradMinRowsPerChunk, int64_t{65535}});
  chunks = std::max<int64_t>(chunks, 1);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  if (chunks == 1) {
    TW_OP_REQUIRES_OK(ctx, (LaunchBiasAddGrad<T, kRelu>(gpu, g.data<T>(), y, masked, out->data<T>(), rows, c, 1,
                                                         rows_per_chunk)));
    return;
  }
  Tensor sums;
  TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeOf<T>(), TensorShape{chunks, c}, &sums));
  TW_OP_REQUIRES_OK(ctx, (LaunchBiasAddGrad<T, kRelu>(gpu, g.data<T>(), y, masked, sums.data<T>(), rows, c, chunks,
                                                       rows_per_chunk)));
  TW_OP_REQUIRES_OK(ctx, LaunchBiasAddGradFinish<T>(gpu, sums.data<T>(), out->data<T>(), chunks, c));
}

template <typename T>
class GpuBiasAddGradOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& g = ctx->input(0);
    TW_OP_REQUIRES_OK(ctx, CheckBiasAddGrad(g));
    SumColumnsOnGpu<T, false>(ctx, gpu, g, nullptr, nullptr, 0);
  }
};

// BiasAddRelu's gradient as one kernel (plus the chunks' finish): ReluGrad's
// mask applied while each column is summed, where the two ops read the
// gradient twice in two launches. The same sums as BiasAddGrad of ReluGrad on
// this GPU, bit for bit.
template <typename T>
class GpuBiasAddReluGradOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& g = ctx->input(0);
    const Tensor& y = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckBiasAddReluGrad(g, y));
    Tensor* dz = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, g.shape(), &dz));
    SumColumnsOnGpu<T, true>(ctx, gpu, g, y.data<T>(), dz->data<T>(), 1);
  }
};

// ---- Softmax: one block per row -----------------------------------------------


template <typename T>
__global__ void SoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t c) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // uniform over the block
    const T* xr = x + r * c;
    T* yr = y + r * c;
    // Subtracting the row max keeps exp from overflowing; the result is unchanged.
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = MaxOp()(m, xr[j]);
    m = BlockReduce(m, MaxOp(), -std::numeric_limits<T>::infinity(), scratch);
    T sum = T(0);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const T e = cuda_util::Exp(xr[j] - m);
      yr[j] = e;
      sum += e;
    }
    sum = BlockReduce(sum, SumOp(), T(0), scratch);
    const T inv = T(1) / sum;
    // Each thread rescales the elements it wrote itself: no barrier needed.
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) yr[j] *= inv;
  }
}

template <typename T>
Status LaunchSoftmax(const GpuDevice& gpu, const T* x, T* y, int64_t rows, int64_t c) {
  SoftmaxKernel<T><<<RowBlocks(gpu, rows), RowThreads(c), 0, gpu.stream()>>>(x, y, rows, c);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T>
class GpuSoftmaxOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    TW_OP_REQUIRES_OK(ctx, CheckSoftmax(x));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0 || x.NumElements() == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchSoftmax<T>(gpu, x.data<T>(), out->data<T>(), x.NumElements() / c, c));
  }
};

// ---- L2Loss ---------------------------------------------------------------------

constexpr int kL2Threads = 256;
constexpr int kL2MaxBlocks = 1024;

// partial[blockIdx.x] = the sum of t[i]^2 (in double) over this block's
// grid-stride share of the elements.
template <typename T>
__global__ void L2LossPartialKernel(const T* __restrict__ t, double* __restrict__ partial, int64_t n) {
  __shared__ double scratch[32];
  double sum = 0;
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) {
    const double v = static_cast<double>(t[i]);
    sum += v * v;
  }
  sum = BlockReduce(sum, SumOp(), 0.0, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

template <typename T>
Status LaunchL2LossPartial(const GpuDevice& gpu, const T* t, double* partial, int blocks, int64_t n) {
  L2LossPartialKernel<T><<<blocks, kL2Threads, 0, gpu.stream()>>>(t, partial, n);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

// out[0] = (partial[0] + ... + partial[count - 1]) / 2, by one block.
template <typename T>
__global__ void L2LossFinishKernel(const double* __restrict__ partial, int count, T* __restrict__ out) {
  __shared__ double scratch[32];
  double sum = 0;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) sum += partial[i];
  sum = BlockReduce(sum, SumOp(), 0.0, scratch);
  if (threadIdx.x == 0) out[0] = static_cast<T>(sum / 2);
}

template <typename T>
Status LaunchL2LossFinish(const GpuDevice& gpu, const double* partial, int count, T* out) {
  L2LossFinishKernel<T><<<1, kL2Threads, 0, gpu.stream()>>>(partial, count, out);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T>
class GpuL2LossOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& t = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    const int64_t n = t.NumElements();
    if (n == 0) {  // the sum of no squares: 0 (all-zero bytes are +0.0)
      TW_OP_REQUIRES_CUDA_OK(ctx, cudaMemsetAsync(out->data<T>(), 0, sizeof(T), gpu.stream()));
      return;
    }
    const int blocks = std::min(LaunchShapeFor(n, gpu, kL2Threads).blocks, kL2MaxBlocks);
    Tensor partial;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(kFloat64, TensorShape{blocks}, &partial));
    TW_OP_REQUIRES_OK(ctx, LaunchL2LossPartial<T>(gpu, t.data<T>(), partial.data<double>(), blocks, n));
    TW_OP_REQUIRES_OK(ctx, LaunchL2LossFinish<T>(gpu, partial.data<double>(), blocks, out->data<T>()));
  }
};

// ---- Dropout -------------------------------------------------------------------

// The call's first Philox block is read from `next_block` in device memory,
// which AdvanceDropoutStream moves past the call's blocks afterwards, in
// stream order: a replayed CUDA graph (runtime/step_graph.h) draws new masks
// each time, the same ones the host-side stream gives the CPU twin.
template <typename T>
__global__ void DropoutKernel(const T* __restrict__ x, T* __restrict__ out, T* __restrict__ mask, int64_t n,
                              DropoutDraw draw, const uint64_t* __restrict__ next_block, T scale) {
  const int64_t blocks = (n + 3) / 4;
  const uint64_t first = *next_block;
  for (int64_t b = GridThreadIndex(); b < blocks; b += GridThreadCount()) {
    const philox::Words w = philox::Block(draw.seed, draw.seed2, first + static_cast<uint64_t>(b));
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * b + j;
      if (i >= n) break;
      const T m = w.w[j] >= draw.threshold ? scale : T(0);
      mask[i] = m;
      out[i] = x[i] * m;
    }
  }
}

__global__ void AdvanceDropoutStream(uint64_t* next_block, uint64_t blocks) { *next_block += blocks; }

template <typename T>
Status LaunchDropout(const GpuDevice& gpu, const T* x, T* out, T* mask, int64_t n, const DropoutDraw& draw,
                     uint64_t* next_block, T scale) {
  TW_RETURN_IF_ERROR(LaunchGridStride(gpu, (n + 3) / 4, DropoutKernel<T>, x, out, mask, n, draw,
                                      static_cast<const uint64_t*>(next_block), scale));
  AdvanceDropoutStream<<<1, 1, 0, gpu.stream()>>>(next_block, static_cast<uint64_t>((n + 3) / 4));
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T>
class GpuDropoutOp : public GpuOpKernel {
 public:
  explicit GpuDropoutOp(OpKernelConstruction* c) : GpuOpKernel(c), stream_(c) {}
  ~GpuDropoutOp() override {
    if (next_block_ != nullptr) counter_allocator_->Deallocate(next_block_, sizeof(uint64_t));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor *out = nullptr, *mask = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &mask));
    const int64_t n = x.NumElements();
    // The seeds and threshold; the first block comes from the device's
    // counter (DropoutKernel), which moves as the host stream does.
    const DropoutDraw draw = stream_.Reserve(n);  // a call on no elements takes no block, as on the CPU
    if (n == 0) return;
    uint64_t* next_block = nullptr;
    TW_OP_REQUIRES_OK(ctx, NextBlock(gpu, &next_block));
    const T scale = static_cast<T>(1.0 / (1.0 - stream_.rate()));
    TW_OP_REQUIRES_OK(ctx, LaunchDropout<T>(gpu, x.data<T>(), out->data<T>(), mask->data<T>(), n, draw, next_block,
                                            scale));
  }

 private:
  // The device counter of the stream's next block, made (zeroed, in stream
  // order) by the first call. Never by a call being recorded: the zeroing
  // would be replayed with every step, and each step would draw the first
  // step's masks (a step graph records only after steps run kernel by kernel,
  // so this is a guard).
  Status NextBlock(const GpuDevice& gpu, uint64_t** out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_block_ == nullptr) {
      if (gpu.capturing()) {
        return errors::FailedPrecondition("Dropout's random stream counter must be made by a run that is not "
                                          "recorded into a step graph");
      }
      void* p = gpu.allocator()->Allocate(sizeof(uint64_t));
      if (p == nullptr) return errors::ResourceExhausted("Dropout: no device memory for its random stream's counter");
      TW_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, sizeof(uint64_t), gpu.stream()));
      next_block_ = static_cast<uint64_t*>(p);
      counter_allocator_ = gpu.allocator();
    }
    *out = next_block_;
    return Status::OK();
  }

  DropoutStream stream_;
  std::mutex mu_;
  uint64_t* next_block_ = nullptr;  // guarded by mu_
  Allocator* counter_allocator_ = nullptr;
};

}  // namespace

void RegisterNnCudaKernels(KernelRegistry& r, const KernelRegistry& cpu) {
  RegisterXentCudaKernels(r, cpu);
  r.RegisterTyped<BiasAddOp, float, double>("BiasAdd", kDeviceGpu);
  r.RegisterTyped<BiasAddReluOp, float, double>("BiasAddRelu", kDeviceGpu);
  r.RegisterTyped<GpuBiasAddGradOp, float, double>("BiasAddGrad", kDeviceGpu);
  r.RegisterTyped<GpuBiasAddReluGradOp, float, double>("BiasAddReluGrad", kDeviceGpu);
  r.RegisterTyped<GpuReluOp, float, double>("Relu", kDeviceGpu);
  r.RegisterTyped<GpuReluGradOp, float, double>("ReluGrad", kDeviceGpu);
  r.RegisterTyped<GpuSoftmaxOp, float, double>("Softmax", kDeviceGpu);
  r.RegisterTyped<GpuL2LossOp, float, double>("L2Loss", kDeviceGpu);
  r.RegisterTyped<GpuDropoutOp, float, double>("Dropout", kDeviceGpu);
}

}  // namespace tw
