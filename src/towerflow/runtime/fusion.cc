#include "towerflow/runtime/fusion.h"

#include <set>

#include "towerflow/device/device.h"

namespace tw {
namespace {

// The edges' rules on reads and waits (fusion.h): each absorbed producer's
// output is read by its consumer alone among the needed nodes, and once; no
// node of the fusion waits on an absorbed one through a control edge; other
// needed nodes may wait on absorbed ones (they will wait on the fused item)
// unless one of them leads to a node of the fusion: fused, that wait would be
// a cycle (an update behind a barrier that waits on the update's own gradient).
bool ReadsAndWaitsAllowFusion(const Graph& graph, const std::vector<char>& needed, const Node* root,
                              const std::vector<FusedEdge>& edges, const std::vector<int>& fusion_of,
                              const std::vector<std::vector<const Node*>>& chosen) {
  std::set<const Node*> members = {root};
  std::set<const Node*> absorbed;
  for (const FusedEdge& e : edges) {
    members.insert(e.producer);
    absorbed.insert(e.producer);
  }
  std::set<const Node*> waiters;
  for (const FusedEdge& e : edges) {
    int reads = 0;
    for (const Output& in : e.consumer->inputs()) reads += in.node == e.producer;
    if (reads != 1) return false;
    for (const Node* reader : graph.consumers(e.producer)) {
      if (reader == e.consumer || !needed[static_cast<size_t>(reader->id())]) continue;
      for (const Output& in : reader->inputs()) {
        if (in.node == e.producer) return false;  // a second reader of the data
      }
      if (members.count(reader)) return false;  // a member waits on an absorbed node
      waiters.insert(reader);
    }
  }
  for (const Node* m : members) {
    for (const Node* c : m->control_inputs()) {
      if (absorbed.count(c)) return false;
    }
  }
  if (waiters.empty()) return true;
  // No waiter may be among the fusion's ancestors, in the graph where the
  // fusions already chosen are one node each (their members' ancestors are
  // all theirs): two fusions whose waiters cross would wait on each other.
  std::vector<char> seen(static_cast<size_t>(graph.num_nodes()), 0);
  std::vector<const Node*> stack(members.begin(), members.end());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    auto visit = [&](const Node* up) {
      if (members.count(up) || !needed[static_cast<size_t>(up->id())] || seen[static_cast<size_t>(up->id())]) return;
      seen[static_cast<size_t>(up->id())] = 1;
      stack.push_back(up);
      if (const int f = fusion_of[static_cast<size_t>(up->id())]; f >= 0) {
        for (const Node* m : chosen[static_cast<size_t>(f)]) {
          if (!members.count(m) && !seen[static_cast<size_t>(m->id())]) {
            seen[static_cast<size_t>(m->id())] = 1;
            stack.push_back(m);
          }
        }
      }
    };
    for (const Output& in : n->inputs()) visit(in.node);
    for (const Node* c : n->control_inputs()) visit(c);
  }
  for (const Node* w : waiters) {
    if (seen[static_cast<size_t>(w->id())]) return false;
  }
  return true;
}

bool IsHostCpu(const Device* d) { return d != nullptr && d->device_type() == kDeviceCpu && d->host_memory(); }

}  // namespace

std::vector<const Node*> PlannedFusion::Absorbed() const {
  // Post-order from the producer: each node after the ones feeding it, in input order.
  std::vector<const Node*> out;
  out.reserve(edges.size());
  auto visit = [&](const Node* node, auto&& self) -> void {
    for (int k = 0; k < node->num_inputs(); ++k) {
      for (const FusedEdge& e : edges) {
        if (e.consumer == node && e.consumer_input == k) self(e.producer, self);
      }
    }
    out.push_back(node);
  };
  visit(producer, visit);
  return out;
}

std::vector<std::pair<const Node*, int>> PlannedFusion::Inputs(const Node* consumer) const {
  std::vector<std::pair<const Node*, int>> out;
  auto expand = [&](const Node* node, auto&& self) -> void {
    std::vector<char> absorbed(static_cast<size_t>(node->num_inputs()), 0);
    for (const FusedEdge& e : edges) {
      if (e.consumer == node) absorbed[static_cast<size_t>(e.consumer_input)] = 1;
    }
    for (int k = 0; k < node->num_inputs(); ++k) {
      if (absorbed[static_cast<size_t>(k)]) self(node->input(k).node, self);
    }
    for (int k = 0; k < node->num_inputs(); ++k) {
      if (!absorbed[static_cast<size_t>(k)]) out.emplace_back(node, k);
    }
  };
  expand(consumer, expand);
  return out;
}

std::map<int, PlannedFusion> ChooseFusions(const Graph& graph, const std::vector<char>& needed,
                                           const std::function<bool(const Output&)>& fed,
                                           const std::function<bool(const Node*)>& fetched,
                                           const std::function<Device*(const Node*)>& device_of,
                                           const KernelRegistry& registry) {
  std::map<int, PlannedFusion> out;
  std::set<const Node*> absorbed;  // no chains: an absorbed node is no consumer, and in one fusion only
  // The fusions chosen so far, each its consumer and absorbed nodes, and the
  // index of the fusion each node is in (-1: none).
  std::vector<std::vector<const Node*>> chosen;
  std::vector<int> fusion_of(static_cast<size_t>(graph.num_nodes()), -1);
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node* consumer = graph.node(id);
    if (absorbed.count(consumer)) continue;
    Device* device = device_of(consumer);
    if (device == nullptr) continue;
    // The rules every edge of a fusion meets, besides reads and waits.
    auto edge_ok = [&](const FusedEdge& e, const FusionDef& def) {
      const Output& in = e.consumer->input(e.consumer_input);
      const Node* p = e.producer;
      if (in.node != p || in.index != 0 || fed(in) || e.consumer->input_is_ref(e.consumer_input) ||
          !needed[static_cast<size_t>(p->id())] || out.count(p->id()) || absorbed.count(p) || p->is_stateful() ||
          !p->control_inputs().empty() || fetched(p)) {
        return false;
      }
      Device* pd = device_of(p);
      return pd == device || (def.across_host_devices && IsHostCpu(pd) && IsHostCpu(device));
    };
    bool found = false;
    for (int k = 0; k < consumer->num_inputs() && !found; ++k) {
      const Node* producer = consumer->input(k).node;
      for (const FusionDef* def : registry.FindFusions(*producer, *consumer, k, device->device_type())) {
        if (def->applies && !def->applies(*producer, *consumer)) continue;
        std::vector<FusedEdge> edges = {FusedEdge{producer, consumer, k}};
        if (def->deeper && !def->deeper(*producer, &edges)) continue;
        bool ok = true;
        std::set<const Node*> distinct;
        for (const FusedEdge& e : edges) ok = ok && edge_ok(e, *def) && distinct.insert(e.producer).second;
        if (!ok || !ReadsAndWaitsAllowFusion(graph, needed, consumer, edges, fusion_of, chosen)) continue;
        chosen.push_back({consumer});
        fusion_of[static_cast<size_t>(consumer->id())] = static_cast<int>(chosen.size() - 1);
        for (const FusedEdge& e : edges) {
          absorbed.insert(e.producer);
          chosen.back().push_back(e.producer);
          fusion_of[static_cast<size_t>(e.producer->id())] = static_cast<int>(chosen.size() - 1);
        }
        out[id] = PlannedFusion{producer, k, def, std::move(edges)};
        found = true;
        break;
      }
    }
  }
  return out;
}

}  // namespace tw
