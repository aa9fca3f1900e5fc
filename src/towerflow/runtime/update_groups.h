// Update groups at plan time: the variable updates of a step that can share
// one kernel (kernel_registry.h's GroupDef), as PyTorch's foreach and fused
// optimizers and apex's multi-tensor apply update every parameter in one
// launch. On a GPU the step then queues one update kernel instead of one
// per variable.
//
// A group holds nodes of one op, placed on one device, of one dtype, that
// the GroupDef finds compatible (the same hyper-parameter inputs and attrs),
// none fetched, targeted or part of a fusion, and none leading to another
// through the step's edges (the group runs as one item: a path between two
// members would be a cycle). Nodes join the first open group they fit, in
// graph order; a group needs two members. Pure computation over the graph.
//
// The step's counter joins too, as PyTorch's fused optimizers and apex bump
// their step in the update's launch: the global step's AssignAdd (an integer
// scalar variable plus a constant) placed with a group whose every member it
// waits for, and for nothing else (control inputs all members, at least one;
// data inputs a VariableV2 and a Const of their own), becomes the group's last
// member (its `step_bump`): it still runs after every update, as the group is
// one item. It may be a target of the step, not fetched.
#ifndef TOWERFLOW_RUNTIME_UPDATE_GROUPS_H_
#define TOWERFLOW_RUNTIME_UPDATE_GROUPS_H_

#include <functional>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/graph.h"

namespace tw {

struct PlannedGroup {
  const GroupDef* def = nullptr;
  Device* device = nullptr;
  std::vector<const Node*> members;  // in graph order; the step bump, if any, last
  bool step_bump = false;            // members.back() is the global step's AssignAdd
};

// `needed[id]` marks the step's nodes; `excluded` the ones that may not join
// (fetched, targeted, fused); `bump_excluded` the ones that may not join as a
// step bump (fetched, fused: a target may); `device_of` where a needed node
// runs (null when it could not be placed).
std::vector<PlannedGroup> ChooseGroups(const Graph& graph, const std::vector<char>& needed,
                                       const std::function<bool(const Node*)>& excluded,
                                       const std::function<bool(const Node*)>& bump_excluded,
                                       const std::function<Device*(const Node*)>& device_of,
                                       const KernelRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_UPDATE_GROUPS_H_
