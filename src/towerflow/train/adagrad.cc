#include "towerflow/train/adagrad.h"

#include "towerflow/graph/ops/training_ops.h"

namespace tw::train {

Adagrad::Adagrad(AdagradOptions options) : Optimizer(options.name), options_(std::move(options)) {}

void Adagrad::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  if (!(options_.initial_accumulator_value > 0.0)) {
    scope.UpdateStatus(errors::InvalidArgument("Adagrad: initial_accumulator_value must be positive, got ",
                                               options_.initial_accumulator_value));
    return;
  }
  for (const Variable& v : vars) ConstantSlot(scope, v, "accumulator", options_.initial_accumulator_value);
}

Output Adagrad::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  const Variable* accum = GetSlot(scope.graph(), var, "accumulator");
  if (accum == nullptr) return Output();  // CreateSlots failed and recorded why
  const DataType dtype = var.ref.dtype();
  return ApplyAdagrad(scope, var.ref, accum->ref,
                      LearningRate(scope, options_.learning_rate, options_.learning_rate_tensor, dtype), grad);
}

}  // namespace tw::train
