// Plain gradient descent (tf.train.GradientDescentOptimizer): var -= lr * grad.
// No slots. See optimizer.h for building, naming and errors.
#ifndef TOWERFLOW_TRAIN_GRADIENT_DESCENT_H_
#define TOWERFLOW_TRAIN_GRADIENT_DESCENT_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/train/optimizer.h"

namespace tw::train {

struct GradientDescentOptions {
  double learning_rate = 0.01;
  // When valid, the learning rate instead of `learning_rate`: a float scalar
  // tensor computed in the graph (a schedule of the global step, as TF1's
  // tf.train.exponential_decay), read at every update.
  Output learning_rate_tensor = Output();
  std::string name = "GradientDescent";
};

class GradientDescent : public Optimizer {
 public:
  explicit GradientDescent(GradientDescentOptions options = {});
  const GradientDescentOptions& options() const { return options_; }

 protected:
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;

 private:
  GradientDescentOptions options_;
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_GRADIENT_DESCENT_H_
