// CPU kernels of the broadcasting binary ops: Add, Sub, Mul, Div, Maximum,
// Pow, FloorDiv, FloorMod, Equal, GreaterEqual.
//
// Every op runs one loop nest from MakeBroadcastPlan (cwise_ops.h): the
// innermost collapsed dimension is a contiguous loop the compiler vectorises, in
// one of three forms (both operands advance, or one of them is a held scalar);
// the outer dimensions advance two offsets like an odometer. Large outputs are
// split over the device's intra-op threads: flat ranges when there is one
// collapsed dimension, whole rows otherwise.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/internal/exact_reciprocal.h"
#include "towerflow/kernels/register_all.h"

namespace tw {

StatusOr<BroadcastPlan> MakeBroadcastPlan(const TensorShape& x, const TensorShape& y) {
  const int rank = std::max(x.rank(), y.rank());
  struct Dim {
    int64_t size;
    bool x_broadcast;
    bool y_broadcast;
  };
  std::vector<int64_t> out(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ix = x.rank() - rank + i, iy = y.rank() - rank + i;
    const int64_t dx = ix >= 0 ? x.dim(ix) : 1;
    const int64_t dy = iy >= 0 ? y.dim(iy) : 1;
    if (dx == dy || dy == 1) {
      out[static_cast<size_t>(i)] = dx;
    } else if (dx == 1) {
      out[static_cast<size_t>(i)] = dy;
    } else {
      return errors::InvalidArgument("Incompatible shapes: ", x.ToString(), " vs ", y.ToString());
    }
  }
  // Operands with a zero dimension are valid (and empty) whatever their other
  // dimensions, so the broadcast of two of them can name a shape whose product
  // overflows int64 ([2^31,2^31,1,0] with [2^31,0]), or one whose collapsed
  // sizes would: check the shape, and compute nothing for an empty output.
  BroadcastPlan plan;
  auto out_shape = TensorShape::Make(out);
  if (!out_shape.ok()) {
    return errors::InvalidArgument("Incompatible shapes: ", x.ToString(), " vs ", y.ToString(),
                                   ": the broadcast ", out_shape.status().message());
  }
  plan.out_shape = *out_shape;
  if (plan.out_shape.num_elements() == 0) return plan;
  std::vector<Dim> kept;
  for (int i = 0; i < rank; ++i) {
    const int ix = x.rank() - rank + i, iy = y.rank() - rank + i;
    const int64_t dx = ix >= 0 ? x.dim(ix) : 1;
    const int64_t dy = iy >= 0 ? y.dim(iy) : 1;
    const int64_t d = out[static_cast<size_t>(i)];
    if (d == 1) continue;  // a size-1 output dimension moves neither operand
    const Dim cur{d, dx == 1, dy == 1};
    if (!kept.empty() && kept.back().x_broadcast == cur.x_broadcast &&
        kept.back().y_broadcast == cur.y_broadcast) {
      kept.back().size *= d;  // same broadcasting on both: one longer dimension
    } else {
      kept.push_back(cur);
    }
  }
  const size_t n = kept.size();
  plan.dims.resize(n);
  plan.x_strides.resize(n);
  plan.y_strides.resize(n);
  int64_t sx = 1, sy = 1;
  for (size_t j = n; j-- > 0;) {
    plan.dims[j] = kept[j].size;
    plan.x_strides[j] = kept[j].x_broadcast ? 0 : sx;
    plan.y_strides[j] = kept[j].y_broadcast ? 0 : sy;
    if (!kept[j].x_broadcast) sx *= kept[j].size;
    if (!kept[j].y_broadcast) sy *= kept[j].size;
  }
  return plan;
}

StatusOr<BroadcastPlan> PlanBinaryOutput(OpKernelContext* ctx, Tensor** z) {
  TW_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan(ctx->input(0).shape(), ctx->input(1).shape()));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, plan.out_shape, z));
  return plan;
}

namespace {

struct AddF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a + b); }
};
struct SubF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a - b); }
};
struct MulF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static T Apply(T a, T b) { return static_cast<T>(a * b); }
};
struct DivF {
  static constexpr int64_t kCost = 8;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      // INT_MIN / -1 overflows and traps on x86: negate with two's-complement
      // wrap-around instead, as the hardware would for every other value.
      if (b == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));
    }
    return static_cast<T>(a / b);  // integers truncate toward zero
  }
};
struct MaximumF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static T Apply(T a, T b) { return a < b ? b : a; }
};
// TF's pow: std::pow for floats; integers by squaring, wrapping around on
// overflow (the exponent's sign is checked before the loop: BinaryOp).
struct PowF {
  static constexpr int64_t kCost = 40;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      using U = std::make_unsigned_t<T>;
      U result = 1, base = static_cast<U>(a);
      for (auto e = static_cast<U>(b); e != 0; e >>= 1) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(result);
    }
  }
};
// Python's //: integers round toward negative infinity, floats floor(x / y)
// (TF's FloorDiv). Integer y = 0 is checked before the loop (BinaryOp).
struct FloorDivF {
  static constexpr int64_t kCost = 10;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return std::floor(a / b);
    } else if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));  // INT_MIN // -1 wraps
      const T q = static_cast<T>(a / b);
      return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
    } else {
      return static_cast<T>(a / b);
    }
  }
};
// Python's %: the result takes y's sign (TF's FloorMod). Integer y = 0 is
// checked before the loop (BinaryOp).
struct FloorModF {
  static constexpr int64_t kCost = 10;
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      const T trunc_mod = std::fmod(a, b);
      return (trunc_mod != 0 && ((b < 0) != (trunc_mod < 0))) ? trunc_mod + b : trunc_mod;
    } else if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;  // INT_MIN % -1 traps on x86
      const T r = static_cast<T>(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    } else {
      return static_cast<T>(a % b);
    }
  }
};
struct EqualF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static bool Apply(T a, T b) { return a == b; }
};
struct GreaterEqualF {
  static constexpr int64_t kCost = 1;
  template <typename T>
  static bool Apply(T a, T b) { return a >= b; }
};

// z[i] = f(z[i], y[i * sy]): the output took x's buffer (x is never read
// through another pointer here).
template <typename T, typename F>
void InnerLoopOverX(T* __restrict z, const T* __restrict y, int64_t sy, int64_t n) {
  if (sy != 0) {
    for (int64_t i = 0; i < n; ++i) z[i] = F::Apply(z[i], y[i]);
  } else {
    const T b = y[0];
    for (int64_t i = 0; i < n; ++i) z[i] = F::Apply(z[i], b);
  }
}
// z[i] = f(x[i * sx], z[i]): the output took y's buffer.
template <typename T, typename F>
void InnerLoopOverY(const T* __restrict x, int64_t sx, T* __restrict z, int64_t n) {
  if (sx != 0) {
    for (int64_t i = 0; i < n; ++i) z[i] = F::Apply(x[i], z[i]);
  } else {
    const T a = x[0];
    for (int64_t i = 0; i < n; ++i) z[i] = F::Apply(a, z[i]);
  }
}

// As InnerLoop, z apart from x and y.
template <typename T, typename Out, typename F>
void Separate(const T* __restrict x, int64_t sx, const T* __restrict y, int64_t sy, Out* __restrict z, int64_t n) {
  if (sx != 0 && sy != 0) {
    for (int64_t i = 0; i < n; ++i) z[i] = F::Apply(x[i], y[i]);
  } else if (sx != 0) {
    const T b = y[0];
    for (int64_t i = 0; i < n; ++i) z[i] = F::Apply(x[i], b);
  } else if (sy != 0) {
    const T a = x[0];
    for (int64_t i = 0; i < n; ++i) z[i] = F::Apply(a, y[i]);
  } else {
    std::fill_n(z, n, F::Apply(x[0], y[0]));
  }
}

// z[i] = f(x[i * sx], y[i * sy]) for i < n, with sx, sy in {0, 1}. z may be x
// or y (forwarded: BinaryOp), each element read before it is written.
template <typename T, typename Out, typename F>
void InnerLoop(const T* x, int64_t sx, const T* y, int64_t sy, Out* z, int64_t n) {
  if constexpr (std::is_same_v<T, Out>) {
    if (z == x) return InnerLoopOverX<T, F>(z, y, sy, n);
    if (z == y) return InnerLoopOverY<T, F>(x, sx, z, n);
  }
  Separate<T, Out, F>(x, sx, y, sy, z, n);
}

template <typename T, typename Out, typename F>
void RunPlan(ThreadPool* pool, const BroadcastPlan& p, const T* x, const T* y, Out* z) {
  const size_t nd = p.dims.size();
  if (nd == 0) {
    z[0] = F::Apply(x[0], y[0]);
    return;
  }
  const int64_t inner = p.dims[nd - 1];
  const int64_t sx = p.x_strides[nd - 1], sy = p.y_strides[nd - 1];
  if (nd == 1) {
    ShardedFor(pool, inner, F::kCost, [&](int64_t b, int64_t e) {
      InnerLoop<T, Out, F>(x + b * sx, sx, y + b * sy, sy, z + b, e - b);
    });
    return;
  }
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d) rows *= p.dims[d];
  ShardedFor(pool, rows, inner * F::kCost, [&](int64_t b, int64_t e) {
    BroadcastWalker outer(p, nd - 1, b);  // the outer dimensions, from row b
    for (int64_t r = b; r < e; ++r, outer.Next()) {
      InnerLoop<T, Out, F>(x + outer.x(), sx, y + outer.y(), sy, z + r * inner, inner);
    }
  });
}

template <typename T, typename Out, typename F>
class BinaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    Tensor* z = nullptr;
    auto plan = MakeBroadcastPlan(x.shape(), y.shape());
    TW_OP_REQUIRES_OK(ctx, plan.status());
    if constexpr (std::is_same_v<T, Out>) {
      // An input of the output's shape may lend its buffer (InnerLoop).
      TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0, 1}, 0, plan->out_shape, &z));
    } else {
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &z));
    }
    if (z->NumElements() == 0) return;
    const T* yv = y.data<T>();
    constexpr bool kDivides = std::is_same_v<F, DivF> || std::is_same_v<F, FloorDivF> || std::is_same_v<F, FloorModF>;
    if constexpr (kDivides && std::is_integral_v<T>) {
      const int64_t n = y.NumElements();
      TW_OP_REQUIRES(ctx, std::find(yv, yv + n, T(0)) == yv + n,
                     errors::InvalidArgument("Integer division by zero: the divisor ", ctx->input_name(1),
                                             " of shape ", y.shape().ToString(), " holds a 0"));
    }
    if constexpr (std::is_same_v<F, PowF> && std::is_integral_v<T> && std::is_signed_v<T>) {
      const int64_t n = y.NumElements();
      TW_OP_REQUIRES(ctx, std::none_of(yv, yv + n, [](T e) { return e < 0; }),
                     errors::InvalidArgument("Integers to negative integer powers are not allowed: the exponent ",
                                             ctx->input_name(1), " of shape ", y.shape().ToString(),
                                             " holds a negative value"));
    }
    if constexpr (std::is_same_v<F, DivF> && std::is_floating_point_v<T>) {
      // A divisor of one element that is a power of two divides as a
      // multiplication by its reciprocal, the same bits (exact_reciprocal.h).
      if (y.NumElements() == 1 && internal::ReciprocalIsExact(yv[0])) {
        const T reciprocal = T(1) / yv[0];
        RunPlan<T, Out, MulF>(ctx->intra_op_pool(), *plan, x.data<T>(), &reciprocal, z->data<Out>());
        return;
      }
    }
    RunPlan<T, Out, F>(ctx->intra_op_pool(), *plan, x.data<T>(), yv, z->data<Out>());
  }
};

template <typename T>
using AddOp = BinaryOp<T, T, AddF>;
template <typename T>
using SubOp = BinaryOp<T, T, SubF>;
template <typename T>
using MulOp = BinaryOp<T, T, MulF>;
template <typename T>
using DivOp = BinaryOp<T, T, DivF>;
template <typename T>
using MaximumOp = BinaryOp<T, T, MaximumF>;
template <typename T>
using PowOp = BinaryOp<T, T, PowF>;
template <typename T>
using FloorDivOp = BinaryOp<T, T, FloorDivF>;
template <typename T>
using FloorModOp = BinaryOp<T, T, FloorModF>;
template <typename T>
using EqualOp = BinaryOp<T, bool, EqualF>;
template <typename T>
using GreaterEqualOp = BinaryOp<T, bool, GreaterEqualF>;

}  // namespace

void RegisterCwiseBinaryKernels(KernelRegistry& r) {
  r.RegisterTyped<AddOp, float, double, int32_t, int64_t, uint8_t>("Add", kDeviceCpu);
  r.RegisterTyped<SubOp, float, double, int32_t, int64_t, uint8_t>("Sub", kDeviceCpu);
  r.RegisterTyped<MulOp, float, double, int32_t, int64_t, uint8_t>("Mul", kDeviceCpu);
  r.RegisterTyped<DivOp, float, double, int32_t, int64_t, uint8_t>("Div", kDeviceCpu);
  r.RegisterTyped<MaximumOp, float, double, int32_t, int64_t, uint8_t>("Maximum", kDeviceCpu);
  r.RegisterTyped<PowOp, float, double, int32_t, int64_t>("Pow", kDeviceCpu);
  r.RegisterTyped<FloorDivOp, float, double, int32_t, int64_t, uint8_t>("FloorDiv", kDeviceCpu);
  r.RegisterTyped<FloorModOp, float, double, int32_t, int64_t, uint8_t>("FloorMod", kDeviceCpu);
  r.RegisterTyped<EqualOp, float, double, int32_t, int64_t, uint8_t, bool>("Equal", kDeviceCpu);
  r.RegisterTyped<GreaterEqualOp, float, double, int32_t, int64_t, uint8_t>("GreaterEqual", kDeviceCpu);
}

}  // namespace tw
