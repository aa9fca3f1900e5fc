// CUDA kernels of the element-wise math ops, float and double, and int64 for
// the comparisons (the int32 variants run on the host: another family
// registers them). CPU twins:
// cwise_binary.cc (Add, Sub, Mul, Div, Maximum, Pow, FloorDiv, FloorMod,
// Equal, GreaterEqual),
// cwise_unary.cc (Neg, Square, Sqrt, Exp, Log, Log1p, Sigmoid, Tanh) and AddN in
// math_kernels.cc.
//
// - BinaryFlatKernel<T, Out, F, kMode>: z[i] = f(x[i], y[i]), f(x[0], y[i]) or
//   f(x[i], y[0]); a grid-stride loop over the output. The fast path for
//   same-shape and scalar operands, where the broadcast plan has at most one
//   collapsed dimension (the common case in training).
// - BinaryBroadcastKernel<T, Out, F>: every other broadcast; a grid-stride loop
//   over the output, each thread mapping its flat index to the two operands'
//   offsets through up to kMaxDims collapsed dimensions and strides passed by
//   value. A plan with more collapsed dimensions (rank > 8 with alternating
//   broadcasts: rare) launches once per index of its outer dimensions.
// - UnaryKernel<T, F>: a grid-stride loop over the elements.
// - AddNKernel<T>: a grid-stride loop over the elements summing up to
//   kMaxAddNInputs inputs left to right; more inputs add into the output over
//   further launches, so the rounding is the CPU twin's (((a + b) + c) + ...).
//
// - ScaleBytesKernel: Cast (uint8 -> float32) fused into Mul by a one-element
//   factor read from device memory (runtime/fusion.h; the CPU twin is
//   cast_fusions.cc's CastMulOp): the model's pixels * 1/255 as one pass over
//   the bytes, each element Cast's exact conversion then Mul's one product,
//   so the output is the unfused one bit for bit.
//
// Shapes are checked on the host with the CPU twins' own MakeBroadcastPlan
// and CheckAddNInputs (cwise_ops.h), so both devices accept the same shapes
// and fail with the same messages. Float division by zero is IEEE (inf or
// NaN) on both.
#include <algorithm>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;

// ---- Functors: the same formulas as the CPU twins' --------------------------

struct AddF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    return a + b;
  }
};
struct SubF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    return a - b;
  }
};
struct MulF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    return a * b;
  }
};
// IEEE-rounded (nvcc's default -prec-div=true): x / 0 is inf or NaN, as on the CPU.
struct DivF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    return a / b;
  }
};
struct MaximumF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    return a < b ? b : a;
  }
};
// CUDA's pow, floor and fmod: correctly rounded floor and fmod (exact, as the
// CPU's); pow within the libdevice's 1-2 ulp, where glibc's is within 1.
struct PowF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    return pow(a, b);
  }
};
struct FloorDivF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    return floor(a / b);
  }
};
struct FloorModF {
  template <typename T>
  __device__ static T Apply(T a, T b) {
    const T trunc_mod = fmod(a, b);
    return (trunc_mod != T(0) && ((b < T(0)) != (trunc_mod < T(0)))) ? trunc_mod + b : trunc_mod;
  }
};
struct EqualF {
  template <typename T>
  __device__ static bool Apply(T a, T b) {
    return a == b;
  }
};
struct GreaterEqualF {
  template <typename T>
  __device__ static bool Apply(T a, T b) {
    return a >= b;
  }
};

struct NegF {
  template <typename T>
  __device__ static T Apply(T x) {
    return -x;
  }
};
struct SquareF {
  template <typename T>
  __device__ static T Apply(T x) {
    return x * x;
  }
};
struct SqrtF {
  template <typename T>
  __device__ static T Apply(T x) {
    return cuda_util::Sqrt(x);
  }
};
struct ExpF {
  template <typename T>
  __device__ static T Apply(T x) {
    return cuda_util::Exp(x);
  }
};
struct LogF {
  template <typename T>
  __device__ static T Apply(T x) {
    return cuda_util::Log(x);
  }
};
struct Log1pF {
  template <typename T>
  __device__ static T Apply(T x) {
    return cuda_util::Log1p(x);
  }
};
struct SigmoidF {
  // 1 / (1 + e^-x): e^-x overflows to inf for very negative x, giving the limit
  // 0 rather than a NaN (as on the CPU).
  template <typename T>
  __device__ static T Apply(T x) {
    return T(1) / (T(1) + cuda_util::Exp(-x));
  }
};
struct TanhF {
  template <typename T>
  __device__ static T Apply(T x) {
    return cuda_util::Tanh(x);
  }
};

// ---- Binary ops ---------------------------------------------------------------

// Which operand advances in the flat kernel; a held scalar is read once.
enum class FlatMode { kBoth, kScalarX, kScalarY };

template <typename T, typename Out, typename F, FlatMode kMode>
__global__ void BinaryFlatKernel(const T* __restrict__ x, const T* __restrict__ y, Out* __restrict__ z,
                                 int64_t n) {
  const int64_t stride = GridThreadCount();
  if constexpr (kMode == FlatMode::kBoth) {
    for (int64_t i = GridThreadIndex(); i < n; i += stride) z[i] = F::Apply(x[i], y[i]);
  } else if constexpr (kMode == FlatMode::kScalarX) {
    const T a = x[0];
    for (int64_t i = GridThreadIndex(); i < n; i += stride) z[i] = F::Apply(a, y[i]);
  } else {
    const T b = y[0];
    for (int64_t i = GridThreadIndex(); i < n; i += stride) z[i] = F::Apply(x[i], b);
  }
}

template <typename T, typename Out, typename F, FlatMode kMode>
Status LaunchBinaryFlat(const GpuDevice& gpu, const T* x, const T* y, Out* z, int64_t n) {
  return LaunchGridStride(gpu, n, BinaryFlatKernel<T, Out, F, kMode>, x, y, z, n);
}

constexpr int kMaxDims = 8;

// The innermost `kMaxDims` (or fewer) collapsed dimensions of a BroadcastPlan,
// right-aligned: unused outer slots have size 1 and stride 0, so the kernel's
// loop has a fixed trip count and the arrays stay in registers.
struct BroadcastStrides {
  int64_t dims[kMaxDims];
  int64_t x[kMaxDims];
  int64_t y[kMaxDims];
};

template <typename T, typename Out, typename F>
__global__ void BinaryBroadcastKernel(const T* __restrict__ x, const T* __restrict__ y, Out* __restrict__ z,
                                      int64_t n, BroadcastStrides s) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) {
    int64_t rem = i, xo = 0, yo = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (s.dims[d] == 1) continue;  // an unused slot (real collapsed dims are >= 2)
      const int64_t q = rem / s.dims[d];
      const int64_t idx = rem - q * s.dims[d];
      xo += idx * s.x[d];
      yo += idx * s.y[d];
      rem = q;
    }
    z[i] = F::Apply(x[xo], y[yo]);
  }
}

template <typename T, typename Out, typename F>
Status LaunchBinaryBroadcast(const GpuDevice& gpu, const T* x, const T* y, Out* z, int64_t n,
                             const BroadcastStrides& strides) {
  return LaunchGridStride(gpu, n, BinaryBroadcastKernel<T, Out, F>, x, y, z, n, strides);
}

// Queues z = f(x, y) under plan `p`. REQUIRES: p.out_shape has elements.
template <typename T, typename Out, typename F>
Status LaunchBinary(const GpuDevice& gpu, const BroadcastPlan& p, const T* x, const T* y, Out* z) {
  const int64_t n = p.out_shape.num_elements();
  const size_t nd = p.dims.size();
  if (nd == 0) return LaunchBinaryFlat<T, Out, F, FlatMode::kBoth>(gpu, x, y, z, 1);  // one element each
  if (nd == 1) {
    // A collapsed dimension never broadcasts both operands (its size is >= 2).
    if (p.x_strides[0] == 0) return LaunchBinaryFlat<T, Out, F, FlatMode::kScalarX>(gpu, x, y, z, n);
    if (p.y_strides[0] == 0) return LaunchBinaryFlat<T, Out, F, FlatMode::kScalarY>(gpu, x, y, z, n);
    return LaunchBinaryFlat<T, Out, F, FlatMode::kBoth>(gpu, x, y, z, n);
  }
  // The innermost kMaxDims dimensions go to the kernel; any outer ones are
  // walked here (BroadcastWalker, cwise_ops.h), one launch per outer index.
  const size_t outer = nd > kMaxDims ? nd - kMaxDims : 0;
  const int used = static_cast<int>(nd - outer);  // slots [kMaxDims - used, kMaxDims)
  BroadcastStrides s;
  int64_t inner_n = 1;
  for (int k = 0; k < kMaxDims; ++k) {
    const int j = k - (kMaxDims - used);
    const size_t src = outer + static_cast<size_t>(std::max(j, 0));
    s.dims[k] = j >= 0 ? p.dims[src] : 1;
    s.x[k] = j >= 0 ? p.x_strides[src] : 0;
    s.y[k] = j >= 0 ? p.y_strides[src] : 0;
    inner_n *= s.dims[k];
  }
  if (outer == 0) return LaunchBinaryBroadcast<T, Out, F>(gpu, x, y, z, n, s);
  BroadcastWalker launches(p, outer, 0);
  for (int64_t zo = 0; zo < n; zo += inner_n, launches.Next()) {
    TW_RETURN_IF_ERROR(
        (LaunchBinaryBroadcast<T, Out, F>(gpu, x + launches.x(), y + launches.y(), z + zo, inner_n, s)));
  }
  return Status::OK();
}

template <typename T, typename Out, typename F>
class GpuBinaryOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor* z = nullptr;
    auto plan = PlanBinaryOutput(ctx, &z);  // the CPU twin's (cwise_ops.h)
    TW_OP_REQUIRES_OK(ctx, plan.status());
    if (z->NumElements() == 0) return;
    TW_OP_REQUIRES_OK(ctx, (LaunchBinary<T, Out, F>(gpu, *plan, ctx->input(0).data<T>(),
                                                    ctx->input(1).data<T>(), z->data<Out>())));
  }
};

template <typename T>
using AddOp = GpuBinaryOp<T, T, AddF>;
template <typename T>
using SubOp = GpuBinaryOp<T, T, SubF>;
template <typename T>
using MulOp = GpuBinaryOp<T, T, MulF>;
template <typename T>
using DivOp = GpuBinaryOp<T, T, DivF>;
template <typename T>
using MaximumOp = GpuBinaryOp<T, T, MaximumF>;
template <typename T>
using PowOp = GpuBinaryOp<T, T, PowF>;
template <typename T>
using FloorDivOp = GpuBinaryOp<T, T, FloorDivF>;
template <typename T>
using FloorModOp = GpuBinaryOp<T, T, FloorModF>;
template <typename T>
using EqualOp = GpuBinaryOp<T, bool, EqualF>;
template <typename T>
using GreaterEqualOp = GpuBinaryOp<T, bool, GreaterEqualF>;

// ---- Unary ops ------------------------------------------------------------------

template <typename T, typename F>
__global__ void UnaryKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) y[i] = F::Apply(x[i]);
}

template <typename T, typename F>
Status LaunchUnary(const GpuDevice& gpu, const T* x, T* y, int64_t n) {
  return LaunchGridStride(gpu, n, UnaryKernel<T, F>, x, y, n);
}

template <typename T, typename F>
class GpuUnaryOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* y = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    const int64_t n = x.NumElements();
    if (n == 0) return;
    TW_OP_REQUIRES_OK(ctx, (LaunchUnary<T, F>(gpu, x.data<T>(), y->data<T>(), n)));
  }
};

template <typename T>
using NegOp = GpuUnaryOp<T, NegF>;
template <typename T>
using SquareOp = GpuUnaryOp<T, SquareF>;
template <typename T>
using SqrtOp = GpuUnaryOp<T, SqrtF>;
template <typename T>
using ExpOp = GpuUnaryOp<T, ExpF>;
template <typename T>
using LogOp = GpuUnaryOp<T, LogF>;
template <typename T>
using Log1pOp = GpuUnaryOp<T, Log1pF>;
template <typename T>
using SigmoidOp = GpuUnaryOp<T, SigmoidF>;
template <typename T>
using TanhOp = GpuUnaryOp<T, TanhF>;

// ---- AddN -------------------------------------------------------------------------

constexpr int kMaxAddNInputs = 8;

// Up to kMaxAddNInputs input pointers, passed by value.
template <typename T>
struct AddNInputs {
  const T* in[kMaxAddNInputs];
  int count;
};

// z[i] = in[0][i] + ... + in[count-1][i], or z[i] + in[0][i] + ... when
// `accumulate` (a later group of inputs).
template <typename T>
__global__ void AddNKernel(AddNInputs<T> inputs, T* __restrict__ z, int64_t n, bool accumulate) {
  const int first = accumulate ? 0 : 1;
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) {
    T acc = accumulate ? z[i] : inputs.in[0][i];
#pragma unroll
    for (int k = 0; k < kMaxAddNInputs; ++k) {
      if (k >= first && k < inputs.count) acc = acc + inputs.in[k][i];
    }
    z[i] = acc;
  }
}

template <typename T>
Status LaunchAddN(const GpuDevice& gpu, const AddNInputs<T>& inputs, T* z, int64_t n, bool accumulate) {
  return LaunchGridStride(gpu, n, AddNKernel<T>, inputs, z, n, accumulate);
}

template <typename T>
class GpuAddNOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    TW_OP_REQUIRES_OK(ctx, CheckAddNInputs(ctx));  // the CPU twin's checks (cwise_ops.h)
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    if (n == 1) {
      ctx->set_output(0, first);  // the input's device buffer, as on the CPU
      return;
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, first.shape(), &out));
    const int64_t elements = first.NumElements();
    if (elements == 0) return;
    for (int begin = 0; begin < n; begin += kMaxAddNInputs) {
      AddNInputs<T> group{};
      group.count = std::min(kMaxAddNInputs, n - begin);
      for (int k = 0; k < group.count; ++k) group.in[k] = ctx->input(begin + k).template data<T>();
      TW_OP_REQUIRES_OK(ctx, LaunchAddN<T>(gpu, group, out->data<T>(), elements, begin > 0));
    }
  }
};


__global__ void ScaleBytesKernel(const uint8_t* __restrict__ x, const float* __restrict__ factor,
                                 float* __restrict__ out, int64_t n) {
  const float f = *factor;
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) out[i] = static_cast<float>(x[i]) * f;
}

// Cast -> Mul (the file comment's ScaleBytesKernel): inputs Cast's x, Mul's
// factor; Mul's output, shape and errors.
class GpuCastMulOp : public GpuOpKernel {
 public:
  GpuCastMulOp(OpKernelConstruction* c, const Node&) : GpuOpKernel(c) {}
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, PlanCastMulOutput(ctx, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchGridStride(gpu, n, ScaleBytesKernel, ctx->input(0).data<uint8_t>(),
                                            ctx->input(1).data<float>(), out->data<float>(), n));
  }
};

}  // namespace

void RegisterCwiseCudaKernels(KernelRegistry& r, const KernelRegistry& cpu) {
  r.RegisterFusion(FusionDef{"Cast", "Mul", 0, kDeviceGpu, {kFloat32},
                             [](OpKernelConstruction* c, const Node& consumer) -> std::unique_ptr<OpKernel> {
                               return std::make_unique<GpuCastMulOp>(c, consumer);
                             },
                             CastMulApplies});
  r.RegisterTyped<AddOp, float, double>("Add", kDeviceGpu);
  r.RegisterTyped<SubOp, float, double>("Sub", kDeviceGpu);
  r.RegisterTyped<MulOp, float, double>("Mul", kDeviceGpu);
  r.RegisterTyped<DivOp, float, double>("Div", kDeviceGpu);
  r.RegisterTyped<MaximumOp, float, double>("Maximum", kDeviceGpu);
  r.RegisterTyped<PowOp, float, double>("Pow", kDeviceGpu);
  r.RegisterTyped<FloorDivOp, float, double>("FloorDiv", kDeviceGpu);
  r.RegisterTyped<FloorModOp, float, double>("FloorMod", kDeviceGpu);
  // int64 too: ArgMax's indices against int64 labels (accuracy) stay on the GPU.
  r.RegisterTyped<EqualOp, float, double, int64_t>("Equal", kDeviceGpu);
  r.RegisterTyped<GreaterEqualOp, float, double, int64_t>("GreaterEqual", kDeviceGpu);
  r.RegisterTyped<NegOp, float, double>("Neg", kDeviceGpu);
  r.RegisterTyped<SquareOp, float, double>("Square", kDeviceGpu);
  r.RegisterTyped<SqrtOp, float, double>("Sqrt", kDeviceGpu);
  r.RegisterTyped<ExpOp, float, double>("Exp", kDeviceGpu);
  r.RegisterTyped<LogOp, float, double>("Log", kDeviceGpu);
  r.RegisterTyped<Log1pOp, float, double>("Log1p", kDeviceGpu);
  r.RegisterTyped<SigmoidOp, float, double>("Sigmoid", kDeviceGpu);
  r.RegisterTyped<TanhOp, float, double>("Tanh", kDeviceGpu);
  r.RegisterTyped<GpuAddNOp, float, double>("AddN", kDeviceGpu);
}

}  // namespace tw
