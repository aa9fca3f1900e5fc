// The pitfall detector: finds towers that train on the same batch because the
// batch was dequeued once, outside the towers (the seed's second lesson).
//
// For each dequeue node (QueueDequeue, QueueDequeueMany, QueueDequeueUpTo, and
// a dataset iterator's IteratorGetNext), it
// follows data edges forward from the dequeue's outputs through the forward
// pass (not into gradient nodes, whose names carry a "gradients" scope, and not
// through slicing ops: a batch split into per-tower slices gives each tower its
// own data). Among the nodes reached, a tower's loss is a node whose first
// output is a floating-point scalar and that is computed from no other such
// node (an average of the towers' losses, downstream of them, is no tower) and,
// when gradients are taken of some of them, that is differentiated (a metric
// such as an accuracy over all towers' batches is no tower); the
// devices of these losses are the towers, each named by its loss's top-level
// name scope ("tower_0"). Two or more devices computing losses from one dequeue
// is a finding. A Session runs the detection when it places
// nodes: it logs each finding once as a warning, or, with
// SessionOptions::strict_tower_inputs, fails its runs with InvalidArgument.
//
// Pure functions of the graph and the devices given; thread-compatible (the
// graph must not grow during a call).
#ifndef TOWERFLOW_RUNTIME_PITFALL_DETECTOR_H_
#define TOWERFLOW_RUNTIME_PITFALL_DETECTOR_H_

#include <functional>
#include <string>
#include <vector>

#include "towerflow/device/placer.h"
#include "towerflow/graph/graph.h"

namespace tw {

struct SharedBatchFinding {
  struct Tower {
    std::string name;    // top-level name scope of its loss ("tower_0"); the loss's name at the root
    std::string device;  // "/device:GPU:0"
    const Node* loss = nullptr;  // the first loss node found on that device
  };
  const Node* dequeue = nullptr;
  std::vector<Tower> towers;  // two or more, ordered by name

  // "towers tower_0 (/device:GPU:0) and tower_1 (/device:GPU:1) both consume
  // 'shuffle_batch/dequeue_many' built once outside the towers: all towers will
  // train on the same batch. Dequeue inside each tower (tw::train::Replicate
  // does this for you)."
  std::string Message() const;
};

// The device of a node, as "/device:GPU:0"; "" when unknown (not placed).
using NodeDeviceFn = std::function<std::string(const Node&)>;

std::vector<SharedBatchFinding> FindSharedBatches(const Graph& graph, const NodeDeviceFn& device_of);
// With a session's placement (Session::placement()).
std::vector<SharedBatchFinding> FindSharedBatches(const Graph& graph, const Placement& placement);
// Before any session: each node's requested device, where it names a type and
// an id (a node without one counts as unknown).
std::vector<SharedBatchFinding> FindSharedBatchesByRequest(const Graph& graph);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_PITFALL_DETECTOR_H_
