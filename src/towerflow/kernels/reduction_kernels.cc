// CPU kernels of the reductions Sum, Mean, Max (over the axes of an int32
// "reduction_indices" input) and of ArgMax.
//
// A reduction first collapses its input: size-1 dimensions are dropped and
// neighbouring dimensions that are both reduced or both kept are merged, so any
// reduction becomes an alternating pattern such as [R] (everything), [K,R] (rows),
// [R,K] (columns: the bias gradient) or [K,R,K]. A row is folded with eight
// independent accumulators, which the compiler turns into vector adds (a single
// float accumulator cannot be vectorised without reassociating); a kept innermost
// dimension is folded as whole vectors. Work is split over the device's intra-op
// threads along the outermost kept dimension, whose shards write disjoint
// outputs; a full reduction is cut into fixed 8192-element chunks whose partial
// results are combined in order, so results do not depend on the thread count.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

template <typename T>
struct SumReducer {
  static T Identity() { return T(0); }
  static T Combine(T a, T b) { return static_cast<T>(a + b); }
};
template <typename T>
struct MaxReducer {
  static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  static T Combine(T a, T b) { return a < b ? b : a; }
};

template <typename T, typename R>
T ReduceRow(const T* __restrict x, int64_t n) {
  T acc[8];
  std::fill_n(acc, 8, R::Identity());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] = R::Combine(acc[j], x[i + j]);
  }
  T r = R::Identity();
  for (int j = 0; j < 8; ++j) r = R::Combine(r, acc[j]);
  for (; i < n; ++i) r = R::Combine(r, x[i]);
  return r;
}

// The collapsed reduction: dims alternate between kept and reduced.
struct ReducePlan {
  TensorShape out_shape;
  std::vector<int64_t> dims;
  std::vector<char> reduced;
  std::vector<int64_t> in_strides;   // contiguous strides of `dims`
  std::vector<int64_t> out_strides;  // 0 on reduced dims
  int64_t count = 1;                 // input elements per output element
};

StatusOr<ReducePlan> MakeReducePlan(const TensorShape& in, const Tensor& axes, bool keep_dims) {
  if (axes.rank() > 1) {
    return errors::InvalidArgument("reduction_indices must be a scalar or vector, got shape ",
                                   axes.shape().ToString());
  }
  const int rank = in.rank();
  std::vector<char> reduce(static_cast<size_t>(rank), 0);
  const int32_t* a = axes.data<int32_t>();
  for (int64_t k = 0; k < axes.NumElements(); ++k) {
    if (a[k] < -rank || a[k] >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", a[k], " for input with ", rank,
                                     " dimensions, shape ", in.ToString());
    }
    reduce[static_cast<size_t>(a[k] < 0 ? a[k] + rank : a[k])] = 1;
  }
  ReducePlan p;
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    if (!reduce[static_cast<size_t>(i)]) out.push_back(in.dim(i));
    if (reduce[static_cast<size_t>(i)] && keep_dims) out.push_back(1);
  }
  // A zero dimension makes an input valid (and empty) whatever its other
  // dimensions, so reducing it away can leave a shape that overflows int64
  // ([0,2^21,2^21,2^21] over axis 0), and collapsing an empty input's
  // dimensions could overflow: check the output shape, and plan no work for an
  // empty input (every output element is an empty reduction).
  auto out_shape = TensorShape::Make(out);
  if (!out_shape.ok()) {
    return errors::InvalidArgument("reducing shape ", in.ToString(), ": the output ",
                                   out_shape.status().message());
  }
  p.out_shape = *out_shape;
  if (in.num_elements() == 0) {
    p.count = 0;
    p.dims = {0};
    p.reduced = {1};
    p.in_strides = {1};
    p.out_strides = {0};
    return p;
  }
  for (int i = 0; i < rank; ++i) {
    const int64_t d = in.dim(i);
    const char r = reduce[static_cast<size_t>(i)];
    if (r) p.count *= d;
    if (d == 1) continue;
    if (!p.dims.empty() && p.reduced.back() == r) {
      p.dims.back() *= d;
    } else {
      p.dims.push_back(d);
      p.reduced.push_back(r);
    }
  }
  const size_t n = p.dims.size();
  p.in_strides.resize(n);
  p.out_strides.resize(n);
  int64_t si = 1, so = 1;
  for (size_t j = n; j-- > 0;) {
    p.in_strides[j] = si;
    si *= p.dims[j];
    p.out_strides[j] = p.reduced[j] ? 0 : so;
    if (!p.reduced[j]) so *= p.dims[j];
  }
  return p;
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
void RunReduce(ThreadPool* pool, const ReducePlan& p, const T* in, T* out, int64_t out_size) {
  std::fill_n(out, out_size, R::Identity());
  const size_t nd = p.dims.size();
  if (nd == 0) {  // one element, or only size-1 dimensions
    out[0] = R::Combine(out[0], in[0]);
    return;
  }
  if (nd == 1 && p.reduced[0]) {  // everything: fixed chunks, combined in order
    constexpr int64_t kChunk = 8192;
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
      RunReduce<T, MaxReducer<T>>(ctx->intra_op_pool(), *plan, x.data<T>(), o, n);
    } else {
      RunReduce<T, SumReducer<T>>(ctx->intra_op_pool(), *plan, x.data<T>(), o, n);
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
    const Tensor& dim = ctx->input(1);
    TW_OP_REQUIRES(ctx, dim.NumElements() == 1,
                   errors::InvalidArgument("ArgMax dimension must be a scalar, got shape ",
                                           dim.shape().ToString()));
    const int rank = x.rank();
    int64_t axis = dim.data<int32_t>()[0];
    TW_OP_REQUIRES(ctx, axis >= -rank && axis < rank,
                   errors::InvalidArgument("Expected dimension in the range [", -rank, ", ", rank,
                                           "), but got ", axis, " for input of shape ", x.shape().ToString()));
    if (axis < 0) axis += rank;
    const int64_t len = x.dim(static_cast<int>(axis));
    TW_OP_REQUIRES(ctx, len > 0,
                   errors::InvalidArgument("ArgMax over an empty dimension ", axis, " of shape ",
                                           x.shape().ToString()));
    TensorShape out_shape = x.shape();
    out_shape.RemoveDim(static_cast<int>(axis));
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < rank; ++i) {
      if (i < axis) outer *= x.dim(i);
      if (i > axis) inner *= x.dim(i);
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
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
