#include "towerflow/graph/ops/control_flow_ops.h"

#include "towerflow/graph/ops/register.h"

namespace tw {

void RegisterControlFlowOps(OpRegistry& r) {
  r.Register(OpDefBuilder("NoOp").Doc("Does nothing; a target for control dependencies.").Build()).Check();
}

Node* NoOp(const Scope& scope) { return NodeBuilder(scope, "NoOp").Finalize(); }

Node* Group(const Scope& scope, const std::vector<Output>& deps) {
  NodeBuilder b(scope, "NoOp", "group_deps");
  for (const Output& d : deps) b.ControlInput(d.node);
  return b.Finalize();
}

}  // namespace tw
