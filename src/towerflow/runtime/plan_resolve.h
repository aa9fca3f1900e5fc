// The plan builder's resolving pass (plan_builder.h, pass 5): work a step
// would repeat with the same result every time is done once, when the plan is
// built, and the items that did it no longer run.
//
// ResolveFixedItems runs the kernels whose outputs are fixed
// (OpKernel::OutputsFixed: Const, VariableV2) and that read no input: their
// outputs become the plan's constants (ExecutorPlan::constants), which their
// readers read directly. Control inputs do not keep such an item (a Const
// built under tf.control_dependencies, as an optimizer's hyper-parameters
// are): its readers wait for those predecessors themselves instead. An item
// whose value is fetched or read by a control edge stays; so does one whose
// kernel fails here (its step reports the error as before).
//
// Reads of variables (`name/read` Identities) stay items. An Identity passes
// the variable's buffer on, but it also orders: its readers become ready when
// it has run, at the start of the step, so a read that the program left
// unordered with an update of the same step (a weight fetched beside its
// train op) comes first in practice; readers taking the reference themselves
// would read it whenever they run. On a GPU an Identity queues no work, so a
// step graph loses nothing by them. NoOp joins are kept: one NoOp between N
// predecessors and M successors costs one item, where its removal would cost
// N x M edges. Reshape and ExpandDims stay items: their output shapes are
// known only when they run.
#ifndef TOWERFLOW_RUNTIME_PLAN_RESOLVE_H_
#define TOWERFLOW_RUNTIME_PLAN_RESOLVE_H_

#include "towerflow/device/resource_mgr.h"
#include "towerflow/runtime/plan.h"

namespace tw {

// REQUIRES: the plan's items, edges and fetches are final (transfers
// included); before step graphs, roots and entry uses are computed.
void ResolveFixedItems(ExecutorPlan* plan, ResourceMgr* resources);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_PLAN_RESOLVE_H_
