// CPU kernels of the element-wise and per-row nn ops: BiasAdd, BiasAddGrad,
// Relu, ReluGrad, Softmax, SoftmaxCrossEntropyWithLogits,
// SparseSoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyMean, L2Loss,
// Dropout. Conv2D and MaxPool are in conv_kernels.cc and pool_kernels.cc.
//
// Loops run over contiguous rows (the last dimension) so the compiler
// vectorises them; big tensors are split over the device's intra-op threads.
// The shape checks are nn_args.h's, shared with the CUDA twins (nn_cuda.cu).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/internal/column_sums.h"
#include "towerflow/kernels/internal/cpu_clones.h"
#include "towerflow/kernels/internal/dropout_stream.h"
#include "towerflow/kernels/internal/philox.h"
#include "towerflow/kernels/internal/row_reduce.h"
#include "towerflow/kernels/nn_args.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

// Rough cycles per element, for ParallelFor's sharding.
constexpr int64_t kElementwiseCost = 2;
constexpr int64_t kExpCost = 20;

template <typename T, bool kRelu>
class BiasAddOpBase : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckBiasAdd(value, bias));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, value.shape(), &out));
    const int64_t c = bias.dim(0);
    if (c == 0) return;
    const int64_t rows = value.NumElements() / c;
    const T* b = bias.data<T>();
    T* o = out->data<T>();
    const T* v = value.data<T>();
    ParallelFor(ctx->intra_op_pool(), rows, c * kElementwiseCost, [&](int64_t r0, int64_t r1) {
      if (v == o) {  // in place: the output took the value's buffer
        Rows(o, b, o, r0, r1, c);
      } else {
        Rows(v, b, o, r0, r1, c);
      }
    });
  }

 private:
  // o = v + b (then Relu) over rows [r0, r1). In place when v == o: every
  // element is read before it is written, by one thread.
  static void Rows(const T* v, const T* __restrict b, T* o, int64_t r0, int64_t r1, int64_t c) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* vr = v + r * c;
      T* orow = o + r * c;
      if constexpr (kRelu) {
        for (int64_t j = 0; j < c; ++j) orow[j] = std::max(vr[j] + b[j], T(0));
      } else {
        for (int64_t j = 0; j < c; ++j) orow[j] = vr[j] + b[j];
      }
    }
  }
};
template <typename T>
using BiasAddOp = BiasAddOpBase<T, false>;
template <typename T>
using BiasAddReluOp = BiasAddOpBase<T, true>;

// sum[j] += the sum over `rows` rows of src[r * c + j], added in blocks of 64
// rows (`block`: c entries of scratch), each block's sum then added to `sum`.
template <typename T>
TW_CPU_CLONES void SumRowsInBlocks(const T* __restrict src, int64_t rows, int64_t c, T* __restrict sum,
                                   T* __restrict block) {
  constexpr int64_t kBlock = 64;
  for (int64_t b0 = 0; b0 < rows; b0 += kBlock) {
    std::fill_n(block, c, T(0));
    for (int64_t r = b0; r < std::min(rows, b0 + kBlock); ++r) {
      for (int64_t j = 0; j < c; ++j) block[j] += src[r * c + j];
    }
    for (int64_t j = 0; j < c; ++j) sum[j] += block[j];
  }
}

template <typename T>
class BiasAddGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    TW_OP_REQUIRES_OK(ctx, CheckBiasAddGrad(g));
    internal::SumColumns<T>(ctx, g.data<T>(), nullptr, nullptr, g, 0);
  }
};

// BiasAddRelu's gradient: ReluGrad's masked gradient, and BiasAddGrad's sums
// of it, each shard's rows summed while they are in cache; the same values as
// the two ops (the same shards, in the same order).
template <typename T>
class BiasAddReluGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Tensor& y = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckBiasAddReluGrad(g, y));
    Tensor* dz = nullptr;
    // The gradient's buffer may become dz (each element read, then written).
    TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, g.shape(), &dz));
    internal::SumColumns<T>(ctx, g.data<T>(), y.data<T>(), dz->data<T>(), g, 1);
  }
};

template <typename T>
class ReluOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    const T* in = x.data<T>();
    T* o = out->data<T>();  // may be `in` (each element read, then written)
    ParallelFor(ctx->intra_op_pool(), x.NumElements(), kElementwiseCost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T v = in[i];
        o[i] = v > T(0) ? v : T(0);
      }
    });
  }
};

template <typename T>
class ReluGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Tensor& f = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckReluGrad(g, f));
    Tensor* out = nullptr;
    // The gradient's buffer may become the output (f is the forward's value,
    // which the step usually still needs).
    TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, g.shape(), &out));
    const T* gp = g.data<T>();
    const T* __restrict fp = f.data<T>();
    T* o = out->data<T>();  // may be gp (each element read, then written)
    ParallelFor(ctx->intra_op_pool(), g.NumElements(), kElementwiseCost, [&](int64_t b, int64_t e) {
      // gp[i] is loaded unconditionally so that the select vectorises (a
      // conditional load compiles to a branch that random signs mispredict).
      for (int64_t i = b; i < e; ++i) {
        const T grad = gp[i];
        o[i] = fp[i] > T(0) ? grad : T(0);
      }
    });
  }
};

// Runs fn(row_begin, row_end) over the rows of a [rows, cols] view of `x`.
template <typename Fn>
void ForRows(OpKernelContext* ctx, int64_t rows, int64_t cols, Fn&& fn) {
  ParallelFor(ctx->intra_op_pool(), rows, cols * kExpCost, fn);
}

template <typename T>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    TW_OP_REQUIRES_OK(ctx, CheckSoftmax(x));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0) return;
    const T* __restrict in = x.data<T>();
    T* __restrict o = out->data<T>();
    // Subtracting the row max keeps exp from overflowing; the result is unchanged.
    ForRows(ctx, x.NumElements() / c, c, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = in + r * c;
        T* yr = o + r * c;
        const T m = *std::max_element(xr, xr + c);
        T sum = 0;
        for (int64_t j = 0; j < c; ++j) {
          yr[j] = std::exp(xr[j] - m);
          sum += yr[j];
        }
        const T inv = T(1) / sum;
        for (int64_t j = 0; j < c; ++j) yr[j] *= inv;
      }
    });
  }
};

// Shared by both cross-entropies: row r of logits gives loss[r] and
// backprop[r] = softmax(logits[r]) - labels[r], with labels given per class by
// label(r, j). loss = sum_j labels_j * (log(sum exp(l - m)) - (l_j - m)).
template <typename T, typename Label>
void XentRows(OpKernelContext* ctx, const Tensor& logits, Tensor* loss, Tensor* backprop, Label&& label) {
  const int64_t rows = logits.dim(0), c = logits.dim(1);
  const T* __restrict in = logits.data<T>();
  T* __restrict lp = loss->data<T>();
  T* __restrict bp = backprop->data<T>();
  ForRows(ctx, rows, c, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = in + r * c;
      T* br = bp + r * c;
      const T m = c > 0 ? *std::max_element(xr, xr + c) : T(0);
      T sum = 0;
      for (int64_t j = 0; j < c; ++j) {
        br[j] = std::exp(xr[j] - m);
        sum += br[j];
      }
      const T log_sum = std::log(sum), inv = T(1) / sum;
      T l = 0;
      for (int64_t j = 0; j < c; ++j) {
        const T y = label(r, j);
        if (y != T(0)) l += y * (log_sum - (xr[j] - m));
        br[j] = br[j] * inv - y;
      }
      lp[r] = l;
    }
  });
}

template <typename T>
class SoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckSoftmaxXent(logits, labels));
    Tensor *loss = nullptr, *backprop = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{logits.dim(0)}, &loss));
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(1, logits.shape(), &backprop));
    const T* y = labels.data<T>();
    const int64_t c = logits.dim(1);
    XentRows<T>(ctx, logits, loss, backprop, [&](int64_t r, int64_t j) { return y[r * c + j]; });
  }
};

// The class index of each row; InvalidArgument naming the first outside
// [0, c) (the op name, the row and the value).
Status LabelIndices(const Tensor& labels, int64_t c, const std::string& op, std::vector<int64_t>* idx) {
  const int64_t rows = labels.NumElements();
  idx->resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t v = labels.dtype() == kInt32 ? labels.data<int32_t>()[r] : labels.data<int64_t>()[r];
    if (v < 0 || v >= c) {
      return errors::InvalidArgument(op, ": label ", v, " in row ", r, " is outside the valid range [0, ", c,
                                     ") of classes");
    }
    (*idx)[static_cast<size_t>(r)] = v;
  }
  return Status::OK();
}

// SparseSoftmaxCrossEntropyWithLogits, and with kMean the mean op
// (nn_ops.h: SparseSoftmaxCrossEntropyMean): the sparse cross-entropy's mean,
// its gradient and the rows classified correctly, with the bits of the
// separate ops: XentRows, the backprop times 1 / rows (the Mean gradient's
// Div, then Mul), the mean as Mean sums (row_reduce::SumAll, then / rows),
// and ArgMax's first largest logit compared with the label.
template <typename T, bool kMean>
class SparseSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, CheckSparseSoftmaxXent(logits, labels));
    const int64_t rows = logits.dim(0), c = logits.dim(1);
    std::vector<int64_t> idx;
    TW_OP_REQUIRES_OK(ctx, LabelIndices(labels, c, node().op(), &idx));
    Tensor *loss = nullptr, *backprop = nullptr, *correct = nullptr;
    Tensor row_loss;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, kMean ? TensorShape{} : TensorShape{rows}, &loss));
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(1, logits.shape(), &backprop));
    if constexpr (kMean) {
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape{rows}, &correct));
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(logits.dtype(), TensorShape{rows}, &row_loss));
    }
    XentRows<T>(ctx, logits, kMean ? &row_loss : loss, backprop,
                [&](int64_t r, int64_t j) { return idx[static_cast<size_t>(r)] == j ? T(1) : T(0); });
    if constexpr (kMean) {
      const T inv = T(1) / static_cast<T>(rows);
      const T* x = logits.data<T>();
      T* bp = backprop->data<T>();
      T* ok = correct->data<T>();
      ForRows(ctx, rows, c, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t j = 0; j < c; ++j) bp[r * c + j] *= inv;
          int64_t best = 0;
          for (int64_t j = 1; j < c; ++j) {
            if (x[r * c + j] > x[r * c + best]) best = j;
          }
          ok[r] = best == idx[static_cast<size_t>(r)] ? T(1) : T(0);
        }
      });
      loss->data<T>()[0] = row_reduce::SumAll(row_loss.data<T>(), rows) / static_cast<T>(rows);
    }
  }
};
template <typename T>
using SparseSoftmaxXentRowsOp = SparseSoftmaxXentOp<T, false>;
template <typename T>
using SparseSoftmaxXentMeanOp = SparseSoftmaxXentOp<T, true>;

template <typename T>
class L2LossOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    // Accumulated in double: weight decay sums whole weight matrices.
    const T* __restrict p = t.data<T>();
    double sum = 0;
    for (int64_t i = 0; i < t.NumElements(); ++i) sum += static_cast<double>(p[i]) * static_cast<double>(p[i]);
    out->data<T>()[0] = static_cast<T>(sum / 2);
  }
};

// Dropout's mask (dropout_stream.h: the Philox words of the call's blocks
// against the threshold) and y = x * mask. Vectorised across blocks: each
// Philox round is a multiply and xors per lane, so the clones run it several
// times faster than one block at a time. `y` may be `x`.
template <typename T>
TW_CPU_CLONES void DropoutMaskAndApply(const DropoutDraw& draw, T scale, const T* x, T* __restrict m, T* y,
                                       int64_t n) {
  const int64_t full = n / 4;
  for (int64_t b = 0; b < full; ++b) {
    const philox::Words w = philox::Block(draw.seed, draw.seed2, draw.first_block + static_cast<uint64_t>(b));
    for (int j = 0; j < 4; ++j) m[4 * b + j] = w.w[j] >= draw.threshold ? scale : T(0);
  }
  if (full * 4 < n) {
    const philox::Words w = philox::Block(draw.seed, draw.seed2, draw.first_block + static_cast<uint64_t>(full));
    for (int64_t i = full * 4; i < n; ++i) m[i] = w.w[i - full * 4] >= draw.threshold ? scale : T(0);
  }
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * m[i];
}

// mask[i] is 0 with probability rate, else 1 / (1 - rate); output = x * mask.
// The words come from the kernel instance's Philox stream (dropout_stream.h),
// the same as the CUDA twin's: a given seed replays the same masks on either
// device. Four elements per Philox block (DropoutMaskAndApply).
template <typename T>
class DropoutOp : public OpKernel {
 public:
  explicit DropoutOp(OpKernelConstruction* c) : OpKernel(c), stream_(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor *out = nullptr, *mask = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &mask));
    TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    const int64_t n = x.NumElements();
    const DropoutDraw draw = stream_.Reserve(n);
    const T scale = static_cast<T>(1.0 / (1.0 - stream_.rate()));
    // `out` may be x's buffer (each element read, then written).
    DropoutMaskAndApply(draw, scale, x.data<T>(), mask->data<T>(), out->data<T>(), n);
  }

 private:
  DropoutStream stream_;
};

}  // namespace

namespace internal {

// Each shard sums its rows in blocks (a partial sum per block keeps float
// error near log(rows) rather than rows).
template <typename T>
void SumColumns(OpKernelContext* ctx, const T* g, const T* mask, T* masked, const Tensor& shape_of, int output) {
  const int64_t c = shape_of.dim(shape_of.rank() - 1);
  Tensor* out = nullptr;
  TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(output, TensorShape{c}, &out));
  T* __restrict o = out->data<T>();
  std::fill_n(o, c, T(0));
  if (c == 0) return;
  const int64_t rows = shape_of.NumElements() / c;
  std::mutex mu;
  std::map<int64_t, std::vector<T>> shards;  // by first row; guarded by mu
  ParallelFor(ctx->intra_op_pool(), rows, c * kElementwiseCost, [&](int64_t r0, int64_t r1) {
    const T* src = g + r0 * c;
    if (mask != nullptr) {
      const T* __restrict f = mask + r0 * c;
      T* dst = masked + r0 * c;  // may be src (each element read, then written)
      for (int64_t i = 0; i < (r1 - r0) * c; ++i) {
        const T grad = src[i];
        dst[i] = f[i] > T(0) ? grad : T(0);
      }
      src = dst;
    }
    std::vector<T> shard(static_cast<size_t>(c), T(0)), block(static_cast<size_t>(c));
    SumRowsInBlocks(src, r1 - r0, c, shard.data(), block.data());
    std::lock_guard<std::mutex> lock(mu);
    shards.emplace(r0, std::move(shard));
  });
  for (const auto& [first, sum] : shards) {
    for (int64_t j = 0; j < c; ++j) o[j] += sum[static_cast<size_t>(j)];
  }
}

template void SumColumns<float>(OpKernelContext*, const float*, const float*, float*, const Tensor&, int);
template void SumColumns<double>(OpKernelContext*, const double*, const double*, double*, const Tensor&, int);

}  // namespace internal

void RegisterNnKernels(KernelRegistry& r) {
  r.RegisterTyped<BiasAddOp, float, double>("BiasAdd", kDeviceCpu);
  r.RegisterTyped<BiasAddReluOp, float, double>("BiasAddRelu", kDeviceCpu);
  r.RegisterTyped<BiasAddGradOp, float, double>("BiasAddGrad", kDeviceCpu);
  r.RegisterTyped<BiasAddReluGradOp, float, double>("BiasAddReluGrad", kDeviceCpu);
  r.RegisterTyped<ReluOp, float, double>("Relu", kDeviceCpu);
  r.RegisterTyped<ReluGradOp, float, double>("ReluGrad", kDeviceCpu);
  r.RegisterTyped<SoftmaxOp, float, double>("Softmax", kDeviceCpu);
  r.RegisterTyped<SoftmaxXentOp, float, double>("SoftmaxCrossEntropyWithLogits", kDeviceCpu);
  r.RegisterTyped<SparseSoftmaxXentRowsOp, float, double>("SparseSoftmaxCrossEntropyWithLogits", kDeviceCpu);
  r.RegisterTyped<SparseSoftmaxXentMeanOp, float, double>("SparseSoftmaxCrossEntropyMean", kDeviceCpu);
  r.RegisterTyped<L2LossOp, float, double>("L2Loss", kDeviceCpu);
  r.RegisterTyped<DropoutOp, float, double>("Dropout", kDeviceCpu);
}

}  // namespace tw
