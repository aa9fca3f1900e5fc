// RMSProp (tf.train.RMSPropOptimizer, Tieleman & Hinton 2012) in TF's form:
// ms = decay ms + (1 - decay) g^2; mom = momentum mom + lr g / sqrt(ms + epsilon);
// var -= mom. Centered, the denominator is sqrt(ms - mg^2 + epsilon) with
// mg = decay mg + (1 - decay) g, the gradient's estimated variance.
// Slots as TF names them: "<var>/RMSProp" (slot name "rms", starting at ones),
// then "<var>/RMSProp_1" ("mg", centered only) and the next ("momentum", zeros).
// See optimizer.h for building and errors.
#ifndef TOWERFLOW_TRAIN_RMSPROP_H_
#define TOWERFLOW_TRAIN_RMSPROP_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/train/optimizer.h"

namespace tw::train {

struct RMSPropOptions {
  double learning_rate = 0.001;
  double decay = 0.9;  // rho: the discount of the moving averages
  double momentum = 0.0;
  double epsilon = 1e-10;
  bool centered = false;
  // When valid, the learning rate instead of `learning_rate`: a float scalar
  // tensor computed in the graph (a schedule of the global step), read at every
  // update.
  Output learning_rate_tensor = Output();
  // The same for the other hyper-parameters: when valid, a float scalar
  // tensor read at every update instead of the constant above.
  Output decay_tensor = Output();
  Output momentum_tensor = Output();
  Output epsilon_tensor = Output();
  std::string name = "RMSProp";
};

class RMSProp : public Optimizer {
 public:
  explicit RMSProp(RMSPropOptions options = {});
  const RMSPropOptions& options() const { return options_; }

 protected:
  void CreateSlots(const Scope& scope, const std::vector<Variable>& vars) override;
  Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) override;

 private:
  RMSPropOptions options_;
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_RMSPROP_H_
