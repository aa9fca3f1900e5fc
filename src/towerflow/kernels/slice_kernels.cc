// CPU kernels of the ops that cut and join tensors: ConcatV2, ConcatOffset,
// Slice and SliceGrad. Templates over the element type, so one body serves every
// dtype, strings included (elements are copied, not memcpy'd). The argument
// checks are shape_util.h's, shared with the CUDA twins (shape_cuda.cu).
#include <algorithm>
#include <cstdint>

#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace shape_util {
namespace {

template <typename T>
class ConcatOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    auto plan = PlanConcat(ctx, ctx->input(n));
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t axis = plan->axis;
    const TensorShape& first = ctx->input(0).shape();
    const TensorShape& out_shape = plan->out_shape;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= first.dim(d);
    const int64_t out_row = outer == 0 ? 0 : out_shape.num_elements() / outer;
    std::vector<const T*> src(static_cast<size_t>(n));
    std::vector<int64_t> row(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      src[static_cast<size_t>(i)] = ctx->input(i).template data<T>();
      row[static_cast<size_t>(i)] = outer == 0 ? 0 : ctx->input(i).NumElements() / outer;
    }
    T* dst = out->data<T>();
    ParallelFor(ctx->intra_op_pool(), outer, out_row * 2, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        T* d = dst + o * out_row;
        for (int i = 0; i < n; ++i) {
          const int64_t r = row[static_cast<size_t>(i)];
          std::copy_n(src[static_cast<size_t>(i)] + o * r, r, d);
          d += r;
        }
      }
    });
  }
};

// offset[i] is zero except along concat_dim, where it is the sum of the earlier
// shapes' sizes.
class ConcatOffsetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    TW_OP_REQUIRES(ctx, ctx->input(0).NumElements() == 1,
                   errors::InvalidArgument("ConcatOffset: concat_dim must be a scalar"));
    auto first = IntVector(ctx, 1, "ConcatOffset: shape");
    TW_OP_REQUIRES_OK(ctx, first.status());
    const int64_t rank = static_cast<int64_t>(first->size());
    int64_t axis = ctx->input(0).data<int32_t>()[0];
    TW_OP_REQUIRES(ctx, axis >= -rank && axis < rank,
                   errors::InvalidArgument("ConcatOffset: axis ", axis, " is out of range for rank ", rank));
    if (axis < 0) axis += rank;
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      auto s = IntVector(ctx, i + 1, "ConcatOffset: shape");
      TW_OP_REQUIRES_OK(ctx, s.status());
      TW_OP_REQUIRES(ctx, static_cast<int64_t>(s->size()) == rank,
                     errors::InvalidArgument("ConcatOffset: shapes ", VecStr(*first), " and ", VecStr(*s),
                                             " have different ranks"));
      Tensor* out = nullptr;
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(i, TensorShape{rank}, &out));
      for (int64_t d = 0; d < rank; ++d) out->data<int32_t>()[d] = d == axis ? static_cast<int32_t>(offset) : 0;
      offset += (*s)[static_cast<size_t>(axis)];
    }
  }
  bool IsExpensive() const override { return false; }
};

// Copies the box at `begin` of `size` between a big tensor (shape `big`) and a
// small dense one: big -> small (Slice) or small -> big (SliceGrad).
template <typename T>
void CopyBox(const TensorShape& big, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
             const T* src, T* dst, bool to_small) {
  const std::vector<int64_t> big_strides = RowMajorStrides(big.dims());
  const std::vector<int64_t> small_strides = RowMajorStrides(size);
  int64_t base = 0;
  for (size_t k = 0; k < begin.size(); ++k) base += begin[k] * big_strides[k];
  const int64_t run = size.back();
  if (to_small) {
    ForEachRun(size, big_strides, small_strides,
               [&](int64_t s, int64_t d) { std::copy_n(src + base + s, run, dst + d); });
  } else {
    ForEachRun(size, small_strides, big_strides,
               [&](int64_t s, int64_t d) { std::copy_n(src + s, run, dst + base + d); });
  }
}

template <typename T>
class SliceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto box = SliceOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, box.status());
    if (out == nullptr) return;  // the whole input
    if (out->NumElements() > 0) CopyBox(x.shape(), box->begin, box->size, x.data<T>(), out->data<T>(), true);
  }
};

template <typename T>
class SliceGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    Tensor* out = nullptr;
    auto box = SliceGradOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, box.status());
    std::fill_n(out->data<T>(), out->NumElements(), T(0));
    if (out->rank() == 0) {
      out->data<T>()[0] = dy.data<T>()[0];
    } else if (dy.NumElements() > 0) {
      CopyBox(out->shape(), box->begin, box->size, dy.data<T>(), out->data<T>(), false);
    }
  }
};

}  // namespace

void RegisterSliceKernels(KernelRegistry& r) {
  r.RegisterUntyped<ConcatOffsetOp>("ConcatOffset", kDeviceCpu);
  r.RegisterTyped<ConcatOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("ConcatV2", kDeviceCpu);
  r.RegisterTyped<SliceOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Slice", kDeviceCpu);
  r.RegisterTyped<SliceGradOp, float, double, int32_t, int64_t, uint8_t>("SliceGrad", kDeviceCpu);
}

}  // namespace shape_util
}  // namespace tw
