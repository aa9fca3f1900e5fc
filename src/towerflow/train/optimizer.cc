#include "towerflow/train/optimizer.h"

#include <atomic>

#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/train/internal/variable_readers.h"

namespace tw::train {
namespace {

std::atomic<int64_t> next_optimizer_id{0};

// `base` if no stored variable has that name, else base_1, base_2, ...
// `name` inside the scope's variable scope, as TF names an optimizer's
// variables (minimize under tf.variable_scope("vs"): "vs/w/Adam").
std::string InVariableScope(const Scope& scope, const std::string& name) {
  return scope.variable_scope().empty() ? name : scope.variable_scope() + "/" + name;
}

std::string UniqueVariableName(Graph& g, const std::string& base) {
  if (FindVariable(g, base) == nullptr) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (FindVariable(g, candidate) == nullptr) return candidate;
  }
}

const Variable* FindStored(Graph& g, const std::string& key) {
  std::any* stored = g.FindObject(key);
  return stored == nullptr ? nullptr : std::any_cast<Variable>(stored);
}

// Adds `spec`, named exactly as given (a name scope's own name, which no node
// has yet); errors go into `scope`.
Node* AddNamedAsScope(const Scope& scope, NodeSpec spec) {
  StatusOr<Node*> node = scope.graph().AddNode(std::move(spec));
  if (!node.ok()) {
    scope.UpdateStatus(node.status());
    return nullptr;
  }
  return *node;
}

}  // namespace

Optimizer::Optimizer(std::string name) : name_(std::move(name)), id_(next_optimizer_id.fetch_add(1)) {}

Optimizer::~Optimizer() = default;

std::string Optimizer::SlotKey(const std::string& slot_name, const std::string& var_name) const {
  return "optimizer:" + std::to_string(id_) + ":" + slot_name + ":" + var_name;
}

StatusOr<GradsAndVars> Optimizer::ComputeGradients(const Scope& scope, const Output& loss,
                                                   std::vector<Variable> vars) {
  TW_RETURN_IF_ERROR(scope.status());
  if (!loss.valid()) {
    return errors::InvalidArgument(name_, ": the loss is a null Output (did graph building fail?)");
  }
  if (vars.empty()) vars = TrainableVariables(scope.graph());
  if (vars.empty()) return errors::InvalidArgument(name_, ": No variables to optimize");
  std::vector<Output> xs;
  for (const Variable& v : vars) {
    if (!v.valid()) return errors::InvalidArgument(name_, ": a variable to optimize is null");
    // The ref output: gradients reach it through "<var>/read" and through any
    // op that reads the ref directly.
    xs.push_back(v.ref);
  }
  TW_ASSIGN_OR_RETURN(std::vector<Output> grads, Gradients(scope, {loss}, xs));
  GradsAndVars out;
  for (size_t i = 0; i < vars.size(); ++i) out.emplace_back(grads[i], vars[i]);
  return out;
}

Node* Optimizer::ApplyGradients(const Scope& scope, const GradsAndVars& grads_and_vars,
                                Variable* global_step, const std::string& name) {
  std::vector<std::pair<Output, Variable>> updates;
  std::string names;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!var.valid()) {
      scope.UpdateStatus(errors::InvalidArgument(name_, ": a variable in grads_and_vars is null"));
      return nullptr;
    }
    names += (names.empty() ? "" : ", ") + var.name;
    if (grad.valid()) updates.emplace_back(grad, var);
  }
  if (updates.empty()) {
    scope.UpdateStatus(errors::InvalidArgument(
        "No gradients provided for any variable, check your graph for ops that do not support "
        "gradients, between variables [", names, "] and the loss"));
    return nullptr;
  }
  Scope s = scope.NewSubScope(name.empty() ? name_ : name);
  std::vector<Variable> vars;
  for (const auto& u : updates) vars.push_back(u.second);
  CreateSlots(s, vars);
  Prepare(s);
  // Updates change variables in place, and backprop reads the same buffers
  // (dX = dY * W^T): every update waits until every node computing the
  // gradients that reads an updated variable has run (internal/
  // variable_readers.h). Without this barrier an update may land before a
  // gradient that still needs the old weight, and training stops being
  // deterministic. The gradients themselves are data inputs of the updates.
  std::vector<Output> grads;
  for (const auto& u : updates) grads.push_back(u.first);
  std::vector<Output> reads;
  for (Node* r : internal::VariableReaders(s.graph(), vars, grads)) reads.push_back(Output(r));
  Node* gradients_done = Group(s.WithOpName("gradients_done"), reads);
  std::vector<Output> update_ops;
  for (const auto& [grad, var] : updates) {
    Scope us = s.NewSubScope("update_" + var.name)
                   .WithControlDependencies({Output(gradients_done)})
                   .WithDevice(var.ref.node->requested_device())
                   .ColocatedWith(var.ref);
    update_ops.push_back(ApplyDense(us, grad, var));
  }
  if (!scope.ok()) return nullptr;
  std::vector<Output> finish = Finish(s, update_ops);
  if (!scope.ok()) return nullptr;
  // The op returned is named as the optimizer's name scope ("Adam", "Adam_1",
  // or the name given), as TF names it, so that a program finds its train op
  // by that name: the global step's AssignAdd, else a NoOp; it runs after
  // every update (and whatever Finish added).
  NodeSpec spec;
  spec.name = s.name_scope();
  for (const Output& f : finish) spec.control_inputs.push_back(f.node);
  if (global_step == nullptr) {
    spec.op = "NoOp";
    spec.device = s.device();
    return AddNamedAsScope(scope, std::move(spec));
  }
  // The step counts completed updates: it moves only after every variable has.
  Scope gs = s.WithDevice(global_step->ref.node->requested_device()).ColocatedWith(global_step->ref);
  Tensor one(global_step->ref.dtype(), TensorShape{});
  Status filled = DispatchNumeric(one.dtype(), "global_step", [&]<typename T>() {
    one.data<T>()[0] = T(1);
    return Status::OK();
  });
  if (!filled.ok()) {
    scope.UpdateStatus(errors::InvalidArgument("global_step ", global_step->name, " must be an integer, got ",
                                               DataTypeName(one.dtype())));
    return nullptr;
  }
  Output one_const = Const(gs.WithOpName("increment_global_step/value"), one);
  if (!one_const.valid()) return nullptr;
  spec.op = "AssignAdd";
  spec.inputs = {global_step->ref, one_const};
  spec.device = gs.device();
  spec.colocation = gs.colocation();
  return AddNamedAsScope(scope, std::move(spec));
}

Node* Optimizer::Minimize(const Scope& scope, const Output& loss, Variable* global_step,
                          std::vector<Variable> vars) {
  auto grads = ComputeGradients(scope, loss, std::move(vars));
  if (!grads.ok()) {
    if (scope.ok()) scope.UpdateStatus(grads.status());
    return nullptr;
  }
  return ApplyGradients(scope, *grads, global_step);
}

std::vector<Output> Optimizer::Finish(const Scope& /*scope*/, const std::vector<Output>& update_ops) {
  return update_ops;
}

const Variable* Optimizer::GetSlot(Graph& graph, const Variable& var, const std::string& slot_name) const {
  return FindStored(graph, SlotKey(slot_name, var.name));
}

const Variable* Optimizer::GetNonSlotVariable(Graph& graph, const std::string& name) const {
  return FindStored(graph, SlotKey("", name));
}

Variable Optimizer::ZerosSlot(const Scope& scope, const Variable& var, const std::string& slot_name) {
  return ConstantSlot(scope, var, slot_name, 0.0);
}

Variable Optimizer::ConstantSlot(const Scope& scope, const Variable& var, const std::string& slot_name,
                                 double initial) {
  Graph& g = scope.graph();
  if (const Variable* found = GetSlot(g, var, slot_name)) return *found;
  const TensorShape shape = var.ref.shape().IsFullyDefined() ? var.ref.shape().ToTensorShape() : TensorShape{};
  Variable slot = CreateVariable(
      scope.WithDevice(var.ref.node->requested_device()),
      UniqueVariableName(g, InVariableScope(scope, var.name + "/" + name_)), shape,
      {.dtype = var.ref.dtype(),
       .initializer = initial == 0.0 ? ZerosInitializer() : ConstantInitializer(initial),
       .trainable = false});
  if (slot.valid()) g.SetObject(SlotKey(slot_name, var.name), slot);
  return slot;
}

Variable Optimizer::NonSlotVariable(const Scope& scope, const std::string& name, double initial,
                                    DataType dtype, const Variable& colocate) {
  Graph& g = scope.graph();
  if (const Variable* found = GetNonSlotVariable(g, name)) return *found;
  Variable v = CreateVariable(scope.WithDevice(colocate.ref.node->requested_device()),
                              UniqueVariableName(g, InVariableScope(scope, name)), TensorShape{},
                              {.dtype = dtype, .initializer = ConstantInitializer(initial), .trainable = false});
  if (v.valid()) g.SetObject(SlotKey("", name), v);
  return v;
}

Output Optimizer::LearningRate(const Scope& scope, double value, const Output& tensor, DataType dtype) {
  if (!tensor.valid()) return ScalarLike(scope, value, dtype);
  return tensor.dtype() == dtype ? tensor : Cast(scope, tensor, dtype);
}

Variable GetOrCreateGlobalStep(const Scope& scope) {
  Graph& g = scope.graph();
  std::vector<Variable> existing = g.GetCollection<Variable>(collections::kGlobalStep);
  if (!existing.empty()) return existing.front();
  return CreateVariable(scope, "global_step", TensorShape{},
                        {.dtype = kInt64,
                         .initializer = ZerosInitializer(),
                         .trainable = false,
                         .collections = {collections::kGlobalVariables, collections::kGlobalStep}});
}

Output L2Regularization(const Scope& scope, const std::vector<Variable>& vars, double scale) {
  Scope s = scope.NewSubScope("l2_regularization");
  std::vector<Output> losses;
  for (const Variable& v : vars) losses.push_back(L2Loss(s, v.value));
  if (losses.empty()) return ScalarLike(s, 0.0, kFloat32);
  Output total = losses.size() == 1 ? losses.front() : AddN(s, losses);
  if (!total.valid()) return Output();
  return Mul(s, ScalarLike(s, scale, total.dtype()), total);
}

}  // namespace tw::train
