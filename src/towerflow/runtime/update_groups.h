// Update groups at plan time: the variable updates of a step that can share
// one kernel (kernel_registry.h's GroupDef), as PyTorch's foreach and fused
// optimizers and apex's multi-tensor apply update every parameter in one
// launch. On a GPU the step then queues one update kernel instead of one
// per variable.
//
// A group's updates are nodes of one op, placed on one device, of one dtype,
// that the GroupDef finds compatible (the same hyper-parameter inputs and
// attrs), none fetched, targeted or part of a fusion, and none leading to
// another through the step's edges (the group runs as one item: a path
// between two members would be a cycle). Nodes join the first open group they
// fit, in graph order; a group needs two updates. Pure computation over the
// graph.
//
// The step's counter may join too, as PyTorch's fused optimizers and apex
// bump their step in the update's launch: the global step's AssignAdd (an
// integer scalar VariableV2 plus a Const of its shape, neither with inputs)
// placed with a group, whose control inputs are members of the group (at
// least one) and which nothing of the group waits for, becomes the group's
// last member (its `step_bump`), where its GroupDef takes one. It may be a
// target of the step, not fetched. Nothing outside the item sees the step
// before every update of the group is done (the GPU kernel adds it in its
// first launch).
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

// `needed[id]` marks the step's nodes that get items; `step_nodes[id]` those
// and the producers absorbed into fusions, whose edges still order the step (a
// path through one between two members would be a cycle through the group);
// `excluded` the ones that may not join (fetched, targeted, fused);
// `bump_excluded` the ones that may not join as a step bump (fetched, fused: a
// target may); `device_of` where a needed node runs (null when it could not be
// placed).
std::vector<PlannedGroup> ChooseGroups(const Graph& graph, const std::vector<char>& needed,
                                       const std::vector<char>& step_nodes,
                                       const std::function<bool(const Node*)>& excluded,
                                       const std::function<bool(const Node*)>& bump_excluded,
                                       const std::function<Device*(const Node*)>& device_of,
                                       const KernelRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_UPDATE_GROUPS_H_
