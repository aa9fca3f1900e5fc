// CUDA kernels of the cross-entropies, float and double. CPU twins:
// nn_kernels.cc (XentRows and the three ops), with the same shape checks
// (nn_args.h).
//
// - XentKernel<T, I, kSparse>: both cross-entropies, one block per row
//   (grid-stride over the rows, sized to the row); block reductions of the
//   row's max and of the sum of exp(x - max); loss[r] = sum_j y_j *
//   (log(sum exp(l - m)) - (l_j - m)) and backprop = (softmax - labels) *
//   scale, as the CPU twin's XentRows. With `correct`, thread 0 of the row
//   also scans it for its first largest logit (ArgMax's rule, NaN included)
//   and writes 1 where that is the label.
// - SparseSoftmaxCrossEntropyMean: XentKernel with scale = 1 / rows and
//   `correct`, its row losses in a temporary, then MeanKernel: one block adds
//   them, each thread a fixed strided share, then a block reduction, and
//   divides by rows. Two launches where the separate ops (cross-entropy,
//   Mean, OnesLike, Div, BroadcastTo, Mul, ArgMax, Equal, Cast) take nine; no
//   atomics, so a run repeats bit for bit. The mean's order of additions is
//   not the CPU's: the loss agrees with the twin to rounding, the backprop
//   and `correct` exactly as the per-row work does.
//
// Divergence from the CPU twin: the sparse cross-entropies' labels. The CPU
// kernels read the labels on the host and fail with InvalidArgument naming a
// label outside [0, classes). Here the labels are in device memory and the
// kernel is only queued when Compute returns, so it cannot fail the step: as
// TF's GPU kernel does, a row with such a label gets a NaN loss and a NaN
// backprop row (other rows are unaffected; `correct` is 0 there, and the mean
// is NaN). No device error flag is kept, since reading one would mean waiting
// for the GPU inside Compute; the NaNs are the signal, and
// SessionOptions::check_numerics turns them into an InvalidArgument naming
// this node.
#include <cstdint>
#include <limits>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/nn_args.h"

namespace tw {
namespace {

using cuda_util::BlockReduce;
using cuda_util::MaxOp;
using cuda_util::RowBlocks;
using cuda_util::RowThreads;
using cuda_util::SumOp;

// Row r of logits [rows, c] gives loss[r] and backprop[r]; the labels are
// `dense` [rows, c] (kSparse false) or class indices `sparse` [rows] of type I.
// A sparse label outside [0, c) gives a NaN loss and backprop row (see the top
// of the file).
template <typename T, typename I, bool kSparse>
__global__ void XentKernel(const T* __restrict__ logits, const T* __restrict__ dense,
                           const I* __restrict__ sparse, T* __restrict__ loss, T* __restrict__ backprop,
                           T* __restrict__ correct, T scale, int64_t rows, int64_t c) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // uniform over the block
    const T* xr = logits + r * c;
    T* br = backprop + r * c;
    int64_t label = -1;
    if constexpr (kSparse) {
      label = static_cast<int64_t>(sparse[r]);
      if (correct != nullptr && threadIdx.x == 0) {
        // ArgMax's scan: the first element wins ties, and a NaN only when first.
        int64_t best = 0;
        for (int64_t j = 1; j < c; ++j) {
          if (xr[j] > xr[best]) best = j;
        }
        correct[r] = best == label && label < c ? T(1) : T(0);
      }
      if (label < 0 || label >= c) {  // the same for every thread of the block
        for (int64_t j = threadIdx.x; j < c; j += blockDim.x) br[j] = std::numeric_limits<T>::quiet_NaN();
        if (threadIdx.x == 0) loss[r] = std::numeric_limits<T>::quiet_NaN();
        continue;
      }
    }
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = MaxOp()(m, xr[j]);
    m = BlockReduce(m, MaxOp(), -std::numeric_limits<T>::infinity(), scratch);
    if (c == 0) m = T(0);  // the CPU twin's value for an empty row (unused: no classes)
    T sum = T(0);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const T e = cuda_util::Exp(xr[j] - m);
      br[j] = e;
      sum += e;
    }
    sum = BlockReduce(sum, SumOp(), T(0), scratch);
    const T log_sum = cuda_util::Log(sum), inv = T(1) / sum;
    T l = T(0);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      T y;
      if constexpr (kSparse) {
        y = j == label ? T(1) : T(0);
      } else {
        y = dense[r * c + j];
      }
      if (y != T(0)) l += y * (log_sum - (xr[j] - m));
      br[j] = (br[j] * inv - y) * scale;
    }
    l = BlockReduce(l, SumOp(), T(0), scratch);
    if (threadIdx.x == 0) loss[r] = l;
  }
}

template <typename T, typename I, bool kSparse>
Status LaunchXent(const GpuDevice& gpu, const T* logits, const T* dense, const I* sparse, T* loss,
                  T* backprop, T* correct, T scale, int64_t rows, int64_t c) {
  XentKernel<T, I, kSparse><<<RowBlocks(gpu, rows), RowThreads(c), 0, gpu.stream()>>>(
      logits, dense, sparse, loss, backprop, correct, scale, rows, c);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

constexpr int kMeanThreads = 256;

// *mean = the sum of x[0, n) / n, by one block: thread t adds x[t], x[t +
// 256], ... in order, then the block reduction (a fixed order).
template <typename T>
__global__ void MeanKernel(const T* __restrict__ x, T* __restrict__ mean, int64_t n) {
  __shared__ T scratch[32];
  T s = T(0);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  s = BlockReduce(s, SumOp(), T(0), scratch);
  if (threadIdx.x == 0) *mean = s / static_cast<T>(n);
}

template <typename T>
Status LaunchMean(const GpuDevice& gpu, const T* x, T* mean, int64_t n) {
  MeanKernel<T><<<1, kMeanThreads, 0, gpu.stream()>>>(x, mean, n);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

template <typename T>
class GpuSoftmaxXentOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckSoftmaxXent(logits, labels));
    Tensor *loss = nullptr, *backprop = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{logits.dim(0)}, &loss));
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(1, logits.shape(), &backprop));
    const int64_t rows = logits.dim(0);
    if (rows == 0) return;
    TW_OP_REQUIRES_OK(
        ctx, (LaunchXent<T, int32_t, false>(gpu, logits.data<T>(), labels.data<T>(), nullptr, loss->data<T>(),
                                            backprop->data<T>(), nullptr, T(1), rows, logits.dim(1))));
  }
};

// SparseSoftmaxCrossEntropyWithLogits, and with `mean` the mean op (the
// file comment): outputs loss [rows] and backprop, or loss [], backprop and
// correct [rows].
template <typename T, bool kMean>
class GpuSparseSoftmaxXentOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckSparseSoftmaxXent(logits, labels));
    const int64_t rows = logits.dim(0), c = logits.dim(1);
    Tensor *loss = nullptr, *backprop = nullptr, *correct = nullptr;
    Tensor row_loss;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, kMean ? TensorShape{} : TensorShape{rows}, &loss));
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(1, logits.shape(), &backprop));
    if constexpr (kMean) {
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape{rows}, &correct));
      if (rows == 0) {  // the mean of nothing: 0 / 0, as Mean gives
        TW_OP_REQUIRES_OK(ctx, LaunchMean<T>(gpu, nullptr, loss->data<T>(), 0));
        return;
      }
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(logits.dtype(), TensorShape{rows}, &row_loss));
    } else {
      if (rows == 0) return;
    }
    T* per_row = kMean ? row_loss.data<T>() : loss->data<T>();
    const T scale = kMean ? T(1) / static_cast<T>(rows) : T(1);
    // Tlabels is int32 or int64 (the op schema); the kernel is keyed on T only.
    auto launch = [&]<typename I>(const I* sparse) {
      return LaunchXent<T, I, true>(gpu, logits.data<T>(), nullptr, sparse, per_row, backprop->data<T>(),
                                    kMean ? correct->data<T>() : nullptr, scale, rows, c);
    };
    TW_OP_REQUIRES_OK(
        ctx, labels.dtype() == kInt32 ? launch(labels.data<int32_t>()) : launch(labels.data<int64_t>()));
    if constexpr (kMean) TW_OP_REQUIRES_OK(ctx, LaunchMean<T>(gpu, per_row, loss->data<T>(), rows));
  }
};

template <typename T>
using GpuSparseSoftmaxXentRowsOp = GpuSparseSoftmaxXentOp<T, false>;
template <typename T>
using GpuSparseSoftmaxXentMeanOp = GpuSparseSoftmaxXentOp<T, true>;

}  // namespace

void RegisterXentCudaKernels(KernelRegistry& r, const KernelRegistry& cpu) {
  r.RegisterTyped<GpuSoftmaxXentOp, float, double>("SoftmaxCrossEntropyWithLogits", kDeviceGpu);
  r.RegisterTyped<GpuSparseSoftmaxXentRowsOp, float, double>("SparseSoftmaxCrossEntropyWithLogits", kDeviceGpu);
  r.RegisterTyped<GpuSparseSoftmaxXentMeanOp, float, double>("SparseSoftmaxCrossEntropyMean", kDeviceGpu);
}

}  // namespace tw
