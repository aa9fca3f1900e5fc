// Internal to the data module's queue family: how queue op schemas encode
// component lists and shapes in attrs (see queue_ops.h), shared by the builders,
// shape functions, kernels and QueueFillStats, and the registration hooks that
// RegisterQueueOps calls. Not part of the public API. Plain functions; thread-safe.
#ifndef TOWERFLOW_DATA_QUEUE_INTERNAL_H_
#define TOWERFLOW_DATA_QUEUE_INTERNAL_H_

#include <string>
#include <vector>

#include "towerflow/data/queue.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/graph/graph.h"
#include "towerflow/graph/op_def.h"

namespace tw::queue_internal {

// The list argument carrying the components of dtype t ("components_float") and
// the attr holding their count ("N_float"). Lists appear in AllDataTypes() order.
std::string GroupArgName(DataType t);
std::string CountAttrName(DataType t);
// For each component, its index in the flattened per-dtype lists: components of
// the first dtype of AllDataTypes() first, each dtype's in tuple order.
std::vector<int> GroupedPositions(const std::vector<DataType>& types);

// Shapes attrs: every dimension flattened, and one rank per component.
std::vector<int64_t> FlattenDims(const std::vector<TensorShape>& shapes);
std::vector<int64_t> Ranks(const std::vector<TensorShape>& shapes);
// InvalidArgument for ranks and dims that do not add up, or negative values.
StatusOr<std::vector<TensorShape>> UnflattenShapes(const std::vector<int64_t>& dims,
                                                   const std::vector<int64_t>& ranks);

// The QueueResource spec a FIFOQueue / RandomShuffleQueue node describes; its
// name is the resource key: [container "/"] (shared_name or the node's name).
StatusOr<QueueResource::Spec> SpecFromNode(const Node& node);
// The tag TF's summary for this queue would have (queue_stats.h).
std::string FillSummaryName(const Node& node, const QueueResource::Spec& spec);

void RegisterQueueKernels(KernelRegistry& kernels);
// CountUpTo and RandomShuffle: schemas, kernels and no-gradient marks.
void RegisterInputProducerOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);

}  // namespace tw::queue_internal

#endif  // TOWERFLOW_DATA_QUEUE_INTERNAL_H_
