// CPU kernels of the training update ops (ApplyGradientDescent, ApplyMomentum,
// ApplyAdam, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad) for float and double; ApplyMomentum's arithmetic is
// internal/momentum_update.h's, shared with the fused updates. Each locks the
// mutexes of its ref inputs (the variable and its slots) for the whole update, whatever use_locking says: an
// unlocked update would race with Assign replacing the buffer. The element loops
// are branch-free over contiguous arrays (the compiler vectorises them) and split
// over the device's intra-op threads for large variables. Formulas are TF's
// (tensorflow/core/kernels/training_ops.cc), written in the same order so the
// rounding matches. The locks and checks are variable_args.h's, shared with the
// CUDA twins (training_cuda.cu).
#include <cmath>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/internal/momentum_update.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace {

// Runs fn(begin, end) over the variable's elements on the intra-op threads.
template <typename Fn>
void ForEachShard(OpKernelContext* ctx, int64_t n, int64_t cost_per_element, Fn&& fn) {
  ParallelFor(ctx->intra_op_pool(), n, cost_per_element, fn);
}

template <typename T>
class ApplyGradientDescentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    {
      RefLocks locks(ctx, {0});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0}, {2}, {1}));
      T* var = ctx->mutable_input(0)->data<T>();
      const T alpha = ctx->input(1).scalar<T>();
      const T* delta = ctx->input(2).data<T>();
      ForEachShard(ctx, ctx->mutable_input(0)->NumElements(), 2, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) var[k] -= delta[k] * alpha;
      });
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

template <typename T>
class ApplyMomentumOp : public OpKernel {
 public:
  explicit ApplyMomentumOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    {
      RefLocks locks(ctx, {0, 1});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0, 1}, {3}, {2, 4}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* accum = ctx->mutable_input(1)->data<T>();
      const T lr = ctx->input(2).scalar<T>();
      const T* grad = ctx->input(3).data<T>();
      const T momentum = ctx->input(4).scalar<T>();
      const bool nesterov = use_nesterov_;
      ForEachShard(ctx, ctx->mutable_input(0)->NumElements(), 5, [&](int64_t begin, int64_t end) {
        momentum_update::Apply(var + begin, accum + begin, grad + begin, end - begin, lr, momentum, nesterov);
      });
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool use_nesterov_ = false;
};

template <typename T>
class ApplyAdamOp : public OpKernel {
 public:
  explicit ApplyAdamOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("use_nesterov", &use_nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    {
      RefLocks locks(ctx, {0, 1, 2});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0, 1, 2}, {9}, {3, 4, 5, 6, 7, 8}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* m = ctx->mutable_input(1)->data<T>();
      T* v = ctx->mutable_input(2)->data<T>();
      const T beta1_power = ctx->input(3).scalar<T>();
      const T beta2_power = ctx->input(4).scalar<T>();
      const T lr = ctx->input(5).scalar<T>();
      const T beta1 = ctx->input(6).scalar<T>();
      const T beta2 = ctx->input(7).scalar<T>();
      const T epsilon = ctx->input(8).scalar<T>();
      const T* grad = ctx->input(9).data<T>();
      // Bias correction of both moments folded into one step size.
      const T alpha = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
      const bool nesterov = use_nesterov_;
      ForEachShard(ctx, ctx->mutable_input(0)->NumElements(), 30, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const T g = grad[k];
          m[k] += (g - m[k]) * (T(1) - beta1);
          v[k] += (g * g - v[k]) * (T(1) - beta2);
          const T step = nesterov ? (g * (T(1) - beta1) + beta1 * m[k]) : m[k];
          var[k] -= (step * alpha) / (std::sqrt(v[k]) + epsilon);
        }
      });
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool use_nesterov_ = false;
};

// Inputs: var, ms, mom (refs), lr, rho, momentum, epsilon, grad; centered,
// mg (a ref) after var, every later input one further.
template <typename T, bool kCentered>
class RMSPropOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    constexpr int c = kCentered ? 1 : 0;  // the inputs after var move by one
    {
      RefLocks locks(ctx, kCentered ? std::initializer_list<int>{0, 1, 2, 3} : std::initializer_list<int>{0, 1, 2});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, kCentered ? std::initializer_list<int>{0, 1, 2, 3}
                                                             : std::initializer_list<int>{0, 1, 2},
                                              {7 + c}, {3 + c, 4 + c, 5 + c, 6 + c}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* mg = kCentered ? ctx->mutable_input(1)->data<T>() : nullptr;
      T* ms = ctx->mutable_input(1 + c)->data<T>();
      T* mom = ctx->mutable_input(2 + c)->data<T>();
      const T lr = ctx->input(3 + c).scalar<T>();
      const T one_minus_rho = T(1) - ctx->input(4 + c).scalar<T>();
      const T momentum = ctx->input(5 + c).scalar<T>();
      const T epsilon = ctx->input(6 + c).scalar<T>();
      const T* grad = ctx->input(7 + c).data<T>();
      ForEachShard(ctx, ctx->mutable_input(0)->NumElements(), 25, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const T g = grad[k];
          ms[k] += (g * g - ms[k]) * one_minus_rho;
          T denom = ms[k] + epsilon;
          if constexpr (kCentered) {
            mg[k] += (g - mg[k]) * one_minus_rho;
            denom = (ms[k] - mg[k] * mg[k]) + epsilon;
          }
          mom[k] = mom[k] * momentum + (g * lr) / std::sqrt(denom);
          var[k] -= mom[k];
        }
      });
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};
template <typename T>
using ApplyRMSPropOp = RMSPropOp<T, false>;
template <typename T>
using ApplyCenteredRMSPropOp = RMSPropOp<T, true>;

// Inputs: var, accum (refs), lr, grad.
template <typename T>
class ApplyAdagradOp : public OpKernel {
 public:
  explicit ApplyAdagradOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("update_slots", &update_slots_));
  }
  void Compute(OpKernelContext* ctx) override {
    {
      RefLocks locks(ctx, {0, 1});
      TW_OP_REQUIRES_OK(ctx, CheckApplyInputs(ctx, {0, 1}, {3}, {2}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* accum = ctx->mutable_input(1)->data<T>();
      const T lr = ctx->input(2).scalar<T>();
      const T* grad = ctx->input(3).data<T>();
      const bool update_slots = update_slots_;
      ForEachShard(ctx, ctx->mutable_input(0)->NumElements(), 15, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const T g = grad[k];
          if (update_slots) accum[k] += g * g;
          var[k] -= g * lr * (T(1) / std::sqrt(accum[k]));
        }
      });
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool update_slots_ = true;
};

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  r.RegisterTyped<ApplyGradientDescentOp, float, double>("ApplyGradientDescent", kDeviceCpu);
  r.RegisterTyped<ApplyMomentumOp, float, double>("ApplyMomentum", kDeviceCpu);
  r.RegisterTyped<ApplyAdamOp, float, double>("ApplyAdam", kDeviceCpu);
  r.RegisterTyped<ApplyRMSPropOp, float, double>("ApplyRMSProp", kDeviceCpu);
  r.RegisterTyped<ApplyCenteredRMSPropOp, float, double>("ApplyCenteredRMSProp", kDeviceCpu);
  r.RegisterTyped<ApplyAdagradOp, float, double>("ApplyAdagrad", kDeviceCpu);
}

}  // namespace tw
