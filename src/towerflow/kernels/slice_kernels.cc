// CPU kernels of the ops that cut and join tensors: ConcatV2, ConcatOffset,
// Slice and SliceGrad. Templates over the element type, so one body serves every
// dtype, strings included (elements are copied, not memcpy'd).
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
    const Tensor& axis_t = ctx->input(n);
    TW_OP_REQUIRES(ctx, axis_t.dtype() == kInt32 && axis_t.NumElements() == 1,
                   errors::InvalidArgument("ConcatV2: axis must be one int32, got ", axis_t.DebugString()));
    const TensorShape& first = ctx->input(0).shape();
    const int rank = first.rank();
    int64_t axis = axis_t.data<int32_t>()[0];
    TW_OP_REQUIRES(ctx, axis >= -rank && axis < rank,
                   errors::InvalidArgument("ConcatV2: axis ", axis, " is out of range for values of shape ",
                                           first.ToString()));
    if (axis < 0) axis += rank;
    int64_t axis_size = 0;
    for (int i = 0; i < n; ++i) {
      const TensorShape& s = ctx->input(i).shape();
      bool ok = s.rank() == rank;
      for (int d = 0; ok && d < rank; ++d) ok = d == axis || s.dim(d) == first.dim(d);
      TW_OP_REQUIRES(ctx, ok,
                     errors::InvalidArgument("ConcatV2: value shapes ", first.ToString(), " and ", s.ToString(),
                                             " differ outside axis ", axis));
      // Inputs with a zero dimension are valid whatever their other dimensions,
      // so the joined axis, and the output's element count, can overflow int64.
      TW_OP_REQUIRES(ctx, s.dim(static_cast<int>(axis)) <= INT64_MAX - axis_size,
                     errors::InvalidArgument("ConcatV2: the sizes along axis ", axis,
                                             " add up to more than int64 can count (value shapes ",
                                             first.ToString(), " and ", s.ToString(), ")"));
      axis_size += s.dim(static_cast<int>(axis));
    }
    std::vector<int64_t> out_dims = first.dims();
    out_dims[static_cast<size_t>(axis)] = axis_size;
    auto checked = TensorShape::Make(out_dims);
    TW_OP_REQUIRES(ctx, checked.ok(),
                   errors::InvalidArgument("ConcatV2: the output ", checked.status().message(),
                                           " (value shapes ", first.ToString(), ", ...)"));
    const TensorShape& out_shape = *checked;
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

// Resolves Slice's begin and size against `shape` (size -1: to the end).
Status ResolveSlice(const TensorShape& shape, std::vector<int64_t> begin, std::vector<int64_t>& size) {
  const std::vector<int64_t> given = size;
  auto fail = [&] {
    return errors::InvalidArgument("Slice: begin ", PartialShape(begin).ToString(), " and size ",
                                   PartialShape(given).ToString(), " are out of bounds for input of shape ",
                                   shape.ToString());
  };
  if (static_cast<int>(begin.size()) != shape.rank() || static_cast<int>(size.size()) != shape.rank()) {
    return fail();
  }
  for (int i = 0; i < shape.rank(); ++i) {
    const size_t k = static_cast<size_t>(i);
    if (size[k] == -1) size[k] = shape.dim(i) - begin[k];
    if (begin[k] < 0 || begin[k] > shape.dim(i) || size[k] < 0 || begin[k] + size[k] > shape.dim(i)) {
      return fail();
    }
  }
  return Status::OK();
}

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
    auto begin = IntVector(ctx, 1, "Slice: begin");
    TW_OP_REQUIRES_OK(ctx, begin.status());
    auto size = IntVector(ctx, 2, "Slice: size");
    TW_OP_REQUIRES_OK(ctx, size.status());
    TW_OP_REQUIRES_OK(ctx, ResolveSlice(x.shape(), *begin, *size));
    const TensorShape out_shape(*size);
    if (out_shape == x.shape()) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_shape.num_elements() > 0) CopyBox(x.shape(), *begin, *size, x.data<T>(), out->data<T>(), true);
  }
};

template <typename T>
class SliceGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    auto begin = IntVector(ctx, 1, "SliceGrad: begin");
    TW_OP_REQUIRES_OK(ctx, begin.status());
    auto dims = IntVector(ctx, 2, "SliceGrad: input_shape");
    TW_OP_REQUIRES_OK(ctx, dims.status());
    auto shape = TensorShape::Make(*dims);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    std::vector<int64_t> size = dy.shape().dims();
    TW_OP_REQUIRES_OK(ctx, ResolveSlice(*shape, *begin, size));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    std::fill_n(out->data<T>(), out->NumElements(), T(0));
    if (shape->rank() == 0) {
      out->data<T>()[0] = dy.data<T>()[0];
    } else if (dy.NumElements() > 0) {
      CopyBox(*shape, *begin, size, dy.data<T>(), out->data<T>(), false);
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
