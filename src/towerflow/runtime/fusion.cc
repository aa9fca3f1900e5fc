#include "towerflow/runtime/fusion.h"

#include <set>

#include "towerflow/device/device.h"

namespace tw {
namespace {

// True when `consumer` is the only node among the needed ones that reads an
// output of `producer`, and reads it once. Other needed nodes may wait on the
// producer through control edges (they will wait on the fused item), unless
// one of them leads to the consumer: fused, that wait would be a cycle (an
// update behind a barrier that waits on the update's own gradient).
bool ReadByConsumerAlone(const Graph& graph, const std::vector<char>& needed, const Node* producer,
                         const Node* consumer) {
  int reads = 0;
  for (const Output& in : consumer->inputs()) reads += in.node == producer;
  if (reads != 1) return false;
  for (const Node* c : consumer->control_inputs()) {
    if (c == producer) return false;
  }
  std::set<const Node*> waiters;
  for (const Node* reader : graph.consumers(producer)) {
    if (reader == consumer || !needed[static_cast<size_t>(reader->id())]) continue;
    for (const Output& in : reader->inputs()) {
      if (in.node == producer) return false;  // a second reader of the data
    }
    waiters.insert(reader);
  }
  if (waiters.empty()) return true;
  // No waiter may be among the consumer's ancestors.
  std::vector<char> seen(static_cast<size_t>(graph.num_nodes()), 0);
  std::vector<const Node*> stack = {consumer};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    auto visit = [&](const Node* up) {
      if (up == producer || !needed[static_cast<size_t>(up->id())] || seen[static_cast<size_t>(up->id())]) return;
      seen[static_cast<size_t>(up->id())] = 1;
      stack.push_back(up);
    };
    for (const Output& in : n->inputs()) visit(in.node);
    for (const Node* c : n->control_inputs()) visit(c);
  }
  for (const Node* w : waiters) {
    if (seen[static_cast<size_t>(w->id())]) return false;
  }
  return true;
}

}  // namespace

std::map<int, PlannedFusion> ChooseFusions(const Graph& graph, const std::vector<char>& needed,
                                           const std::function<bool(const Output&)>& fed,
                                           const std::function<bool(const Node*)>& fetched,
                                           const std::function<Device*(const Node*)>& device_of,
                                           const KernelRegistry& registry) {
  std::map<int, PlannedFusion> out;
  std::set<const Node*> producers;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node* consumer = graph.node(id);
    if (producers.count(consumer)) continue;  // no chains: a fused producer is no consumer
    Device* device = device_of(consumer);
    if (device == nullptr) continue;
    for (int k = 0; k < consumer->num_inputs(); ++k) {
      const Output& in = consumer->input(k);
      const Node* producer = in.node;
      if (in.index != 0 || fed(in) || consumer->input_is_ref(k) || !needed[static_cast<size_t>(producer->id())] ||
          out.count(producer->id()) || producer->is_stateful() || !producer->control_inputs().empty() ||
          fetched(producer) || device_of(producer) != device) {
        continue;
      }
      const FusionDef* def = registry.FindFusion(*producer, *consumer, k, device->device_type());
      if (def == nullptr || (def->applies && !def->applies(*producer, *consumer)) ||
          !ReadByConsumerAlone(graph, needed, producer, consumer)) {
        continue;
      }
      out[id] = PlannedFusion{producer, k, def};
      producers.insert(producer);
      break;
    }
  }
  return out;
}

}  // namespace tw
