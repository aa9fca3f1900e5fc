// CPU kernels of the basic array ops: Const, Placeholder, Identity,
// StopGradient, NoOp, ZerosLike, OnesLike, Cast.
#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, c->GetAttr("value", &value_)); }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  bool IsExpensive() const override { return false; }
  bool OutputsFixed() const override { return true; }

 private:
  Tensor value_;
};

class PlaceholderOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  // Reached only when the placeholder is not fed: fed outputs bypass the node.
  void Compute(OpKernelContext* ctx) override {
    auto dtype = node().attrs().Get<DataType>("dtype");
    auto shape = node().attrs().Get<PartialShape>("shape");
    ctx->SetStatus(errors::InvalidArgument(
        "You must feed a value for placeholder tensor '", node().name(), "' with dtype ",
        dtype.ok() ? DataTypeName(*dtype) : "?", shape.ok() && shape->known_rank() ? " and shape " + shape->ToString() : ""));
  }
};

class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  bool IsExpensive() const override { return false; }
};

// Forwards its input after checking its shape against the `shape` attr.
class EnsureShapeOp : public OpKernel {
 public:
  explicit EnsureShapeOp(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, c->GetAttr("shape", &shape_)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    TW_OP_REQUIRES(ctx, shape_.IsCompatibleWith(PartialShape(in.shape())),
                   errors::InvalidArgument("the shape of the tensor, ", in.shape().ToString(),
                                           ", is not compatible with the expected shape ", shape_.ToString()));
    ctx->set_output(0, in);
  }
  bool IsExpensive() const override { return false; }

 private:
  PartialShape shape_;
};

class NoOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

template <typename T, int kValue>
class FillLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    std::fill_n(out->data<T>(), out->NumElements(), static_cast<T>(kValue));
  }
};
template <typename T>
using ZerosLikeOp = FillLikeOp<T, 0>;
template <typename T>
using OnesLikeOp = FillLikeOp<T, 1>;

class CastOp : public OpKernel {
 public:
  explicit CastOp(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, c->GetAttr("DstT", &dst_)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.dtype() == dst_) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t n = x.NumElements();
    TW_OP_REQUIRES_OK(ctx, DispatchNumericOrBool(x.dtype(), [&]<typename S>() {
      const S* src = x.data<S>();
      return DispatchNumericOrBool(dst_, [&]<typename D>() {
        D* dst = out->data<D>();
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src[i]);
        return Status::OK();
      });
    }));
  }

 private:
  template <typename Fn>
  static Status DispatchNumericOrBool(DataType t, Fn&& fn) {
    if (t == kBool) return fn.template operator()<bool>();
    return DispatchNumeric(t, "Cast", fn);
  }
  DataType dst_ = kFloat32;
};

}  // namespace

void RegisterArrayKernels(KernelRegistry& r) {
  r.RegisterUntyped<ConstOp>("Const", kDeviceCpu);
  r.RegisterUntyped<PlaceholderOp>("Placeholder", kDeviceCpu);
  r.RegisterUntyped<IdentityOp>("Identity", kDeviceCpu);
  r.RegisterUntyped<EnsureShapeOp>("EnsureShape", kDeviceCpu);
  r.RegisterUntyped<IdentityOp>("StopGradient", kDeviceCpu);
  r.RegisterUntyped<NoOpKernel>("NoOp", kDeviceCpu);
  r.RegisterTyped<ZerosLikeOp, float, double, int32_t, int64_t, uint8_t>("ZerosLike", kDeviceCpu);
  r.RegisterTyped<OnesLikeOp, float, double, int32_t, int64_t, uint8_t>("OnesLike", kDeviceCpu);
  r.RegisterUntyped<CastOp>("Cast", kDeviceCpu, "SrcT", {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool});
}

}  // namespace tw
