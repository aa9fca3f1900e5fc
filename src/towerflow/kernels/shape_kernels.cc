// CPU kernels of the shape-manipulating ops: Shape, Reshape, ExpandDims and
// Squeeze (views: the output shares the input's buffer), Fill, BroadcastTo,
// SumToShape. ConcatV2 and Slice are in slice_kernels.cc, registered from here.
// The argument checks are shape_util.h's, shared with the CUDA twins.
//
// Data-movement kernels are templates over the element type, so one body serves
// every dtype, strings included. Strided copies walk the outer dimensions with an
// index odometer (shape_util.h) and handle the innermost contiguous run in one go.
#include <algorithm>
#include <limits>

#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using shape_util::ForEachRun;
using shape_util::IntVector;
using shape_util::RowMajorStrides;
using shape_util::VecStr;

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
      } else if (dims[i] > 0 && known > std::numeric_limits<int64_t>::max() / dims[i]) {
        return errors::InvalidArgument("Reshape: shape ", PartialShape(dims).ToString(), " has too many elements");
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
class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, shape_util::FillOutput(ctx, &out));
    std::fill_n(out->data<T>(), out->NumElements(), ctx->input(1).scalar<T>());
  }
};

template <typename T>
class BroadcastToOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto args = shape_util::BroadcastOutput(ctx, "BroadcastTo", /*to_shape=*/true, &out);
    TW_OP_REQUIRES_OK(ctx, args.status());
    if (out == nullptr) return;  // the input, unchanged
    const TensorShape& shape = args->shape;
    const std::vector<int64_t>& strides = args->strides;
    if (out->NumElements() == 0) return;
    const T* src = x.data<T>();
    T* dst = out->data<T>();
    if (shape.rank() == 0) {
      dst[0] = src[0];
      return;
    }
    const int64_t run = shape.dims().back();
    const int64_t inner = strides.back();  // 1 or 0 (broadcast along the last axis)
    ForEachRun(shape.dims(), strides, RowMajorStrides(shape.dims()), [&](int64_t s, int64_t d) {
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
    Tensor* out = nullptr;
    auto args = shape_util::BroadcastOutput(ctx, "SumToShape", /*to_shape=*/false, &out);
    TW_OP_REQUIRES_OK(ctx, args.status());
    if (out == nullptr) return;  // the input, unchanged
    const std::vector<int64_t>& strides = args->strides;
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
    const bool inner = strides.back() != 0;
    ForEachRun(x.shape().dims(), RowMajorStrides(x.shape().dims()), strides, [&](int64_t s, int64_t d) {
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
  r.RegisterTyped<FillOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Fill", kDeviceCpu);
  r.RegisterTyped<BroadcastToOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("BroadcastTo",
                                                                                             kDeviceCpu);
  r.RegisterTyped<SumToShapeOp, float, double, int32_t, int64_t, uint8_t>("SumToShape", kDeviceCpu);
  shape_util::RegisterSliceKernels(r);
}

}  // namespace tw
