// Optimizer: the base of the graph-building optimizers (TF1's tf.train.Optimizer).
// ComputeGradients adds the backward pass (tw::Gradients) for a loss; ApplyGradients
// adds one in-place update op per variable (ApplyGradientDescent, ApplyMomentum,
// ApplyAdam, ApplyRMSProp, ApplyAdagrad) and returns one op that runs them all and then increments the global
// step; Minimize does both. Running that op once is one training step.
//
// Optimizer state lives in variables: per-variable slots ("<var>/Momentum",
// "<var>/Adam", "<var>/Adam_1") and per-optimizer ones (Adam's "beta1_power"),
// created non-trainable in collection "variables" the first time an optimizer
// updates a variable, so GlobalVariablesInitializer (run after building the train
// op) initializes them. Slots are remembered per graph and per optimizer object:
// calling ApplyGradients twice (towers) reuses them. An Optimizer object holds only
// its options; building is single-threaded like all graph building. Errors are
// recorded in the scope (see scope.h) and the functions return nullptr.
#ifndef TOWERFLOW_TRAIN_OPTIMIZER_H_
#define TOWERFLOW_TRAIN_OPTIMIZER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <string>
#include <utility>
#include <vector>

#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/scope.h"

namespace tw::train {

// (gradient, variable) pairs; a null gradient means none flows to the variable.
using GradsAndVars = std::vector<std::pair<Output, Variable>>;

class Optimizer {
 public:
  virtual ~Optimizer();

  // The name of its ops and slots: "GradientDescent", "Momentum", "Adam".
  const std::string& name() const { return name_; }

  // d(loss)/d(var) for each of `vars` (default: collection "trainable_variables"),
  // with a null Output where the loss does not depend on the variable. Errors:
  // the scope's first error if it has one; InvalidArgument for a null loss or no
  // variables; the errors of Gradients (Unimplemented naming an op without a
  // gradient).
  StatusOr<GradsAndVars> ComputeGradients(const Scope& scope, const Output& loss,
                                          std::vector<Variable> vars = {});

  // One op applying every non-null gradient to its variable (variables without a
  // gradient are skipped; InvalidArgument "No gradients provided for any
  // variable" naming them all when none has one), then, when `global_step` is
  // given, adding 1 to it. Ops are named "<name>/update_<var>/...", default name
  // the optimizer's (made unique: "Adam_1"); the op returned is named "<name>"
  // itself, as TF names it (the global step's AssignAdd, else a NoOp).
  Node* ApplyGradients(const Scope& scope, const GradsAndVars& grads_and_vars,
                       Variable* global_step = nullptr, const std::string& name = "");

  // ComputeGradients then ApplyGradients.
  Node* Minimize(const Scope& scope, const Output& loss, Variable* global_step = nullptr,
                 std::vector<Variable> vars = {});

  // The slot `slot_name` ("momentum"; "m", "v") this optimizer made for `var` in
  // `graph`, or nullptr.
  const Variable* GetSlot(Graph& graph, const Variable& var, const std::string& slot_name) const;
  // The variable `name` ("beta1_power") this optimizer keeps once per graph, or nullptr.
  const Variable* GetNonSlotVariable(Graph& graph, const std::string& name) const;

 protected:
  explicit Optimizer(std::string name);

  // Hooks, called by ApplyGradients in this order for the variables that have
  // gradients. `scope` is the optimizer's name scope; errors go into it.
  virtual void CreateSlots(const Scope& /*scope*/, const std::vector<Variable>& /*vars*/) {}
  virtual void Prepare(const Scope& /*scope*/) {}
  // The update op of one variable (built colocated with it).
  virtual Output ApplyDense(const Scope& scope, const Output& grad, const Variable& var) = 0;
  // What must have run when the step ends: the updates (the default) and any
  // op of the optimizer's own that runs after them (Adam's beta powers). The op
  // ApplyGradients returns waits for all of them.
  virtual std::vector<Output> Finish(const Scope& scope, const std::vector<Output>& update_ops);

  // The learning rate for a variable of `dtype`: `tensor` (a float scalar, such
  // as a decay of the global step, cast to `dtype` when it differs) when valid,
  // else the constant `value`.
  static Output LearningRate(const Scope& scope, double value, const Output& tensor, DataType dtype);

  // A zero-initialized, non-trainable slot for `var`, named "<var>/<name()>"
  // (made unique) inside the scope's variable scope, as TF's, on var's device.
  // Created once per graph and var.
  Variable ZerosSlot(const Scope& scope, const Variable& var, const std::string& slot_name);
  // The same slot with every element `initial` (RMSProp's ones, Adagrad's 0.1).
  Variable ConstantSlot(const Scope& scope, const Variable& var, const std::string& slot_name, double initial);
  // A non-trainable scalar of `dtype` initialized to `initial`, named `name` (made
  // unique) inside the scope's variable scope, on `colocate`'s device. Created
  // once per graph.
  Variable NonSlotVariable(const Scope& scope, const std::string& name, double initial, DataType dtype,
                           const Variable& colocate);

 private:
  std::string SlotKey(const std::string& slot_name, const std::string& var_name) const;
  std::string name_;
  int64_t id_;  // distinguishes two optimizers' slots in one graph
};

// The int64 scalar "global_step" (non-trainable, in collections "variables" and
// "global_step"), created at zero on first use (tf.train.get_or_create_global_step).
Variable GetOrCreateGlobalStep(const Scope& scope);

// scale * sum over vars of L2Loss(var) = scale * sum(var^2) / 2: weight decay to
// add to a loss.
Output L2Regularization(const Scope& scope, const std::vector<Variable>& vars, double scale);

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_OPTIMIZER_H_
