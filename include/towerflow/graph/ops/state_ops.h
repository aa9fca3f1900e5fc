// Variables: mutable tensors that live in a session across steps, as TF1's
// reference variables do. A VariableV2 node outputs a reference to its storage
// (a tw::Var in the session's ResourceMgr); Assign/AssignAdd/AssignSub and the
// training ops (training_ops.h) change it in place; any op reading the ref output
// as a value sees the current tensor, and FailedPrecondition ("Attempting to use
// uninitialized value <var>") before the first Assign.
//
// GetVariable is tf.get_variable: variables are named by the variable scope
// (Scope::WithVariableScope), kept in a per-graph store (Graph objects
// "var:<name>") and shared through reuse. They live outside the current name
// scope: "tower_1/dense/kernel" is never made unique, so a reused scope finds it.
// Building is not thread-safe (one thread builds a graph at a time); errors are
// recorded in the scope and the functions return a Variable with null outputs.
#ifndef TOWERFLOW_GRAPH_OPS_STATE_OPS_H_
#define TOWERFLOW_GRAPH_OPS_STATE_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <functional>
#include <string>
#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

// A variable as builders see it: `ref` is the VariableV2 node's ref output (pass
// it to Assign and the Apply* ops), `value` the "<name>/read" Identity snapshot
// that model code reads, `initializer` its "<name>/Assign" node. Copyable handle;
// the graph owns the nodes.
struct Variable {
  Output ref;
  Output value;
  Node* initializer = nullptr;
  std::string name;

  bool valid() const { return ref.valid(); }
};

// Builds the initial value of a variable of `shape` and `dtype` in `scope`
// (named "<var>/Initializer/..."). See random_ops.h for the standard ones.
using Initializer = std::function<Output(const Scope&, const TensorShape&, DataType)>;

struct VariableOptions {
  DataType dtype = kFloat32;
  // Default: GlorotUniformInitializer() for float types, zeros otherwise (TF's
  // defaults).
  Initializer initializer = nullptr;
  // Trainable variables join "trainable_variables", which optimizers minimize over.
  bool trainable = true;
  // Default {"variables"} (collections::kGlobalVariables); "trainable_variables"
  // is added when `trainable`.
  std::vector<std::string> collections = {};
};

// tf.get_variable. The full name is scope.variable_scope() + "/" + name. Without
// reuse it creates the variable (AlreadyExists "Variable <full> already exists,
// disallowed. Did you mean to set reuse=True in VarScope?" if the store has it);
// with reuse it returns the stored one (NotFound "Variable <full> does not exist,
// or was not created with GetVariable(). ..." if absent; InvalidArgument naming
// both shapes or dtypes when they differ from the stored variable's).
Variable GetVariable(const Scope& scope, const std::string& name, const TensorShape& shape,
                     VariableOptions options = {});

// Creates a variable named exactly `full_name`, ignoring the variable scope and
// its reuse flag (optimizer slots, global_step). AlreadyExists if the store has it.
// Nodes get `scope`'s device; the initializer runs with no control dependencies.
Variable CreateVariable(const Scope& scope, const std::string& full_name, const TensorShape& shape,
                        VariableOptions options = {});

// The stored variable called `full_name`, or nullptr.
const Variable* FindVariable(Graph& graph, const std::string& full_name);

// Variables in collection "variables" / "trainable_variables", in creation order.
std::vector<Variable> GlobalVariables(const Graph& graph);
std::vector<Variable> TrainableVariables(const Graph& graph);

// The raw variable op: a ref to storage named `shared_name` (default: the node's
// name) of `dtype` and `shape`. Prefer GetVariable.
Output VariableV2(const Scope& scope, const PartialShape& shape, DataType dtype,
                  const std::string& shared_name = "");

struct AssignOptions {
  // Require value's shape to equal the variable's (InvalidArgument naming the
  // variable and both shapes otherwise); false lets Assign change the shape.
  bool validate_shape = true;
  bool use_locking = true;
};
// ref = value; outputs the ref, so further ops see the new value.
Output Assign(const Scope& scope, const Output& ref, const Output& value, AssignOptions options = {});
Output Assign(const Scope& scope, const Variable& var, const Output& value, AssignOptions options = {});
// ref += value / ref -= value, in place; shapes must be equal.
Output AssignAdd(const Scope& scope, const Output& ref, const Output& value);
Output AssignAdd(const Scope& scope, const Variable& var, const Output& value);
Output AssignSub(const Scope& scope, const Output& ref, const Output& value);
Output AssignSub(const Scope& scope, const Variable& var, const Output& value);
// A bool scalar: whether the variable has been assigned.
Output IsVariableInitialized(const Scope& scope, const Output& ref);
// The variable's value when it has been assigned, else `initial` (of its
// dtype): TF1's Variable.initialized_value(), for initial values computed from
// other variables (an optimizer's or moving average's copy of a variable)
// whatever order their initializers run in. `initial` is computed either way.
Output InitializedValue(const Scope& scope, const Variable& var);

// One op running the initializers of the given variables (tf.variables_initializer),
// named "init" unless the scope names it.
Node* VariablesInitializer(const Scope& scope, const std::vector<Variable>& vars);
// The initializers of collection "variables" / "local_variables", as one op "init".
// Returns nullptr only if building it failed.
Node* GlobalVariablesInitializer(Graph& graph);
Node* LocalVariablesInitializer(Graph& graph);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_STATE_OPS_H_
