// A gradient's last ops fused with the momentum update that alone reads it
// (runtime/fusion.h), on the CPU, so that the gradient is never written out
// whole and read back:
// - MatMul -> ApplyMomentum (a layer's dW = x^T dy, one tower): the gradient
//   is computed in blocks of rows of about kBlockBytes, and each block is
//   applied to the variable and its accumulator while it is in cache; for the
//   CNN's dense layer (3.2 M weights) that is 13 MB less written and read per
//   step.
// - MatMul per tower -> AddN -> Div -> ApplyMomentum, and MatMul per tower ->
//   AddN -> ApplyMomentum (towers with the variable on one device: the mean or
//   the sum of the towers' dW): each block of every tower's gradient is
//   computed, summed in AddN's order, divided as Div divides and applied while
//   in cache. The towers' MatMuls may be placed on other CPU devices than the
//   update (FusionDef::across_host_devices): their inputs are read where they
//   are. Blocks are split over the intra-op pool (or the idle inter-op
//   threads), so the towers' cores share the sum that followed the slower
//   tower alone, and neither the towers' gradients nor their sum are ever
//   whole in memory (2 x 12.8 MB for the CNN's dense layer). Div(MatMul) ->
//   ApplyMomentum (one tower averaged by 1) is the same with K = 1.
// - Div -> ApplyMomentum with a one-element divisor (the towers' mean when
//   the gradients come from elsewhere): the division happens in the update's
//   loop, as the Div kernel computes it (bit for bit).
//
// Inputs (kernel_registry.h's rule): the producers' (a0 b0 ... a(K-1) b(K-1),
// then the divisor; x and y for Div), then ApplyMomentum's var and accum
// (refs), lr and momentum; output: the variable's ref, as ApplyMomentum's. The
// producers' checks are their kernels' (MatMul's in shape form, matmul_args.h;
// AddN's one shape; Div's broadcast) and the update's those of ApplyMomentum
// (same codes, messages naming the variable); the arithmetic of each element
// is ApplyMomentum's on the producers' value of that element.
#include <algorithm>
#include <memory>
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

// ApplyMomentum's own input indices, for messages naming its arguments.
constexpr int kUpdateVar = 0, kUpdateAccum = 1;
// Rows of the gradient per block: var, accum and the block stay in L2, and a
// layer has blocks enough to split evenly over the threads.
constexpr int64_t kBlockBytes = 64 * 1024;

template <typename T>
class FusedMomentumBase : public OpKernel {
 public:
  // `var` is the index of ApplyMomentum's var among the fused inputs; accum,
  // lr and momentum follow it.
  FusedMomentumBase(OpKernelConstruction* c, const Node& update, int var)
      : OpKernel(c), kVar(var), kAccum(var + 1), kLr(var + 2), kMomentum(var + 3),
        grad_name_(c->node().name() + ":0") {
    auto nesterov = update.attrs().Get<bool>("use_nesterov");
    TW_OP_REQUIRES_OK(c, nesterov.status());
    nesterov_ = *nesterov;
  }

 protected:
  const int kVar, kAccum, kLr, kMomentum;

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

// The sum of K MatMuls (K >= 1), divided by a one-element divisor or not,
// applied block by block. Built from the fusion's producer: a MatMul, an AddN
// of MatMuls, or a Div of either.
template <typename T>
class MatMulSumApplyMomentumOp : public FusedMomentumBase<T> {
 public:
  MatMulSumApplyMomentumOp(OpKernelConstruction* c, const Node& update, int num_mats, bool divide)
      : FusedMomentumBase<T>(c, update, 2 * num_mats + (divide ? 1 : 0)), divide_(divide) {
    const Node* sum = divide ? c->node().input(0).node : &c->node();
    if (sum->op() == "MatMul") {
      mats_ = {sum};
    } else {
      for (const Output& in : sum->inputs()) mats_.push_back(in.node);
    }
    for (const Node* m : mats_) {
      auto ta = m->attrs().Get<bool>("transpose_a");
      auto tb = m->attrs().Get<bool>("transpose_b");
      TW_OP_REQUIRES_OK(c, ta.status());
      TW_OP_REQUIRES_OK(c, tb.status());
      ta_.push_back(*ta);
      tb_.push_back(*tb);
    }
    TW_OP_REQUIRES(c, static_cast<int>(mats_.size()) == num_mats,
                   errors::Internal("fused update of ", num_mats, " MatMuls built on ", c->node().DebugName()));
    TW_OP_REQUIRES_OK(c, blas::Init());
    if constexpr (std::is_same_v<T, float>) dnnl_ = dnnl_matmul::Enabled();
  }

  void Compute(OpKernelContext* ctx) override {
    const int num = static_cast<int>(mats_.size());
    std::vector<int64_t> ks(static_cast<size_t>(num));
    int64_t m = 0, n = 0;
    for (int i = 0; i < num; ++i) {
      auto dims = MatMulShape(ctx->input(2 * i).shape(), ctx->input(2 * i + 1).shape(), ta_[static_cast<size_t>(i)],
                              tb_[static_cast<size_t>(i)]);
      TW_OP_REQUIRES_OK(ctx, dims.status().WithContext(mats_[static_cast<size_t>(i)]->DebugName()));
      if (i > 0 && (dims->m != m || dims->n != n)) {
        TW_OP_REQUIRES_OK(ctx, errors::InvalidArgument("AddN inputs must have one shape: input 0 (", mats_[0]->name(),
                                                       ":0) has shape ", TensorShape{m, n}.ToString(), " but input ",
                                                       i, " (", mats_[static_cast<size_t>(i)]->name(),
                                                       ":0) has shape ", TensorShape{dims->m, dims->n}.ToString()));
      }
      m = dims->m;
      n = dims->n;
      ks[static_cast<size_t>(i)] = dims->k;
    }
    TensorShape grad_shape{m, n};
    T divisor = T(1);
    if (divide_) {
      // Div's broadcast (a one-element divisor may still add dimensions of 1).
      const Tensor& y = ctx->input(2 * num);
      auto plan = MakeBroadcastPlan(grad_shape, y.shape());
      TW_OP_REQUIRES_OK(ctx, plan.status());
      TW_OP_REQUIRES(ctx, y.NumElements() == 1,
                     errors::Internal("Div fused into ApplyMomentum with a divisor of shape ", y.shape().ToString()));
      grad_shape = plan->out_shape;
      divisor = y.data<T>()[0];
    }
    {
      RefLocks locks(ctx, {this->kVar, this->kAccum});
      TW_OP_REQUIRES_OK(ctx, this->Check(ctx, grad_shape));
      T* var = ctx->mutable_input(this->kVar)->template data<T>();
      T* accum = ctx->mutable_input(this->kAccum)->template data<T>();
      const T lr = ctx->input(this->kLr).template scalar<T>();
      const T momentum = ctx->input(this->kMomentum).template scalar<T>();
      // Blocks of equal rows (the last may be shorter by less than one a
      // block), so that shards of blocks take equal work.
      const int64_t max_rows =
          std::max<int64_t>(1, kBlockBytes / static_cast<int64_t>(sizeof(T)) / std::max<int64_t>(n, 1));
      const int64_t blocks = m == 0 || n == 0 ? 0 : (m + max_rows - 1) / max_rows;
      const int64_t rows = blocks == 0 ? 0 : (m + blocks - 1) / blocks;
      int64_t flops = 0;
      for (int64_t k : ks) flops += rows * n * std::max<int64_t>(k, 1);
      ShardedFor(ctx->intra_op_pool(), blocks, flops / 16, [&](int64_t b0, int64_t b1) {
        // Scratch for a block and one more product (uninitialised: written first).
        std::unique_ptr<T[]> grad(new T[static_cast<size_t>(rows * n)]);
        std::unique_ptr<T[]> part(num > 1 ? new T[static_cast<size_t>(rows * n)] : nullptr);
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t lo = blk * rows, len = std::min(m, lo + rows) - lo;
          if (len <= 0) continue;
          for (int i = 0; i < num; ++i) {
            T* out = i == 0 ? grad.get() : part.get();
            Block(ctx, i, ks[static_cast<size_t>(i)], lo, len, n, out);
            if (i > 0) {
              for (int64_t e = 0; e < len * n; ++e) grad[e] += part[e];
            }
          }
          if (divide_) {
            this->template Apply<true>(var + lo * n, accum + lo * n, grad.get(), len * n, lr, momentum, divisor);
          } else {
            this->Apply(var + lo * n, accum + lo * n, grad.get(), len * n, lr, momentum);
          }
        }
      });
    }
    ctx->forward_ref_input_to_ref_output(this->kVar, 0);
  }

 private:
  // Rows [lo, lo + len) of MatMul i's product (k terms each) into out[len, n].
  void Block(OpKernelContext* ctx, int i, int64_t k, int64_t lo, int64_t len, int64_t n, T* out) const {
    if (k == 0) {
      std::fill_n(out, len * n, T(0));  // an empty sum
      return;
    }
    const Tensor& a = ctx->input(2 * i);
    const Tensor& b = ctx->input(2 * i + 1);
    const bool ta = ta_[static_cast<size_t>(i)], tb = tb_[static_cast<size_t>(i)];
    const int64_t lda = a.dim(1), ldb = b.dim(1);
    const T* ap = a.data<T>();
    CpuGemm<T>(dnnl_, ta, tb, len, n, k, ta ? ap + lo : ap + lo * lda, lda, b.data<T>(), ldb, out, n);
  }

  std::vector<const Node*> mats_;
  std::vector<bool> ta_, tb_;
  bool divide_ = false;
  bool dnnl_ = false;
};

template <typename T>
class DivApplyMomentumOp : public FusedMomentumBase<T> {
 public:
  DivApplyMomentumOp(OpKernelConstruction* c, const Node& update) : FusedMomentumBase<T>(c, update, 2) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    // Div's broadcast (a one-element divisor may still add dimensions of 1);
    // the plan fuses only a divisor known to hold one element (DivisorIsOne).
    auto plan = MakeBroadcastPlan(x.shape(), y.shape());
    TW_OP_REQUIRES_OK(ctx, plan.status());
    TW_OP_REQUIRES(ctx, y.NumElements() == 1,
                   errors::Internal("Div fused into ApplyMomentum with a divisor of shape ", y.shape().ToString()));
    {
      RefLocks locks(ctx, {this->kVar, this->kAccum});
      TW_OP_REQUIRES_OK(ctx, this->Check(ctx, plan->out_shape));
      T* var = ctx->mutable_input(this->kVar)->template data<T>();
      T* accum = ctx->mutable_input(this->kAccum)->template data<T>();
      const T lr = ctx->input(this->kLr).template scalar<T>();
      const T momentum = ctx->input(this->kMomentum).template scalar<T>();
      const T* xp = x.data<T>();
      const T d = y.data<T>()[0];
      ParallelFor(ctx->intra_op_pool(), x.NumElements(), 6, [&](int64_t begin, int64_t end) {
        this->template Apply<true>(var + begin, accum + begin, xp + begin, end - begin, lr, momentum, d);
      });
    }
    ctx->forward_ref_input_to_ref_output(this->kVar, 0);
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

// The MatMuls under a fusion's producer, as edges (FusionDef::deeper): input
// `input` of `top` is one MatMul, or an AddN whose every input is a MatMul.
bool MatMulSumAt(const Node& top, int input, std::vector<FusedEdge>* edges) {
  const Node* sum = top.input(input).node;
  if (sum->op() == "MatMul") {
    edges->push_back(FusedEdge{sum, &top, input});
    return true;
  }
  if (sum->op() != "AddN") return false;
  edges->push_back(FusedEdge{sum, &top, input});
  for (int i = 0; i < sum->num_inputs(); ++i) {
    if (sum->input(i).node->op() != "MatMul") return false;
    edges->push_back(FusedEdge{sum->input(i).node, sum, i});
  }
  return true;
}

// Div(MatMul sum, one element) -> ApplyMomentum: the Div's dividend.
bool DivOfMatMulSum(const Node& div, std::vector<FusedEdge>* edges) { return MatMulSumAt(div, 0, edges); }

// AddN of MatMuls -> ApplyMomentum: the AddN's inputs.
bool SumOfMatMuls(const Node& add, std::vector<FusedEdge>* edges) {
  for (int i = 0; i < add.num_inputs(); ++i) {
    if (add.input(i).node->op() != "MatMul") return false;
    edges->push_back(FusedEdge{add.input(i).node, &add, i});
  }
  return true;
}

// The fused update of a MatMul sum built from the fusion's producer (a
// MatMul, an AddN of MatMuls or a Div of either), whose shape `deeper` checked.
template <typename T>
std::unique_ptr<OpKernel> MakeMatMulSumApplyMomentum(OpKernelConstruction* c, const Node& update) {
  const Node& top = c->node();
  const bool divide = top.op() == "Div";
  const Node* sum = divide ? top.input(0).node : &top;
  const int mats = sum->op() == "MatMul" ? 1 : sum->num_inputs();
  return std::make_unique<MatMulSumApplyMomentumOp<T>>(c, update, mats, divide);
}

}  // namespace

void RegisterMomentumFusions(KernelRegistry& r) {
  // The larger patterns first: a Div of MatMuls before the Div alone.
  for (DataType t : {kFloat32, kFloat64}) {
    const FusedKernelFactory sum = t == kFloat32 ? MakeMatMulSumApplyMomentum<float> : MakeMatMulSumApplyMomentum<double>;
    r.RegisterFusion(FusionDef{.producer_op = "MatMul", .consumer_op = "ApplyMomentum", .consumer_input = 3,
                               .device_type = kDeviceCpu, .types = {t}, .factory = sum,
                               .across_host_devices = true});
    r.RegisterFusion(FusionDef{.producer_op = "AddN", .consumer_op = "ApplyMomentum", .consumer_input = 3,
                               .device_type = kDeviceCpu, .types = {t}, .factory = sum, .deeper = SumOfMatMuls,
                               .across_host_devices = true});
    r.RegisterFusion(FusionDef{.producer_op = "Div", .consumer_op = "ApplyMomentum", .consumer_input = 3,
                               .device_type = kDeviceCpu, .types = {t}, .factory = sum, .applies = DivisorIsOne,
                               .deeper = DivOfMatMulSum, .across_host_devices = true});
    r.RegisterFusion(FusionDef{.producer_op = "Div", .consumer_op = "ApplyMomentum", .consumer_input = 3,
                               .device_type = kDeviceCpu, .types = {t},
                               .factory = t == kFloat32 ? MakeDivApplyMomentum<float> : MakeDivApplyMomentum<double>,
                               .applies = DivisorIsOne});
  }
}

}  // namespace tw
