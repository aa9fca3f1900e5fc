#include "towerflow/train/internal/variable_readers.h"

#include <set>

namespace tw::train::internal {

bool IsPassThrough(const Node& node) {
  static const std::set<std::string> kOps = {"Identity", "StopGradient", "EnsureShape", "Reshape", "ExpandDims",
                                             "Squeeze"};
  return kOps.count(node.op()) > 0;
}

std::vector<Node*> VariableReaders(const Graph& graph, const std::vector<Variable>& vars,
                                   const std::vector<Output>& outputs) {
  // The ancestors of the outputs.
  std::vector<char> ancestor(static_cast<size_t>(graph.num_nodes()), 0);
  std::vector<const Node*> stack;
  auto visit = [&](const Node* n) {
    if (n != nullptr && !ancestor[static_cast<size_t>(n->id())]) {
      ancestor[static_cast<size_t>(n->id())] = 1;
      stack.push_back(n);
    }
  };
  for (const Output& o : outputs) visit(o.node);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Output& in : n->inputs()) visit(in.node);
    for (const Node* c : n->control_inputs()) visit(c);
  }
  // From each variable's ref output along value edges, through pass-through ops.
  std::vector<char> reader(static_cast<size_t>(graph.num_nodes()), 0);
  std::set<std::pair<int, int>> seen;  // (node id, output index) aliasing a variable
  std::vector<Output> aliases;
  for (const Variable& v : vars) {
    if (v.valid() && seen.insert({v.ref.node->id(), v.ref.index}).second) aliases.push_back(v.ref);
  }
  while (!aliases.empty()) {
    const Output alias = aliases.back();
    aliases.pop_back();
    for (Node* c : graph.consumers(alias.node)) {
      if (!ancestor[static_cast<size_t>(c->id())]) continue;
      for (int i = 0; i < c->num_inputs(); ++i) {
        const Output& in = c->inputs()[static_cast<size_t>(i)];
        if (in.node != alias.node || in.index != alias.index || c->input_is_ref(i)) continue;
        reader[static_cast<size_t>(c->id())] = 1;
        if (IsPassThrough(*c) && seen.insert({c->id(), 0}).second) aliases.push_back(Output(c, 0));
      }
    }
  }
  std::vector<Node*> out;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (reader[static_cast<size_t>(id)]) out.push_back(graph.node(id));
  }
  return out;
}

}  // namespace tw::train::internal
