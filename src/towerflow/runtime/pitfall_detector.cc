#include "towerflow/runtime/pitfall_detector.h"

#include <algorithm>
#include <map>
#include <set>

namespace tw {
namespace {

bool IsDequeue(const Node& n) {
  return n.op() == "QueueDequeue" || n.op() == "QueueDequeueMany" || n.op() == "QueueDequeueUpTo" ||
         n.op() == "IteratorGetNext";
}

// Slicing a batch gives each consumer different rows: a split batch is not a
// shared one.
bool IsSlicing(const Node& n) {
  static const std::set<std::string> kOps = {"Slice", "Split", "SplitV", "StridedSlice", "Gather", "GatherV2",
                                             "DynamicPartition"};
  return kOps.count(n.op()) > 0;
}

bool IsGradient(const Node& n) {
  const std::string& name = n.name();
  return name.rfind("gradients/", 0) == 0 || name.find("/gradients/") != std::string::npos ||
         name.rfind("gradients_", 0) == 0 || name.find("/gradients_") != std::string::npos;
}

bool IsLoss(const Node& n) {
  if (n.num_outputs() == 0 || n.output_is_ref(0) || !IsFloating(n.output_type(0))) return false;
  const PartialShape& shape = n.output_shape(0);
  return shape.known_rank() && shape.rank() == 0;
}

bool ConsumesData(const Node& consumer, const Node& producer) {
  for (const Output& in : consumer.inputs()) {
    if (in.node == &producer) return true;
  }
  return false;
}

// A loss that is trained on: symbolic gradients start from it (their first
// node, "gradients/OnesLike", reads it).
bool IsDifferentiated(const Graph& graph, const Node& loss) {
  for (const Node* c : graph.consumers(&loss)) {
    if (IsGradient(*c) && ConsumesData(*c, loss)) return true;
  }
  return false;
}

}  // namespace

std::string SharedBatchFinding::Message() const {
  std::string names;
  for (size_t i = 0; i < towers.size(); ++i) {
    if (i > 0) names += i + 1 == towers.size() ? " and " : ", ";
    names += towers[i].name + " (" + towers[i].device + ")";
  }
  return "towers " + names + (towers.size() == 2 ? " both" : " all") + " consume '" + dequeue->name() +
         "' built once outside the towers: all towers will train on the same batch. Dequeue inside each tower: "
         "build the dequeue in the tower's scope (with tw::train::Replicate, the batch source is called once per "
         "tower with that tower's scope and must build a new dequeue there, not return one built before).";
}

std::vector<SharedBatchFinding> FindSharedBatches(const Graph& graph, const NodeDeviceFn& device_of) {
  std::vector<SharedBatchFinding> findings;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& dequeue = *graph.node(id);
    if (!IsDequeue(dequeue)) continue;
    // The forward closure of the dequeue (node ids are topological: inputs
    // come before their consumers).
    std::vector<char> reached(static_cast<size_t>(graph.num_nodes()), 0);
    std::vector<const Node*> stack{&dequeue};
    std::vector<int> order;
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      for (const Node* c : graph.consumers(n)) {
        if (reached[static_cast<size_t>(c->id())] || !ConsumesData(*c, *n) || IsGradient(*c) || IsSlicing(*c)) {
          continue;
        }
        reached[static_cast<size_t>(c->id())] = 1;
        stack.push_back(c);
        order.push_back(c->id());
      }
    }
    std::sort(order.begin(), order.end());
    // A tower's loss is a loss computed from no other loss: an average of the
    // towers' losses (a report on CPU:0) is downstream of them and no tower.
    std::vector<char> after_loss(static_cast<size_t>(graph.num_nodes()), 0);
    std::map<std::string, const Node*> loss_by_device;  // first tower loss per device
    // When some losses are differentiated, only they are towers: a metric
    // (an accuracy over every tower's batch, on CPU:0) is no tower.
    bool trained = false;
    for (int nid : order) trained = trained || (IsLoss(*graph.node(nid)) && IsDifferentiated(graph, *graph.node(nid)));
    for (int nid : order) {
      const Node& n = *graph.node(nid);
      bool derived = false;
      for (const Output& in : n.inputs()) {
        const size_t i = static_cast<size_t>(in.node->id());
        if (reached[i] && (after_loss[i] || IsLoss(*in.node))) derived = true;
      }
      after_loss[static_cast<size_t>(nid)] = derived;
      if (derived || !IsLoss(n) || (trained && !IsDifferentiated(graph, n))) continue;
      const std::string device = device_of(n);
      if (!device.empty()) loss_by_device.emplace(device, &n);  // ids ascend: the first stays
    }
    if (loss_by_device.size() < 2) continue;
    SharedBatchFinding f;
    f.dequeue = &dequeue;
    for (const auto& [device, loss] : loss_by_device) {
      const std::string& name = loss->name();
      const size_t slash = name.find('/');
      f.towers.push_back({slash == std::string::npos ? name : name.substr(0, slash), device, loss});
    }
    std::sort(f.towers.begin(), f.towers.end(), [](const SharedBatchFinding::Tower& a,
                                                   const SharedBatchFinding::Tower& b) {
      return a.name != b.name ? a.name < b.name : a.device < b.device;
    });
    findings.push_back(std::move(f));
  }
  return findings;
}

std::vector<SharedBatchFinding> FindSharedBatches(const Graph& graph, const Placement& placement) {
  return FindSharedBatches(graph, [&placement](const Node& n) {
    Device* d = placement.device(n);
    return d ? d->short_name() : std::string();
  });
}

std::vector<SharedBatchFinding> FindSharedBatchesByRequest(const Graph& graph) {
  return FindSharedBatches(graph, [](const Node& n) {
    StatusOr<DeviceSpec> spec = DeviceSpec::Parse(n.requested_device());
    if (!spec.ok() || !spec->has_type() || !spec->has_id()) return std::string();
    return spec->ShortString();
  });
}

}  // namespace tw
