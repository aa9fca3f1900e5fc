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
  std::vector<const Node*> members;  // in graph order
};

// `needed[id]` marks the step's nodes; `excluded` the ones that may not join
// (fetched, targeted, fused); `device_of` where a needed node runs (null when
// it could not be placed).
std::vector<PlannedGroup> ChooseGroups(const Graph& graph, const std::vector<char>& needed,
                                       const std::function<bool(const Node*)>& excluded,
                                       const std::function<Device*(const Node*)>& device_of,
                                       const KernelRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_UPDATE_GROUPS_H_
