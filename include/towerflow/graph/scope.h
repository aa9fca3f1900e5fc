// Scope: the context in which user code builds nodes. It carries the graph, the
// name scope ("tower_0/dense"), the requested device, control dependencies, the
// variable scope with its reuse flag, and a shared error accumulator.
//
// Scopes are cheap values; With*/NewSubScope return modified copies that share
// the graph and the error list. A builder that fails records its Status (naming
// the node and op) in the scope and returns a null Output; later builders given a
// null input record nothing more. User code checks `scope.ok()` once, as the API
// sketch shows. Not thread-safe: one thread builds a graph at a time.
#ifndef TOWERFLOW_GRAPH_SCOPE_H_
#define TOWERFLOW_GRAPH_SCOPE_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <memory>
#include <string>
#include <vector>

#include "towerflow/graph/graph.h"

namespace tw {

enum class Reuse { kInherit, kReuse, kNoReuse };

class Scope {
 public:
  explicit Scope(Graph& graph);

  // A child name scope. The first "dense" under a scope is "dense", the next one
  // "dense_1", as TF's name_scope does.
  Scope NewSubScope(const std::string& name) const;
  // The next node gets this name, made unique (one ending in '/', a scope's full name, as it is).
  Scope WithOpName(const std::string& name) const;
  // Requested device for nodes built in the returned scope ("/gpu:0"), merged
  // with the enclosing one as TF merges nested tf.device scopes: a partial spec
  // fills in from the outer spec, a complete one replaces it, "" clears it. A
  // malformed string is InvalidArgument recorded in the scope (the enclosing
  // device is kept). Placement itself happens when a session is created.
  Scope WithDevice(const std::string& device) const;
  Scope WithControlDependencies(const std::vector<Output>& deps) const;
  Scope WithNoControlDependencies() const;
  // Nodes must share a device with `other`'s node (TF's colocate_with).
  Scope ColocatedWith(const Output& other) const;
  // A variable scope: prefixes variable names and opens a name scope of the same
  // name, as tf.variable_scope does. kReuse makes GetVariable return existing
  // variables (and fail on missing ones); kInherit keeps the enclosing setting.
  Scope WithVariableScope(const std::string& name, Reuse reuse = Reuse::kInherit) const;
  // The same variable scope with reuse on (tf.get_variable_scope().reuse_variables()).
  Scope WithReuseVariables() const;
  // The same variable scope with reuse off: GetVariable creates (tf.Variable
  // creates its variable whatever the enclosing scope's reuse).
  Scope WithoutReuse() const;

  Graph& graph() const { return *state_->graph; }
  bool ok() const { return state_->errors.empty(); }
  // The first error, with a count of the others; OK if none.
  Status status() const;
  // Every recorded error, in order.
  const std::vector<Status>& errors() const { return state_->errors; }
  void UpdateStatus(const Status& s) const;
  // Forgets every error after the first `keep` (the errors are shared by all
  // scopes of one root): for a caller that handed them on, as the Python
  // bindings raise a failed build and the program may go on with the graph.
  // What the failed builders added to the graph stays in it.
  void ForgetErrors(size_t keep) const;

  const std::string& name_scope() const { return name_scope_; }
  const std::string& device() const { return device_; }
  const std::vector<Node*>& control_dependencies() const { return control_deps_; }
  const std::vector<std::string>& colocation() const { return colocation_; }
  const std::string& variable_scope() const { return var_scope_; }
  bool reuse() const { return reuse_; }

  // The unique full name for the next node: the WithOpName name if set, else
  // `default_name`, under the name scope.
  std::string MakeNodeName(const std::string& default_name) const;
  // "name_scope/name" without uniquing.
  std::string Prefixed(const std::string& name) const;

 private:
  struct State {
    Graph* graph;
    std::vector<Status> errors;
  };
  std::shared_ptr<State> state_;
  std::string name_scope_;
  std::string op_name_;
  std::string device_;
  std::vector<Node*> control_deps_;
  std::vector<std::string> colocation_;
  std::string var_scope_;
  bool reuse_ = false;
};

// Builds one node in a scope: NodeBuilder(scope, "MatMul").Input(a).Input(b)
//   .Attr("transpose_a", true).Finalize(). Returns null (and records the error in
// the scope) on failure or when any input is null.
class NodeBuilder {
 public:
  NodeBuilder(const Scope& scope, std::string op, std::string default_name = "");
  NodeBuilder& Input(const Output& input);
  NodeBuilder& Inputs(const std::vector<Output>& inputs);
  NodeBuilder& ControlInput(Node* node);
  NodeBuilder& Attr(const std::string& name, AttrValue value);
  Node* Finalize();

 private:
  const Scope& scope_;
  NodeSpec spec_;
  std::string default_name_;
  bool has_null_input_ = false;
};

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_SCOPE_H_
