// A gradient's last op fused with the momentum update that alone reads it
// (runtime/fusion.h), on the CPU, so that the gradient is never written out
// whole and read back:
// - MatMul -> ApplyMomentum (a layer's dW = x^T dy, one tower): the gradient
//   is computed in blocks of rows of about kBlockBytes, and each block is
//   applied to the variable and its accumulator while it is in cache; for the
//   CNN's dense layer (3.2 M weights) that is 13 MB less written and read per
//   step.
// - Div -> ApplyMomentum with a one-element divisor (towers: the sum of the
//   towers' gradients divided by their count): the division happens in the
//   update's loop, as the Div kernel computes it (bit for bit).
//
// Inputs: the producer's (a and b; x and y), then ApplyMomentum's var and
// accum (refs), lr and momentum; output: the variable's ref, as
// ApplyMomentum's. The producer's checks are its kernel's (MatMul's in shape
// form, matmul_args.h) and the update's those of ApplyMomentum (same codes,
// messages naming the variable); the arithmetic of each element is
// ApplyMomentum's on the producer's value of that element.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "towerflow/kernels/blas.h"
#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/internal/cpu_gemm.h"
#include "towerflow/kernels/internal/dnnl_matmul.h"
#include "towerflow/kernels/internal/momentum_update.h"
#include "towerflow/kernels/matmul_args.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace {

// Inputs of the fused item: the producer's two (MatMul's a and b, Div's x and
// y), then ApplyMomentum's other ones.
constexpr int kA = 0, kB = 1, kVar = 2, kAccum = 3, kLr = 4, kMomentum = 5;
// ApplyMomentum's own input indices, for messages naming its arguments.
constexpr int kUpdateVar = 0, kUpdateAccum = 1;
// Rows of the gradient per block: var, accum and the block stay in L2.
constexpr int64_t kBlockBytes = 256 * 1024;

// What both fused updates share: ApplyMomentum's attr, checks and arithmetic.
template <typename T>
class FusedMomentumBase : public OpKernel {
 public:
  FusedMomentumBase(OpKernelConstruction* c, const Node& update)
      : OpKernel(c), grad_name_(c->node().name() + ":0") {
    auto nesterov = update.attrs().Get<bool>("use_nesterov");
    TW_OP_REQUIRES_OK(c, nesterov.status());
    nesterov_ = *nesterov;
  }

 protected:
  // ApplyMomentum's checks (and messages), for a gradient of shape `grad`: the
  // producer's output. REQUIRES: the locks of var and accum are held.
  Status Check(OpKernelContext* ctx, const TensorShape& grad) const {
    const Node& update = ctx->node();
    if (!ctx->mutable_input(kVar)->IsInitialized()) return UninitializedError(update, kUpdateVar);
    if (!ctx->mutable_input(kAccum)->IsInitialized()) return UninitializedError(update, kUpdateAccum);
    const TensorShape& var = ctx->mutable_input(kVar)->shape();
    if (ctx->mutable_input(kAccum)->shape() != var) {
      return errors::InvalidArgument("accum ", VariableName(update, kUpdateAccum), " has shape ",
                                     ctx->mutable_input(kAccum)->shape().ToString(), " but variable ",
                                     VariableName(update, kUpdateVar), " has shape ", var.ToString());
    }
    if (grad != var) {
      return errors::InvalidArgument("var and grad do not have the same shape: variable ",
                                     VariableName(update, kUpdateVar), " has shape ", var.ToString(), ", grad (",
                                     grad_name_, ") has shape ", grad.ToString());
    }
    for (auto [i, name] : {std::pair{kLr, "lr"}, std::pair{kMomentum, "momentum"}}) {
      if (ctx->input(i).rank() != 0) {
        return errors::InvalidArgument(name, " is not a scalar: ", ctx->input(i).shape().ToString());
      }
    }
    return Status::OK();
  }

  // ApplyMomentum's arithmetic (internal/momentum_update.h, as the unfused
  // kernel) on count elements with gradient g[i], or g[i] / divisor when kDivide.
  template <bool kDivide = false>
  void Apply(T* v, T* acc, const T* g, int64_t count, T lr, T momentum, T divisor = T(1)) const {
    if constexpr (kDivide) {
      momentum_update::ApplyDivided(v, acc, g, count, lr, momentum, nesterov_, divisor);
    } else {
      momentum_update::Apply(v, acc, g, count, lr, momentum, nesterov_);
    }
  }

 private:
  std::string grad_name_;  // "<producer>:0", as ApplyMomentum's messages name its grad input
  bool nesterov_ = false;
};

template <typename T>
class MatMulApplyMomentumOp : public FusedMomentumBase<T> {
 public:
  MatMulApplyMomentumOp(OpKernelConstruction* c, const Node& update) : FusedMomentumBase<T>(c, update) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_a", &ta_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_b", &tb_));
    TW_OP_REQUIRES_OK(c, blas::Init());
    if constexpr (std::is_same_v<T, float>) dnnl_ = dnnl_matmul::Enabled();
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(kA);
    const Tensor& b = ctx->input(kB);
    auto dims = MatMulShape(a.shape(), b.shape(), ta_, tb_);
    TW_OP_REQUIRES_OK(ctx, dims.status());
    const int64_t m = dims->m, n = dims->n, k = dims->k;
    {
      RefLocks locks(ctx, {kVar, kAccum});
      TW_OP_REQUIRES_OK(ctx, this->Check(ctx, TensorShape{m, n}));
      T* var = ctx->mutable_input(kVar)->data<T>();
      T* accum = ctx->mutable_input(kAccum)->data<T>();
      const T lr = ctx->input(kLr).scalar<T>();
      const T momentum = ctx->input(kMomentum).scalar<T>();
      const T* ap = a.data<T>();
      const T* bp = b.data<T>();
      const int64_t lda = a.dim(1), ldb = b.dim(1);
      const int64_t rows = std::max<int64_t>(1, kBlockBytes / static_cast<int64_t>(sizeof(T)) / std::max<int64_t>(n, 1));
      const int64_t blocks = m == 0 ? 0 : (m + rows - 1) / rows;
      ShardedFor(ctx->intra_op_pool(), blocks, rows * n * std::max<int64_t>(k, 1) / 16, [&](int64_t b0, int64_t b1) {
        std::vector<T> grad(static_cast<size_t>(std::min(m, rows) * n));
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t lo = blk * rows, len = std::min(m, lo + rows) - lo;
          if (n == 0) continue;
          if (k == 0) {
            std::fill_n(grad.data(), len * n, T(0));  // an empty sum
          } else {
            CpuGemm<T>(dnnl_, ta_, tb_, len, n, k, ta_ ? ap + lo : ap + lo * lda, lda, bp, ldb, grad.data(), n);
          }
          this->Apply(var + lo * n, accum + lo * n, grad.data(), len * n, lr, momentum);
        }
      });
    }
    ctx->forward_ref_input_to_ref_output(kVar, 0);
  }

 private:
  bool ta_ = false, tb_ = false;
  bool dnnl_ = false;
};

template <typename T>
class DivApplyMomentumOp : public FusedMomentumBase<T> {
 public:
  using FusedMomentumBase<T>::FusedMomentumBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(kA);
    const Tensor& y = ctx->input(kB);
    // Div's broadcast (a one-element divisor may still add dimensions of 1);
    // the plan fuses only a divisor known to hold one element (DivisorIsOne).
    auto plan = MakeBroadcastPlan(x.shape(), y.shape());
    TW_OP_REQUIRES_OK(ctx, plan.status());
    TW_OP_REQUIRES(ctx, y.NumElements() == 1,
                   errors::Internal("Div fused into ApplyMomentum with a divisor of shape ", y.shape().ToString()));
    {
      RefLocks locks(ctx, {kVar, kAccum});
      TW_OP_REQUIRES_OK(ctx, this->Check(ctx, plan->out_shape));
      T* var = ctx->mutable_input(kVar)->data<T>();
      T* accum = ctx->mutable_input(kAccum)->data<T>();
      const T lr = ctx->input(kLr).scalar<T>();
      const T momentum = ctx->input(kMomentum).scalar<T>();
      const T* xp = x.data<T>();
      const T d = y.data<T>()[0];
      ParallelFor(ctx->intra_op_pool(), x.NumElements(), 6, [&](int64_t begin, int64_t end) {
        this->template Apply<true>(var + begin, accum + begin, xp + begin, end - begin, lr, momentum, d);
      });
    }
    ctx->forward_ref_input_to_ref_output(kVar, 0);
  }
};

// Div -> ApplyMomentum only for a divisor whose shape is known to hold one
// element (the towers' count); any other Div runs apart.
bool DivisorIsOne(const Node& div, const Node&) {
  const PartialShape& shape = div.input(1).shape();
  return shape.IsFullyDefined() && shape.num_elements() == 1;
}

template <typename T>
std::unique_ptr<OpKernel> MakeDivApplyMomentum(OpKernelConstruction* c, const Node& update) {
  return std::make_unique<DivApplyMomentumOp<T>>(c, update);
}

template <typename T>
std::unique_ptr<OpKernel> MakeMatMulApplyMomentum(OpKernelConstruction* c, const Node& update) {
  return std::make_unique<MatMulApplyMomentumOp<T>>(c, update);
}

}  // namespace

void RegisterMomentumFusions(KernelRegistry& r) {
  r.RegisterFusion(FusionDef{"MatMul", "ApplyMomentum", 3, kDeviceCpu, {kFloat32}, MakeMatMulApplyMomentum<float>});
  r.RegisterFusion(FusionDef{"MatMul", "ApplyMomentum", 3, kDeviceCpu, {kFloat64}, MakeMatMulApplyMomentum<double>});
  r.RegisterFusion(
      FusionDef{"Div", "ApplyMomentum", 3, kDeviceCpu, {kFloat32}, MakeDivApplyMomentum<float>, DivisorIsOne});
  r.RegisterFusion(
      FusionDef{"Div", "ApplyMomentum", 3, kDeviceCpu, {kFloat64}, MakeDivApplyMomentum<double>, DivisorIsOne});
}

}  // namespace tw
