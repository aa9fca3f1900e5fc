#include "towerflow/train/gradient_descent.h"

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/training_ops.h"

namespace tw::train {

GradientDescent::GradientDescent(GradientDescentOptions options)
    : Optimizer(options.name), options_(std::move(options)) {}

Output GradientDescent::ApplyDense(const Scope& scope, const Output& grad, const Variable& var) {
  return ApplyGradientDescent(scope, var.ref, LearningRate(scope, options_.learning_rate, options_.learning_rate_tensor, var.ref.dtype()), grad);
}

}  // namespace tw::train
