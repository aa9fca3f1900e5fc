// Builders for the in-place training update ops (TF's training_ops): each takes
// the variable (and its optimizer slots) as refs, updates them under their locks
// and outputs the variable's ref. Optimizers (train/) build them; the formulas
// are TF's. Scalars (learning rate, momentum, ...) must have the variable's dtype
// (float or double). A shape mismatch is InvalidArgument naming the variable, an
// uninitialized ref FailedPrecondition. Builders record errors in the scope and
// return a null Output (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_TRAINING_OPS_H_
#define TOWERFLOW_GRAPH_OPS_TRAINING_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/graph/scope.h"

namespace tw {

// var -= alpha * delta.
Output ApplyGradientDescent(const Scope& scope, const Output& var, const Output& alpha,
                            const Output& delta);

// accum = accum * momentum + grad;
// var -= lr * accum, or with Nesterov var -= lr * grad + lr * momentum * accum.
Output ApplyMomentum(const Scope& scope, const Output& var, const Output& accum, const Output& lr,
                     const Output& grad, const Output& momentum, bool use_nesterov = false);

// Adam (Kingma & Ba) with TF's bias correction folded into the step size:
// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
// m = beta1 * m + (1 - beta1) * grad;  v = beta2 * v + (1 - beta2) * grad^2;
// var -= lr_t * m / (sqrt(v) + epsilon)
// (with Nesterov, m is replaced by beta1 * m + (1 - beta1) * grad in the update).
// beta1_power and beta2_power are beta^t for step t (the caller keeps them).
Output ApplyAdam(const Scope& scope, const Output& var, const Output& m, const Output& v,
                 const Output& beta1_power, const Output& beta2_power, const Output& lr,
                 const Output& beta1, const Output& beta2, const Output& epsilon, const Output& grad,
                 bool use_nesterov = false);

// RMSProp (Tieleman & Hinton), TF's form:
// ms = ms + (grad^2 - ms) * (1 - rho);
// mom = mom * momentum + lr * grad / sqrt(ms + epsilon);  var -= mom.
Output ApplyRMSProp(const Scope& scope, const Output& var, const Output& ms, const Output& mom, const Output& lr,
                    const Output& rho, const Output& momentum, const Output& epsilon, const Output& grad);

// Centered RMSProp: the second moment less the square of the first, the
// gradient's estimated variance. mg = mg + (grad - mg) * (1 - rho); ms as
// ApplyRMSProp's; mom = mom * momentum + lr * grad / sqrt(ms - mg^2 + epsilon);
// var -= mom.
Output ApplyCenteredRMSProp(const Scope& scope, const Output& var, const Output& mg, const Output& ms,
                            const Output& mom, const Output& lr, const Output& rho, const Output& momentum,
                            const Output& epsilon, const Output& grad);

// Adagrad (Duchi et al.): accum += grad^2 (unless !update_slots);
// var -= lr * grad / sqrt(accum). The accumulator must start positive
// (TF1's AdagradOptimizer starts it at 0.1): a zero one divides by zero.
Output ApplyAdagrad(const Scope& scope, const Output& var, const Output& accum, const Output& lr, const Output& grad,
                    bool update_slots = true);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_TRAINING_OPS_H_
