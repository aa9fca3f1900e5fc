// CPU kernels of the reductions Sum, Mean, Max (over the axes of an int32
// "reduction_indices" input) and of ArgMax.
//
// A reduction first collapses its input (MakeReducePlan, reduction_plan.h,
// shared with the CUDA twins): size-1 dimensions are dropped and neighbouring
// dimensions that are both reduced or both kept are merged, so any reduction
// becomes an alternating pattern such as [R] (everything), [K,R] (rows), [R,K]
// (columns: the bias gradient) or [K,R,K]. A row is folded with eight
// independent accumulators (internal/row_reduce.h); a kept innermost
// dimension is folded as whole vectors. Work is split over the device's intra-op
// threads along the outermost kept dimension, whose shards write disjoint
// outputs; a full reduction is cut into fixed 8192-element chunks whose partial
// results are combined in order, so results do not depend on the thread count.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/internal/row_reduce.h"
#include "towerflow/kernels/reduction_plan.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

using row_reduce::MaxReducer;
using row_reduce::ReduceRow;
using row_reduce::SumReducer;

// The loop nest of a ReducePlan (reduction_plan.h): its collapsed dimensions
// with the contiguous input strides and the output strides (0 on reduced
// dimensions). An empty input is one reduced dimension of size 0, so every
// output keeps the identity.
struct ReduceLoops {
  std::vector<int64_t> dims;
  std::vector<char> reduced;
  std::vector<int64_t> in_strides;
  std::vector<int64_t> out_strides;
};

ReduceLoops LoopsOf(const ReducePlan& p) {
  ReduceLoops l;
  if (p.empty) {
    l.dims = {0};
    l.reduced = {1};
    l.in_strides = {1};
    l.out_strides = {0};
    return l;
  }
  l.dims = p.dims;
  l.reduced = p.reduced;
  const size_t n = l.dims.size();
  l.in_strides.resize(n);
  l.out_strides.resize(n);
  int64_t si = 1, so = 1;
  for (size_t j = n; j-- > 0;) {
    l.in_strides[j] = si;
    si *= l.dims[j];
    l.out_strides[j] = l.reduced[j] ? 0 : so;
    if (!l.reduced[j]) so *= l.dims[j];
  }
  return l;
}

// Folds the block of `in` described by dims/strides [0, nd) into `out`, which
// already holds partial results (the identity at first).
template <typename T, typename R>
void ReduceBlock(const T* in, T* out, const int64_t* dims, const char* reduced, const int64_t* in_strides,
                 const int64_t* out_strides, size_t nd) {
  if (nd == 1) {
    if (reduced[0]) {
      out[0] = R::Combine(out[0], ReduceRow<T, R>(in, dims[0]));
    } else {
      T* __restrict o = out;
      const T* __restrict x = in;
      for (int64_t i = 0; i < dims[0]; ++i) o[i] = R::Combine(o[i], x[i]);
    }
    return;
  }
  for (int64_t i = 0; i < dims[0]; ++i) {
    ReduceBlock<T, R>(in + i * in_strides[0], out + i * out_strides[0], dims + 1, reduced + 1,
                      in_strides + 1, out_strides + 1, nd - 1);
  }
}

template <typename T, typename R>
void RunReduce(ThreadPool* pool, const ReduceLoops& p, const T* in, T* out, int64_t out_size) {
  std::fill_n(out, out_size, R::Identity());
  const size_t nd = p.dims.size();
  if (nd == 0) {  // one element, or only size-1 dimensions
    out[0] = R::Combine(out[0], in[0]);
    return;
  }
  if (nd == 1 && p.reduced[0]) {  // everything: fixed chunks, combined in order
    constexpr int64_t kChunk = row_reduce::kFullReduceChunk;
    const int64_t n = p.dims[0];
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<T> partial(static_cast<size_t>(chunks));
    ShardedFor(pool, chunks, kChunk, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        partial[static_cast<size_t>(c)] = ReduceRow<T, R>(in + c * kChunk, std::min(kChunk, n - c * kChunk));
      }
    });
    for (const T& v : partial) out[0] = R::Combine(out[0], v);
    return;
  }
  // Split along the outermost kept dimension: its shards own disjoint outputs.
  const size_t split = p.reduced[0] ? 1 : 0;
  int64_t total = 1;
  for (int64_t d : p.dims) total *= d;
  const int64_t extent = p.dims[split];
  ShardedFor(pool, extent, extent == 0 ? 1 : total / extent, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> dims = p.dims;
    dims[split] = hi - lo;
    ReduceBlock<T, R>(in + lo * p.in_strides[split], out + lo * p.out_strides[split], dims.data(),
                      p.reduced.data(), p.in_strides.data(), p.out_strides.data(), nd);
  });
}

enum class ReduceKind { kSum, kMean, kMax };

template <typename T, ReduceKind kKind>
class ReductionOp : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("keep_dims", &keep_dims_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    auto plan = MakeReducePlan(x.shape(), ctx->input(1), keep_dims_);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &out));
    T* o = out->data<T>();
    const int64_t n = out->NumElements();
    if constexpr (kKind == ReduceKind::kMax) {
      RunReduce<T, MaxReducer<T>>(ctx->intra_op_pool(), LoopsOf(*plan), x.data<T>(), o, n);
    } else {
      RunReduce<T, SumReducer<T>>(ctx->intra_op_pool(), LoopsOf(*plan), x.data<T>(), o, n);
    }
    if constexpr (kKind == ReduceKind::kMean) {
      // An empty reduction gives 0/0 = NaN for floats, as TF does; integers
      // keep the empty sum 0 rather than divide by zero.
      if constexpr (std::is_integral_v<T>) {
        if (plan->count > 0) {
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(o[i] / plan->count);
        }
      } else {
        const T count = static_cast<T>(plan->count);
        for (int64_t i = 0; i < n; ++i) o[i] /= count;
      }
    }
  }

 private:
  bool keep_dims_ = false;
};

template <typename T>
using SumOp = ReductionOp<T, ReduceKind::kSum>;
template <typename T>
using MeanOp = ReductionOp<T, ReduceKind::kMean>;
template <typename T>
using MaxOp = ReductionOp<T, ReduceKind::kMax>;

// Index of the first largest value along `dimension`, viewed as
// [outer, len, inner]; inner > 1 scans whole inner vectors per step along the axis.
template <typename T>
class ArgMaxOp : public OpKernel {
 public:
  explicit ArgMaxOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("output_type", &out_type_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    auto plan = MakeArgMaxPlan(x.shape(), ctx->input(1));
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t outer = plan->outer, len = plan->len, inner = plan->inner;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &out));
    const T* in = x.data<T>();
    ThreadPool* pool = ctx->intra_op_pool();
    auto run = [&]<typename I>(I* idx) {
      ShardedFor(pool, outer, len * inner, [&](int64_t o0, int64_t o1) {
        std::vector<T> best(static_cast<size_t>(inner));
        for (int64_t o = o0; o < o1; ++o) {
          const T* block = in + o * len * inner;
          I* oi = idx + o * inner;
          std::copy_n(block, inner, best.data());
          std::fill_n(oi, inner, I(0));
          for (int64_t a = 1; a < len; ++a) {
            const T* row = block + a * inner;
            for (int64_t j = 0; j < inner; ++j) {
              if (row[j] > best[static_cast<size_t>(j)]) {
                best[static_cast<size_t>(j)] = row[j];
                oi[j] = static_cast<I>(a);
              }
            }
          }
        }
      });
    };
    if (out_type_ == kInt32) {
      run(out->data<int32_t>());
    } else {
      run(out->data<int64_t>());
    }
  }

 private:
  DataType out_type_ = kInt64;
};

}  // namespace

void RegisterReductionKernels(KernelRegistry& r) {
  r.RegisterTyped<SumOp, float, double, int32_t, int64_t, uint8_t>("Sum", kDeviceCpu);
  r.RegisterTyped<MeanOp, float, double, int32_t, int64_t, uint8_t>("Mean", kDeviceCpu);
  r.RegisterTyped<MaxOp, float, double, int32_t, int64_t, uint8_t>("Max", kDeviceCpu);
  r.RegisterTyped<ArgMaxOp, float, double, int32_t, int64_t, uint8_t>("ArgMax", kDeviceCpu);
}

}  // namespace tw
