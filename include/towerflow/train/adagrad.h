// Adagrad (tf.train.AdagradOptimizer, Duchi, Hazan & Singer 2011):
// accum += g^2; var -= lr g / sqrt(accum). One slot per variable,
// "<var>/Adagrad" (slot name "accumulator"), starting at
// `initial_accumulator_value` (TF1's 0.1; it must be positive). See
// optimizer.h for building and errors.
#ifndef TOWERFLOW_TRAIN_ADAGRAD_H_
#define TOWERFLOW_TRAIN_ADAGRAD_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/train/optimizer.h"

namespace tw::train {

struct AdagradOptions {
  double learning_rate = 0.01;
  double initial_accumulator_value = 0.1;
  // When valid, the learning rate instead of `learning_rate`: a float scalar
  // tensor computed in the graph (a schedule of the global step), read at every
  // update.
  Output learning_rate_tensor = Output();
  std::string name = "Adagrad";
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});
  const AdagradOptions& options() const { return options_; }

 protected:
  void CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;

 private:
  AdagradOptions options_;
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_ADAGRAD_H_
