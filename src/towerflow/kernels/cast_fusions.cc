// Cast -> Mul by a one-element factor, fused on the CPU (runtime/fusion.h):
// the scaling of bytes to floats at the head of a model (towerflow train's
// pixels * 1/255, in each tower, after the shuffle queue has moved bytes
// rather than floats) as one pass that reads the bytes and writes the floats,
// instead of a float tensor written by Cast and read back by Mul.
//
// Each element is Cast's conversion (exact: a byte fits a float's mantissa)
// followed by Mul's one product, so the fused output is the unfused one bit
// for bit. Inputs: Cast's x (uint8), then Mul's factor; output: Mul's, with
// Mul's broadcast shape and errors (PlanBinaryOutput). Applies where the Cast
// writes float32 from uint8 into Mul's input 0 and the factor's shape is known
// to hold one element (CastMulApplies); any other Cast or Mul runs apart. The
// GPU's twin is cwise_cuda.cu's GpuCastMulOp.
#include <cstdint>

#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/internal/cpu_clones.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

// out[i] = float(x[i]) * factor over n elements: AVX2 and AVX-512 widen 8 or
// 16 bytes to floats per instruction where the host has them.
TW_CPU_CLONES void ScaleBytes(const uint8_t* x, int64_t n, float factor, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i]) * factor;
}

class CastMulOp : public OpKernel {
 public:
  explicit CastMulOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& factor = ctx->input(1);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, PlanCastMulOutput(ctx, &out));
    const uint8_t* xp = x.data<uint8_t>();
    const float f = factor.data<float>()[0];
    float* o = out->data<float>();
    ShardedFor(ctx->intra_op_pool(), x.NumElements(), 2,
               [&](int64_t begin, int64_t end) { ScaleBytes(xp + begin, end - begin, f, o + begin); });
  }
};

std::unique_ptr<OpKernel> MakeCastMul(OpKernelConstruction* c, const Node&) {
  return std::make_unique<CastMulOp>(c);
}

}  // namespace

bool CastMulApplies(const Node& cast, const Node& mul) {
  const AttrValue* src = cast.attrs().Find("SrcT");
  const DataType* t = src == nullptr ? nullptr : std::get_if<DataType>(src);
  const PartialShape& shape = mul.input(1).shape();
  return t != nullptr && *t == kUInt8 && shape.IsFullyDefined() && shape.num_elements() == 1;
}

Status PlanCastMulOutput(OpKernelContext* ctx, Tensor** out) {
  const Tensor& x = ctx->input(0);
  const Tensor& factor = ctx->input(1);
  if (x.dtype() != kUInt8 || factor.dtype() != kFloat32 || factor.NumElements() != 1) {
    return errors::Internal("Cast fused into Mul with x ", DataTypeName(x.dtype()), " ", x.shape().ToString(),
                            " and factor ", DataTypeName(factor.dtype()), " ", factor.shape().ToString());
  }
  return PlanBinaryOutput(ctx, out).status();
}

void RegisterCastFusions(KernelRegistry& r) {
  FusionDef f{"Cast", "Mul", 0, kDeviceCpu, {kFloat32}, MakeCastMul, CastMulApplies};
  f.gpu_twin = true;  // of cwise_cuda.cu's GpuCastMulOp
  r.RegisterFusion(std::move(f));
}

}  // namespace tw
