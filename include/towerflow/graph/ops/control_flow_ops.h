// Builders for ops that order work rather than compute values: NoOp and Group.
#ifndef TOWERFLOW_GRAPH_OPS_CONTROL_FLOW_OPS_H_
#define TOWERFLOW_GRAPH_OPS_CONTROL_FLOW_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

// An op that does nothing; with control dependencies it is a barrier.
Node* NoOp(const Scope& scope);
// One op that runs when all of `deps` have run (tf.group). Named "group_deps"
// unless the scope gives a name.
Node* Group(const Scope& scope, const std::vector<Output>& deps);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_CONTROL_FLOW_OPS_H_
