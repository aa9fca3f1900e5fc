// CPU kernels of the training update ops (ApplyGradientDescent, ApplyMomentum,
// ApplyAdam) for float and double. Each locks the mutexes of its ref inputs (the
// variable and its slots) for the whole update, whatever use_locking says: an
// unlocked update would race with Assign replacing the buffer. The element loops
// are branch-free over contiguous arrays (the compiler vectorises them) and split
// over the device's intra-op threads for large variables. Formulas are TF's
// (tensorflow/core/kernels/training_ops.cc), written in the same order so the
// rounding matches.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

// The name of the variable behind ref input `i`, following forwarded refs back
// to the VariableV2 node.
std::string VariableName(const Node& node, int i) {
  Output o = node.input(i);
  while (o.node->op() != "VariableV2" && o.node->num_inputs() > 0 && o.node->input_is_ref(0)) {
    o = o.node->input(0);
  }
  return o.node->name();
}

// Holds the distinct mutexes of the given ref inputs, locked in address order so
// that two updates sharing variables cannot deadlock.
class RefLocks {
 public:
  RefLocks(OpKernelContext* ctx, std::initializer_list<int> refs) {
    for (int i : refs) mus_.push_back(ctx->input_ref_mutex(i));
    std::sort(mus_.begin(), mus_.end());
    mus_.erase(std::unique(mus_.begin(), mus_.end()), mus_.end());
    for (std::mutex* mu : mus_) mu->lock();
  }
  ~RefLocks() {
    for (auto it = mus_.rbegin(); it != mus_.rend(); ++it) (*it)->unlock();
  }
  RefLocks(const RefLocks&) = delete;
  RefLocks& operator=(const RefLocks&) = delete;

 private:
  std::vector<std::mutex*> mus_;
};

// REQUIRES: the ref inputs' locks are held. Checks that the ref inputs are
// initialized and have the variable's (input 0's) shape, that the inputs in
// `same` (gradients) have it too, and that `scalars` are scalars.
Status CheckInputs(OpKernelContext* ctx, std::initializer_list<int> refs, std::initializer_list<int> same,
                   std::initializer_list<int> scalars) {
  const Node& node = ctx->node();
  auto arg = [&](int i) { return node.def().inputs[static_cast<size_t>(i)].name; };
  for (int i : refs) {
    if (!ctx->mutable_input(i)->IsInitialized()) {
      return errors::FailedPrecondition("Attempting to use uninitialized value ", VariableName(node, i));
    }
  }
  const TensorShape& var_shape = ctx->mutable_input(0)->shape();
  for (int i : refs) {
    const TensorShape& s = ctx->mutable_input(i)->shape();
    if (s != var_shape) {
      return errors::InvalidArgument(arg(i), " ", VariableName(node, i), " has shape ", s.ToString(),
                                     " but variable ", VariableName(node, 0), " has shape ",
                                     var_shape.ToString());
    }
  }
  for (int i : same) {
    const TensorShape& s = ctx->input(i).shape();
    if (s != var_shape) {
      return errors::InvalidArgument("var and ", arg(i), " do not have the same shape: variable ",
                                     VariableName(node, 0), " has shape ", var_shape.ToString(), ", ",
                                     arg(i), " (", ctx->input_name(i), ") has shape ", s.ToString());
    }
  }
  for (int i : scalars) {
    if (ctx->input(i).rank() != 0) {
      return errors::InvalidArgument(arg(i), " is not a scalar: ", ctx->input(i).shape().ToString(),
                                     " (", ctx->input_name(i), ")");
    }
  }
  return Status::OK();
}

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
      TW_OP_REQUIRES_OK(ctx, CheckInputs(ctx, {0}, {2}, {1}));
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
      TW_OP_REQUIRES_OK(ctx, CheckInputs(ctx, {0, 1}, {3}, {2, 4}));
      T* var = ctx->mutable_input(0)->data<T>();
      T* accum = ctx->mutable_input(1)->data<T>();
      const T lr = ctx->input(2).scalar<T>();
      const T* grad = ctx->input(3).data<T>();
      const T momentum = ctx->input(4).scalar<T>();
      const bool nesterov = use_nesterov_;
      // One pass, the branch hoisted and the arrays declared unaliased so that
      // the loop vectorises: this update is memory-bound.
      ForEachShard(ctx, ctx->mutable_input(0)->NumElements(), 5, [&](int64_t begin, int64_t end) {
        T* __restrict v = var + begin;
        T* __restrict a = accum + begin;
        const T* __restrict g = grad + begin;
        const int64_t n = end - begin;
        if (nesterov) {
          for (int64_t k = 0; k < n; ++k) {
            const T acc = a[k] * momentum + g[k];
            a[k] = acc;
            v[k] -= g[k] * lr + acc * momentum * lr;
          }
        } else {
          for (int64_t k = 0; k < n; ++k) {
            const T acc = a[k] * momentum + g[k];
            a[k] = acc;
            v[k] -= acc * lr;
          }
        }
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
      TW_OP_REQUIRES_OK(ctx, CheckInputs(ctx, {0, 1, 2}, {9}, {3, 4, 5, 6, 7, 8}));
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

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  r.RegisterTyped<ApplyGradientDescentOp, float, double>("ApplyGradientDescent", kDeviceCpu);
  r.RegisterTyped<ApplyMomentumOp, float, double>("ApplyMomentum", kDeviceCpu);
  r.RegisterTyped<ApplyAdamOp, float, double>("ApplyAdam", kDeviceCpu);
}

}  // namespace tw
