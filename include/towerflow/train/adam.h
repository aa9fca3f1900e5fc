// Adam (tf.train.AdamOptimizer, Kingma & Ba 2015) with TF's bias correction:
// lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m = beta1 m + (1 - beta1) g;
// v = beta2 v + (1 - beta2) g^2; var -= lr_t m / (sqrt(v) + epsilon).
// Slots "<var>/Adam" (m) and "<var>/Adam_1" (v); beta1^t and beta2^t live in the
// non-trainable scalars "beta1_power" and "beta2_power" (created with the first
// variable's dtype, on its device), multiplied by beta1/beta2 after every
// variable of a step has been updated. See optimizer.h for building and errors.
#ifndef TOWERFLOW_TRAIN_ADAM_H_
#define TOWERFLOW_TRAIN_ADAM_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/train/optimizer.h"

namespace tw::train {

struct AdamOptions {
  double learning_rate = 0.001;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  bool use_nesterov = false;
  // When valid, the learning rate instead of `learning_rate`: a float scalar
  // tensor computed in the graph (a schedule of the global step, as TF1's
  // tf.train.exponential_decay), read at every update.
  Output learning_rate_tensor = Output();
  std::string name = "Adam";
};

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});
  const AdamOptions& options() const { return options_; }

 protected:
  void CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;
  std::vector<Output> Finish(const Scope& scope, const std::vector<Output>& update_ops) override;

 private:
  AdamOptions options_;
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_ADAM_H_
