#include "towerflow/train/rmsprop.h"

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/training_ops.h"

namespace tw::train {

RMSProp::RMSProp(RMSPropOptions options) : Optimizer(options.name), options_(std::move(options)) {}

void RMSProp::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  // TF's order, which its slot names follow: rms, then mg, then momentum.
  for (const Variable& v : vars) {
    ConstantSlot(scope, v, "rms", 1.0);
    if (options_.centered) ZerosSlot(scope, v, "mg");
    ZerosSlot(scope, v, "momentum");
  }
}

Output RMSProp::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  Graph& g = scope.graph();
  const Variable* rms = GetSlot(g, var, "rms");
  const Variable* mom = GetSlot(g, var, "momentum");
  const Variable* mg = options_.centered ? GetSlot(g, var, "mg") : nullptr;
  if (!rms || !mom || (options_.centered && !mg)) return Output();  // CreateSlots failed and recorded why
  const DataType dtype = var.ref.dtype();
  const Output lr = LearningRate(scope, options_.learning_rate, options_.learning_rate_tensor, dtype);
  // LearningRate: the tensor (cast to the variable's dtype) when given, else the constant.
  const Output rho = LearningRate(scope, options_.decay, options_.decay_tensor, dtype);
  const Output momentum = LearningRate(scope, options_.momentum, options_.momentum_tensor, dtype);
  const Output epsilon = LearningRate(scope, options_.epsilon, options_.epsilon_tensor, dtype);
  if (options_.centered) {
    return ApplyCenteredRMSProp(scope, var.ref, mg->ref, rms->ref, mom->ref, lr, rho, momentum, epsilon, grad);
  }
  return ApplyRMSProp(scope, var.ref, rms->ref, mom->ref, lr, rho, momentum, epsilon, grad);
}

}  // namespace tw::train
