#include "towerflow/cli/train_optimizer.h"

#include <algorithm>

namespace tw::cli {

double LearningRateAt(const TrainConfig& c, int64_t step) {
  if (c.lr_schedule != "linear" || c.total_steps <= 0) return c.learning_rate;
  return c.learning_rate * std::max(0.0, 1.0 - static_cast<double>(step) / static_cast<double>(c.total_steps));
}

Output LearningRateTensor(const Scope& root, const TrainConfig& c) {
  if (c.lr_schedule != "linear") return Output();
  Scope s = root.WithDevice(c.variable_device).NewSubScope("learning_rate");
  Variable step = train::GetOrCreateGlobalStep(root.WithDevice(c.variable_device));
  Output done = Div(s, Cast(s, step.value, kFloat32), ScalarLike(s, static_cast<double>(c.total_steps), kFloat32));
  Output left = Maximum(s, Sub(s, ScalarLike(s, 1.0, kFloat32), done), ScalarLike(s, 0.0, kFloat32));
  return Mul(s.WithOpName("learning_rate"), ScalarLike(s, c.learning_rate, kFloat32), left);
}

std::unique_ptr<train::Optimizer> MakeOptimizer(const TrainConfig& c, const Output& lr) {
  if (c.optimizer == "sgd") {
    return std::make_unique<train::GradientDescent>(
        train::GradientDescentOptions{.learning_rate = c.learning_rate, .learning_rate_tensor = lr});
  }
  if (c.optimizer == "adam") {
    return std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = c.learning_rate, .learning_rate_tensor = lr});
  }
  if (c.optimizer == "rmsprop") {
    return std::make_unique<train::RMSProp>(
        train::RMSPropOptions{.learning_rate = c.learning_rate, .learning_rate_tensor = lr});
  }
  if (c.optimizer == "adagrad") {
    return std::make_unique<train::Adagrad>(
        train::AdagradOptions{.learning_rate = c.learning_rate, .learning_rate_tensor = lr});
  }
  return std::make_unique<train::Momentum>(
      train::MomentumOptions{.learning_rate = c.learning_rate, .momentum = 0.9, .learning_rate_tensor = lr});
}

}  // namespace tw::cli
