#include "towerflow/train/momentum.h"

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/training_ops.h"

namespace tw::train {

Momentum::Momentum(MomentumOptions options) : Optimizer(options.name), options_(std::move(options)) {}

void Momentum::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  for (const Variable& v : vars) ZerosSlot(scope, v, "momentum");
}

Output Momentum::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  const Variable* accum = GetSlot(scope.graph(), var, "momentum");
  if (accum == nullptr) return Output();  // CreateSlots failed and recorded why
  const DataType dtype = var.ref.dtype();
  return ApplyMomentum(scope, var.ref, accum->ref, LearningRate(scope, options_.learning_rate, options_.learning_rate_tensor, dtype), grad,
                       ScalarLike(scope, options_.momentum, dtype), options_.use_nesterov);
}

}  // namespace tw::train
