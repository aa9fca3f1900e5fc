// Placer: assigns every node of a graph to one device of a DeviceSet, recording
// per node the device and why, as TF's Placer (tensorflow/core/common_runtime/
// placer.cc, TF 1.x) does.
//
// The passes, in order (each names itself in the reasons it records):
//   explicit     parse each node's requested device (malformed: InvalidArgument)
//                and find the device types with a kernel for it;
//   colocation   union-find over "loc:@name" colocation attrs, then over ref
//                edges (a variable with its reads, assigns and Apply* updates);
//                a group's requests are merged (a ref edge overrides the
//                consumer's conflicting request with the variable's) and its
//                supported device types intersected;
//   default      a group without a request goes to the highest-priority device
//                that every member has a kernel for: the lowest-id GPU, else
//                CPU:0 (a "generator", a node without inputs, goes with its
//                consumers when it can, as TF's heuristic A);
//   soft         with allow_soft_placement, a group whose request no device
//                satisfies (no kernel for that type, or no such device) goes to
//                a device that has a kernel, type and id cleared as in TF;
//                without it, InvalidArgument "Cannot assign a device for
//                operation '<name>': ..." with TF's texts.
// Failures are recorded per node (NodePlacement::status) so that one bad node
// does not stop the others; a session reports them when it runs a plan that
// contains the node. Placement is incremental: Run places the nodes added since
// the last run and never moves earlier ones.
//
// With log_device_placement, Run prints "name: (Op): <full device name>" to
// stdout for each node it places (verbosity 1 appends " [reason]"), as TF's
// LogDeviceAssignment. Placer is stateless between runs; a Placement is a plain
// value, not synchronized: the session guards it.
#ifndef TOWERFLOW_DEVICE_PLACER_H_
#define TOWERFLOW_DEVICE_PLACER_H_

#include <string>
#include <vector>

#include "towerflow/device/device_set.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/graph.h"

namespace tw {

struct NodePlacement {
  Device* device = nullptr;  // null when placement failed
  // Why: "explicit request /device:GPU:0", "colocated with 'v' (ref edge)",
  // "colocation group loc:@x", "default: GPU has a kernel (lowest id GPU)",
  // "default: no GPU kernel, CPU", "soft placement: no GPU kernel for
  // DecodeRaw, moved to /device:CPU:0", ...
  std::string reason;
  Status status;  // why the node could not be placed; OK when placed
  bool placed() const { return device != nullptr; }
};

class Placement {
 public:
  // Nodes [0, num_nodes()) have been through the placer (placed or failed).
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  // REQUIRES: id < num_nodes().
  const NodePlacement& at(int id) const { return nodes_[static_cast<size_t>(id)]; }
  // nullptr when the node has not been through the placer.
  const NodePlacement* Find(const Node& node) const {
    return node.id() < num_nodes() ? &at(node.id()) : nullptr;
  }
  // nullptr when not placed (yet, or because placement failed).
  Device* device(const Node& node) const {
    const NodePlacement* p = Find(node);
    return p ? p->device : nullptr;
  }
  // The full device name; "" when not placed.
  std::string device_name(const Node& node) const;
  // "" when not placed.
  std::string reason(const Node& node) const;
  // The log line: "name: (Op): /job:localhost/replica:0/task:0/device:GPU:0",
  // with " [reason]" when `with_reason`.
  std::string LogLine(const Node& node, bool with_reason) const;

 private:
  friend class Placer;
  std::vector<NodePlacement> nodes_;  // by node id
};

struct PlacerOptions {
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // 1: log lines carry the reason.
  int log_verbosity = 0;
};

class Placer {
 public:
  // All must outlive the Placer.
  Placer(const Graph& graph, const DeviceSet& devices, const KernelRegistry& kernels, PlacerOptions options);

  // Places nodes [placement->num_nodes(), graph.num_nodes()), keeping earlier
  // assignments (a new node colocated with an earlier one joins its device).
  // Records every node's device or error; returns the first error in node order
  // (InvalidArgument; Unimplemented for an op with no kernel on any device), OK
  // when all were placed.
  Status Run(Placement* placement) const;

 private:
  const Graph& graph_;
  const DeviceSet& devices_;
  const KernelRegistry& kernels_;
  PlacerOptions options_;
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_PLACER_H_
