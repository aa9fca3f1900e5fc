// CPU kernels of the shape-manipulating ops: Shape, Reshape, ExpandDims and
// Squeeze (views: the output shares the input's buffer), ConcatV2, ConcatOffset,
// Slice, SliceGrad, Fill, BroadcastTo, SumToShape.
//
// Data-movement kernels are templates over the element type, so one body serves
// every dtype, strings included (elements are copied, not memcpy'd). Strided
// copies walk the outer dimensions with an index odometer and copy the innermost
// contiguous run in one go.
#include <algorithm>
#include <cstring>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

std::string VecStr(const std::vector<int64_t>& v) { return TensorShape(v).ToString(); }

// The int32 vector in input i (a shape, begin or size), or InvalidArgument.
StatusOr<std::vector<int64_t>> IntVector(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.rank() != 1 || t.dtype() != kInt32) {
    return errors::InvalidArgument(what, " must be an int32 vector, got ", t.DebugString());
  }
  std::vector<int64_t> v(static_cast<size_t>(t.NumElements()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = t.data<int32_t>()[k];
  return v;
}

// Calls fn(src_offset, dst_offset) for each innermost run of a copy of the box
// `size` (row-major), with element strides of source and destination per axis.
// REQUIRES: size is non-empty (rank >= 1).
template <typename Fn>
void ForEachRun(const std::vector<int64_t>& size, const std::vector<int64_t>& src_stride,
                const std::vector<int64_t>& dst_stride, Fn&& fn) {
  const int rank = static_cast<int>(size.size());
  for (int64_t s : size) {
    if (s == 0) return;
  }
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t src = 0, dst = 0;
  for (;;) {
    fn(src, dst);
    int a = rank - 2;
    for (; a >= 0; --a) {
      const size_t k = static_cast<size_t>(a);
      if (++idx[k] < size[k]) {
        src += src_stride[k];
        dst += dst_stride[k];
        break;
      }
      src -= src_stride[k] * (size[k] - 1);
      dst -= dst_stride[k] * (size[k] - 1);
      idx[k] = 0;
    }
    if (a < 0) return;
  }
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  }
  return s;
}

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& s = ctx->input(0).shape();
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{s.rank()}, &out));
    for (int i = 0; i < s.rank(); ++i) out->data<int32_t>()[i] = static_cast<int32_t>(s.dim(i));
  }
  bool IsExpensive() const override { return false; }
};

// Base of the view ops: subclasses compute the output shape; the output shares
// the input's buffer.
class ViewOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto shape = OutputShape(ctx);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    auto view = ctx->input(0).Reshaped(*shape);
    TW_OP_REQUIRES_OK(ctx, view.status());
    ctx->set_output(0, std::move(view).value());
  }
  bool IsExpensive() const override { return false; }

 protected:
  virtual StatusOr<TensorShape> OutputShape(OpKernelContext* ctx) const = 0;
};

class ReshapeOp : public ViewOp {
 public:
  using ViewOp::ViewOp;

 protected:
  StatusOr<TensorShape> OutputShape(OpKernelContext* ctx) const override {
    TW_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntVector(ctx, 1, "Reshape: shape"));
    const TensorShape& in = ctx->input(0).shape();
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == -1 && infer < 0) {
        infer = static_cast<int>(i);
      } else if (dims[i] < 0) {
        return errors::InvalidArgument("Reshape: shape ", PartialShape(dims).ToString(),
                                       " has a negative dimension or more than one -1");
      } else {
        known *= dims[i];
      }
    }
    const int64_t n = in.num_elements();
    if (infer >= 0) {
      if (known == 0 || n % known != 0) {
        return errors::InvalidArgument("Reshape: cannot reshape a tensor of shape ", in.ToString(), " (", n,
                                       " elements) to shape ", PartialShape(dims).ToString(), ": ", n,
                                       " is not a multiple of ", known);
      }
      dims[static_cast<size_t>(infer)] = n / known;
    } else if (known != n) {
      return errors::InvalidArgument("Reshape: cannot reshape a tensor of shape ", in.ToString(), " (", n,
                                     " elements) to shape ", VecStr(dims), " (", known, " elements)");
    }
    return TensorShape::Make(dims);
  }
};

class ExpandDimsOp : public ViewOp {
 public:
  using ViewOp::ViewOp;

 protected:
  StatusOr<TensorShape> OutputShape(OpKernelContext* ctx) const override {
    const Tensor& dim = ctx->input(1);
    TensorShape out = ctx->input(0).shape();
    if (dim.dtype() != kInt32 || dim.NumElements() != 1) {
      return errors::InvalidArgument("ExpandDims: 'dim' must be one int32, got ", dim.DebugString());
    }
    int64_t d = dim.data<int32_t>()[0];
    if (d < -out.rank() - 1 || d > out.rank()) {
      return errors::InvalidArgument("ExpandDims: dim ", d, " is out of range [", -out.rank() - 1, ", ",
                                     out.rank(), "] for input of shape ", out.ToString());
    }
    if (d < 0) d += out.rank() + 1;
    out.InsertDim(static_cast<int>(d), 1);
    return out;
  }
};

class SqueezeOp : public ViewOp {
 public:
  explicit SqueezeOp(OpKernelConstruction* c) : ViewOp(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("squeeze_dims", &axes_));
  }

 protected:
  StatusOr<TensorShape> OutputShape(OpKernelContext* ctx) const override {
    const TensorShape& in = ctx->input(0).shape();
    std::vector<bool> drop(static_cast<size_t>(in.rank()), axes_.empty());
    for (int64_t a : axes_) {
      if (a < -in.rank() || a >= in.rank()) {
        return errors::InvalidArgument("Squeeze: axis ", a, " is out of range for input of shape ", in.ToString());
      }
      if (a < 0) a += in.rank();
      if (in.dim(static_cast<int>(a)) != 1) {
        return errors::InvalidArgument("Squeeze: cannot squeeze axis ", a, " of input of shape ", in.ToString(),
                                       ": its size is not 1");
      }
      drop[static_cast<size_t>(a)] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      if (!drop[static_cast<size_t>(i)] || in.dim(i) != 1) dims.push_back(in.dim(i));
    }
    return TensorShape(dims);
  }

 private:
  std::vector<int64_t> axes_;
};

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
    TensorShape out_shape = first;
    int64_t axis_size = 0;
    for (int i = 0; i < n; ++i) {
      const TensorShape& s = ctx->input(i).shape();
      bool ok = s.rank() == rank;
      for (int d = 0; ok && d < rank; ++d) ok = d == axis || s.dim(d) == first.dim(d);
      TW_OP_REQUIRES(ctx, ok,
                     errors::InvalidArgument("ConcatV2: value shapes ", first.ToString(), " and ", s.ToString(),
                                             " differ outside axis ", axis));
      axis_size += s.dim(static_cast<int>(axis));
    }
    out_shape.set_dim(static_cast<int>(axis), axis_size);
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

template <typename T>
class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto dims = IntVector(ctx, 0, "Fill: dims");
    TW_OP_REQUIRES_OK(ctx, dims.status());
    const Tensor& value = ctx->input(1);
    TW_OP_REQUIRES(ctx, value.rank() == 0,
                   errors::InvalidArgument("Fill: value must be a scalar, got shape ", value.shape().ToString()));
    auto shape = TensorShape::Make(*dims);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    std::fill_n(out->data<T>(), out->NumElements(), value.scalar<T>());
  }
};

// Aligns `small` (right-aligned, numpy rules) to `big`: strides of `small`
// per axis of `big`, 0 along broadcast axes. InvalidArgument naming both
// shapes when `small` does not broadcast to `big`.
StatusOr<std::vector<int64_t>> BroadcastStrides(const char* op, const TensorShape& small, const TensorShape& big) {
  auto fail = [&] {
    return errors::InvalidArgument(op, ": shape ", small.ToString(), " is not broadcast-compatible with ",
                                   big.ToString());
  };
  if (small.rank() > big.rank()) return fail();
  const int off = big.rank() - small.rank();
  std::vector<int64_t> strides(static_cast<size_t>(big.rank()), 0);
  const std::vector<int64_t> own = RowMajorStrides(small.dims());
  for (int i = 0; i < small.rank(); ++i) {
    if (small.dim(i) == big.dim(i + off)) {
      strides[static_cast<size_t>(i + off)] = own[static_cast<size_t>(i)];
    } else if (small.dim(i) != 1) {
      return fail();
    }
  }
  return strides;
}

template <typename T>
class BroadcastToOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    auto dims = IntVector(ctx, 1, "BroadcastTo: shape");
    TW_OP_REQUIRES_OK(ctx, dims.status());
    auto shape = TensorShape::Make(*dims);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    auto strides = BroadcastStrides("BroadcastTo", x.shape(), *shape);
    TW_OP_REQUIRES_OK(ctx, strides.status());
    if (*shape == x.shape()) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    if (out->NumElements() == 0) return;
    const T* src = x.data<T>();
    T* dst = out->data<T>();
    if (shape->rank() == 0) {
      dst[0] = src[0];
      return;
    }
    const int64_t run = shape->dims().back();
    const int64_t inner = strides->back();  // 1 or 0 (broadcast along the last axis)
    ForEachRun(shape->dims(), *strides, RowMajorStrides(shape->dims()), [&](int64_t s, int64_t d) {
      if (inner == 0) {
        std::fill_n(dst + d, run, src[s]);
      } else {
        std::copy_n(src + s, run, dst + d);
      }
    });
  }
};

template <typename T>
class SumToShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    auto dims = IntVector(ctx, 1, "SumToShape: shape");
    TW_OP_REQUIRES_OK(ctx, dims.status());
    auto shape = TensorShape::Make(*dims);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    auto strides = BroadcastStrides("SumToShape", *shape, x.shape());
    TW_OP_REQUIRES_OK(ctx, strides.status());
    if (*shape == x.shape()) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* __restrict dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), T(0));
    if (x.NumElements() == 0) return;
    const T* __restrict src = x.data<T>();
    if (x.rank() == 0) {
      dst[0] = src[0];
      return;
    }
    // Adjoint of BroadcastTo: every x element adds into the element it was
    // broadcast from. Along the last axis either both advance (a vectorised add)
    // or the output stays put (a sum).
    const int64_t run = x.shape().dims().back();
    const bool inner = strides->back() != 0;
    ForEachRun(x.shape().dims(), RowMajorStrides(x.shape().dims()), *strides, [&](int64_t s, int64_t d) {
      if (inner) {
        for (int64_t k = 0; k < run; ++k) dst[d + k] += src[s + k];
      } else {
        T acc = T(0);
        for (int64_t k = 0; k < run; ++k) acc += src[s + k];
        dst[d] += acc;
      }
    });
  }
};

}  // namespace

void RegisterShapeKernels(KernelRegistry& r) {
  r.RegisterUntyped<ShapeOp>("Shape", kDeviceCpu);
  r.RegisterUntyped<ReshapeOp>("Reshape", kDeviceCpu);
  r.RegisterUntyped<ExpandDimsOp>("ExpandDims", kDeviceCpu);
  r.RegisterUntyped<SqueezeOp>("Squeeze", kDeviceCpu);
  r.RegisterUntyped<ConcatOffsetOp>("ConcatOffset", kDeviceCpu);
  r.RegisterTyped<ConcatOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("ConcatV2", kDeviceCpu);
  r.RegisterTyped<SliceOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Slice", kDeviceCpu);
  r.RegisterTyped<FillOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Fill", kDeviceCpu);
  r.RegisterTyped<BroadcastToOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("BroadcastTo",
                                                                                             kDeviceCpu);
  r.RegisterTyped<SliceGradOp, float, double, int32_t, int64_t, uint8_t>("SliceGrad", kDeviceCpu);
  r.RegisterTyped<SumToShapeOp, float, double, int32_t, int64_t, uint8_t>("SumToShape", kDeviceCpu);
}

}  // namespace tw
