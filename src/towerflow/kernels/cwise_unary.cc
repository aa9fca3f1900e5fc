// CPU kernels of the element-wise unary ops: Neg, Square, Sqrt, Exp, Log, Log1p,
// Sigmoid, Tanh. Each is one flat loop over contiguous memory, split over the
// device's intra-op threads when the tensor is large (the transcendental ones
// count as ~20 cycles per element, so they split sooner).
#include <cmath>
#include <type_traits>

#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

struct NegF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static T Apply(T x) {
    // Negating INT_MIN overflows: wrap around as two's complement does.
    if constexpr (std::is_integral_v<T>) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x));
    return -x;
  }
};
struct SquareF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static T Apply(T x) { return static_cast<T>(x * x); }
};
struct SqrtF {
  static constexpr int64_t kCost = 8;
  template <typename T>
  static T Apply(T x) { return std::sqrt(x); }
};
struct ExpF {
  static constexpr int64_t kCost = 20;
  template <typename T>
  static T Apply(T x) { return std::exp(x); }
};
struct LogF {
  static constexpr int64_t kCost = 20;
  template <typename T>
  static T Apply(T x) { return std::log(x); }
};
struct Log1pF {
  static constexpr int64_t kCost = 20;
  template <typename T>
  static T Apply(T x) { return std::log1p(x); }
};
struct SigmoidF {
  static constexpr int64_t kCost = 25;
  // 1 / (1 + e^-x): e^-x overflows to inf for x < -88 (float), giving the
  // correct limit 0 rather than a NaN.
  template <typename T>
  static T Apply(T x) { return T(1) / (T(1) + std::exp(-x)); }
};
struct TanhF {
  static constexpr int64_t kCost = 25;
  template <typename T>
  static T Apply(T x) { return std::tanh(x); }
};

template <typename T, typename F>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    const T* __restrict in = x.data<T>();
    T* __restrict out = y->data<T>();
    ShardedFor(ctx->intra_op_pool(), x.NumElements(), F::kCost, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = F::Apply(in[i]);
    });
  }
};

template <typename T>
using NegOp = UnaryOp<T, NegF>;
template <typename T>
using SquareOp = UnaryOp<T, SquareF>;
template <typename T>
using SqrtOp = UnaryOp<T, SqrtF>;
template <typename T>
using ExpOp = UnaryOp<T, ExpF>;
template <typename T>
using LogOp = UnaryOp<T, LogF>;
template <typename T>
using Log1pOp = UnaryOp<T, Log1pF>;
template <typename T>
using SigmoidOp = UnaryOp<T, SigmoidF>;
template <typename T>
using TanhOp = UnaryOp<T, TanhF>;

}  // namespace

void RegisterCwiseUnaryKernels(KernelRegistry& r) {
  r.RegisterTyped<NegOp, float, double, int32_t, int64_t>("Neg", kDeviceCpu);
  r.RegisterTyped<SquareOp, float, double, int32_t, int64_t, uint8_t>("Square", kDeviceCpu);
  r.RegisterTyped<SqrtOp, float, double>("Sqrt", kDeviceCpu);
  r.RegisterTyped<ExpOp, float, double>("Exp", kDeviceCpu);
  r.RegisterTyped<LogOp, float, double>("Log", kDeviceCpu);
  r.RegisterTyped<Log1pOp, float, double>("Log1p", kDeviceCpu);
  r.RegisterTyped<SigmoidOp, float, double>("Sigmoid", kDeviceCpu);
  r.RegisterTyped<TanhOp, float, double>("Tanh", kDeviceCpu);
}

}  // namespace tw
