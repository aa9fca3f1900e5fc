// CPU kernels of the ops that rearrange or repeat elements, and of Range:
// Transpose, InvertPermutation, Tile, Pad / PadV2, ReverseV2, Range. Templates over the
// element type (strings included, but for Range). The copies walk the
// output in row-major order with an index odometer over the source's strides.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "towerflow/graph/ops/range_count.h"
#include "towerflow/kernels/layout_args.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using shape_util::RowMajorStrides;

// Copies src (strides `src_stride` per output axis) into dst, dense in the
// output's row-major order of `dims`. Rank >= 1, no zero dims.
template <typename T>
void StridedCopy(const std::vector<int64_t>& dims, const std::vector<int64_t>& src_stride, const T* src, T* dst) {
  const int64_t run = dims.back(), step = src_stride.back();
  shape_util::ForEachRun(dims, src_stride, RowMajorStrides(dims), [&](int64_t s, int64_t d) {
    if (step == 1) {
      std::copy_n(src + s, run, dst + d);
    } else {
      for (int64_t j = 0; j < run; ++j) dst[d + j] = src[s + j * step];
    }
  });
}

template <typename T>
class TransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto plan = layout::TransposeOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    if (out == nullptr || out->NumElements() == 0) return;  // the identity, or empty
    StridedCopy(plan->dims, plan->src_strides, ctx->input(0).data<T>(), out->data<T>());
  }
};

class InvertPermutationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto perm = layout::IntList(ctx, 0, "InvertPermutation: x");
    TW_OP_REQUIRES_OK(ctx, perm.status());
    const int64_t n = static_cast<int64_t>(perm->size());
    TW_OP_REQUIRES_OK(ctx, layout::CheckPermutation("InvertPermutation", *perm, n));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{n}, &out));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = (*perm)[static_cast<size_t>(i)];
      if (out->dtype() == kInt32) {
        out->data<int32_t>()[p] = static_cast<int32_t>(i);
      } else {
        out->data<int64_t>()[p] = i;
      }
    }
  }
  bool IsExpensive() const override { return false; }
};

template <typename T>
class TileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto m = layout::TileOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, m.status());
    if (out->NumElements() == 0) return;
    const int rank = x.rank();
    const std::vector<int64_t>& dims = out->shape().dims();
    const T* src = x.data<T>();
    T* dst = out->data<T>();
    if (rank == 0) {
      dst[0] = src[0];
      return;
    }
    // Each output row (all axes but the last) reads the input row at its
    // index modulo x's dims, repeated multiples.back() times.
    const std::vector<int64_t>& xd = x.shape().dims();
    const std::vector<int64_t> xs = RowMajorStrides(xd);
    const int64_t row = xd.back(), rows = out->NumElements() / dims.back();
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t s = 0;
      for (int d = 0; d + 1 < rank; ++d) s += (idx[static_cast<size_t>(d)] % xd[static_cast<size_t>(d)]) * xs[static_cast<size_t>(d)];
      T* out_row = dst + r * dims.back();
      for (int64_t k = 0; k < (*m)[static_cast<size_t>(rank - 1)]; ++k) std::copy_n(src + s, row, out_row + k * row);
      for (int d2 = rank - 2; d2 >= 0; --d2) {
        if (++idx[static_cast<size_t>(d2)] < dims[static_cast<size_t>(d2)]) break;
        idx[static_cast<size_t>(d2)] = 0;
      }
    }
  }
};

template <typename T>
class PadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto before = layout::PadOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, before.status());
    const T value = ctx->num_inputs() > 2 ? ctx->input(2).data<T>()[0] : T{};  // PadV2's, else 0, false or ""
    const int rank = x.rank();
    const std::vector<int64_t>& dims = out->shape().dims();
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), value);
    if (x.NumElements() == 0) return;
    if (rank == 0) {
      dst[0] = x.data<T>()[0];
      return;
    }
    const std::vector<int64_t> os = RowMajorStrides(dims);
    int64_t base = 0;
    for (int i = 0; i < rank; ++i) base += (*before)[static_cast<size_t>(i)] * os[static_cast<size_t>(i)];
    const T* src = x.data<T>();
    const int64_t run = x.shape().dims().back();
    shape_util::ForEachRun(x.shape().dims(), RowMajorStrides(x.shape().dims()), os,
                           [&](int64_t s, int64_t d) { std::copy_n(src + s, run, dst + base + d); });
  }
};

template <typename T>
class ReverseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto plan = layout::ReverseOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    if (out == nullptr) return;  // nothing to reverse: the input is the output
    StridedCopy(plan->dims, plan->src_strides, ctx->input(0).data<T>() + plan->src_offset, out->data<T>());
  }
};

template <typename T>
class RangeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < 3; ++i) {
      TW_OP_REQUIRES(ctx, ctx->input(i).rank() == 0,
                     errors::InvalidArgument("Range: ", i == 0 ? "start" : i == 1 ? "limit" : "delta",
                                             " must be a scalar, got ", ctx->input(i).shape().ToString()));
    }
    const T start = ctx->input(0).data<T>()[0], limit = ctx->input(1).data<T>()[0], delta = ctx->input(2).data<T>()[0];
    auto size = RangeCount<T>(start, limit, delta);
    TW_OP_REQUIRES_OK(ctx, size.status());
    auto shape = TensorShape::Make({*size});
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* dst = out->data<T>();
    // start + i * delta, as TF's kernel (no accumulated rounding); integers in
    // 128 bits, where every value is within [start, limit) and fits T.
    for (int64_t i = 0; i < *size; ++i) {
      if constexpr (std::is_integral_v<T>) {
        dst[i] = static_cast<T>(static_cast<__int128>(start) + static_cast<__int128>(i) * delta);
      } else {
        dst[i] = start + static_cast<T>(i) * delta;
      }
    }
  }
};

}  // namespace

void RegisterLayoutKernels(KernelRegistry& r) {
  r.RegisterTyped<TransposeOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Transpose", kDeviceCpu);
  r.RegisterUntyped<InvertPermutationOp>("InvertPermutation", kDeviceCpu);
  r.RegisterTyped<TileOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Tile", kDeviceCpu);
  r.RegisterTyped<PadOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Pad", kDeviceCpu);
  r.RegisterTyped<PadOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("PadV2", kDeviceCpu);
  r.RegisterTyped<ReverseOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("ReverseV2", kDeviceCpu);
  r.RegisterTyped<RangeOp, int32_t, int64_t, float, double>("Range", kDeviceCpu, "Tidx");
}

}  // namespace tw
