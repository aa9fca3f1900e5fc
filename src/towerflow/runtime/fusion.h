// Kernel fusion at plan time: TF's remapper, on the chains that cost a step
// a pass over memory.
//
// A step's plan may run a producer -> consumer pair as one fused kernel
// (KernelRegistry::RegisterFusion: Conv2D -> BiasAdd / BiasAddRelu on the CPU,
// one oneDNN convolution that adds the bias and applies ReLU to each output
// tile while it is in registers). The graph is not changed: the consumer's
// plan item runs the fused kernel, reading the producer's inputs followed by
// its own other inputs, and the producer gets no item. Fusion applies only
// where it cannot be observed: the producer's output is read by the consumer
// alone among the step's nodes (no other reader, not fetched, not fed), the
// producer has no control inputs and is not stateful, and both nodes are
// placed on one device with a fused kernel for its type and the dtype of the
// producer's output (or, for a fusion across host devices, the producer on
// another CPU device: FusionDef::across_host_devices). Nodes that wait on the
// producer through control edges wait on the fused item instead (an update
// barrier waiting on a forward convolution), unless one of them leads to the
// consumer, which would make a cycle. A fusion of more nodes
// (FusionDef::deeper) holds each of its edges to these rules, and no waiter
// on an absorbed node may lead to any node of the fusion, counting the
// fusions chosen before it as single nodes. Traces name a fused
// item by its ops: "Conv2D+BiasAddRelu", "MatMul+MatMul+AddN+Div+ApplyMomentum".
// SessionOptions::fuse_kernels = false turns it off (tests compare both).
#ifndef TOWERFLOW_RUNTIME_FUSION_H_
#define TOWERFLOW_RUNTIME_FUSION_H_

#include <functional>
#include <map>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/graph.h"

namespace tw {

struct PlannedFusion {
  const Node* producer = nullptr;  // the consumer's direct producer: the kernel is built from it
  int consumer_input = 0;          // the consumer's input that reads the producer's output 0
  const FusionDef* def = nullptr;
  // Every edge the kernel absorbs, the consumer's own first; more than one
  // for a FusionDef with `deeper` (MatMul per tower -> AddN -> Div).
  std::vector<FusedEdge> edges;

  // The absorbed nodes, each after those feeding it (in input order), the
  // producer last: grad0 grad1 sum mean for the towers' mean.
  std::vector<const Node*> Absorbed() const;
  // The fused item's inputs in order (kernel_registry.h's rule), as
  // (node, input index) pairs, for the fusion into `consumer`.
  std::vector<std::pair<const Node*, int>> Inputs(const Node* consumer) const;
};

// The fusions of one plan, keyed by consumer node id. `needed[id]` marks the
// step's nodes (after pruning), `fed` says whether an output is fed, `fetched`
// whether a node has a fetched output or is a target, `device_of` where a
// needed node runs (null when it could not be placed).
std::map<int, PlannedFusion> ChooseFusions(const Graph& graph, const std::vector<char>& needed,
                                           const std::function<bool(const Output&)>& fed,
                                           const std::function<bool(const Node*)>& fetched,
                                           const std::function<Device*(const Node*)>& device_of,
                                           const KernelRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_FUSION_H_
