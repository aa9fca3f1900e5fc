#include "towerflow/train/adam.h"

#include <algorithm>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/training_ops.h"

namespace tw::train {

Adam::Adam(AdamOptions options) : Optimizer(options.name), options_(std::move(options)) {}

void Adam::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  // As TF: the powers sit with the first variable by name, so a graph built in
  // another order still puts them on the same device.
  const Variable& first = *std::min_element(vars.begin(), vars.end(),
                                            [](const Variable& a, const Variable& b) { return a.name < b.name; });
  NonSlotVariable(scope, "beta1_power", options_.beta1, first.ref.dtype(), first);
  NonSlotVariable(scope, "beta2_power", options_.beta2, first.ref.dtype(), first);
  for (const Variable& v : vars) {
    ZerosSlot(scope, v, "m");
    ZerosSlot(scope, v, "v");
  }
}

Output Adam::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  Graph& g = scope.graph();
  const Variable* m = GetSlot(g, var, "m");
  const Variable* v = GetSlot(g, var, "v");
  const Variable* b1p = GetNonSlotVariable(g, "beta1_power");
  const Variable* b2p = GetNonSlotVariable(g, "beta2_power");
  if (!m || !v || !b1p || !b2p) return Output();  // CreateSlots failed and recorded why
  const DataType dtype = var.ref.dtype();
  // The powers are read through their refs when this update runs; Finish changes
  // them only after every update (control dependencies).
  auto power = [&](const Variable& p) { return p.ref.dtype() == dtype ? p.ref : Cast(scope, p.ref, dtype); };
  return ApplyAdam(scope, var.ref, m->ref, v->ref, power(*b1p), power(*b2p),
                   LearningRate(scope, options_.learning_rate, options_.learning_rate_tensor, dtype), ScalarLike(scope, options_.beta1, dtype),
                   ScalarLike(scope, options_.beta2, dtype), ScalarLike(scope, options_.epsilon, dtype), grad,
                   options_.use_nesterov);
}

std::vector<Output> Adam::Finish(const Scope& scope, const std::vector<Output>& update_ops) {
  Graph& g = scope.graph();
  const Variable* b1p = GetNonSlotVariable(g, "beta1_power");
  const Variable* b2p = GetNonSlotVariable(g, "beta2_power");
  if (!b1p || !b2p) {
    scope.UpdateStatus(errors::Internal("Adam: beta1_power/beta2_power were not created"));
    return {};
  }
  // beta^t -> beta^(t+1) once this step's updates have all used beta^t.
  Scope after = scope.WithControlDependencies(update_ops);
  auto advance = [&](const Variable& p, double beta, const char* name) {
    Scope s = after.NewSubScope(name).ColocatedWith(p.ref);
    return Assign(s, p, Mul(s, p.ref, ScalarLike(s, beta, p.ref.dtype())));
  };
  std::vector<Output> all = update_ops;
  all.push_back(advance(*b1p, options_.beta1, "update_beta1"));
  all.push_back(advance(*b2p, options_.beta2, "update_beta2"));
  return all;
}

}  // namespace tw::train
