// Momentum (tf.train.MomentumOptimizer): accum = momentum * accum + grad;
// var -= lr * accum, or Nesterov's variant (var -= lr * grad + lr * momentum *
// accum). One slot per variable, "<var>/Momentum" (slot name "momentum"). See
// optimizer.h for building, naming and errors.
#ifndef TOWERFLOW_TRAIN_MOMENTUM_H_
#define TOWERFLOW_TRAIN_MOMENTUM_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/train/optimizer.h"

namespace tw::train {

struct MomentumOptions {
  double learning_rate = 0.01;
  double momentum = 0.9;
  bool use_nesterov = false;
  // When valid, the learning rate instead of `learning_rate`: a float scalar
  // tensor computed in the graph (a schedule of the global step, as TF1's
  // tf.train.exponential_decay), read at every update.
  Output learning_rate_tensor = Output();
  std::string name = "Momentum";
};

class Momentum : public Optimizer {
 public:
  explicit Momentum(MomentumOptions options = {});
  const MomentumOptions& options() const { return options_; }

 protected:
  void CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;

 private:
  MomentumOptions options_;
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_MOMENTUM_H_
