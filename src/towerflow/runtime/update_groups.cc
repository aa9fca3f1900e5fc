#include "towerflow/runtime/update_groups.h"

#include <algorithm>

#include "towerflow/device/device.h"

namespace tw {

std::vector<PlannedGroup> ChooseGroups(const Graph& graph, const std::vector<char>& needed,
                                       const std::function<bool(const Node*)>& excluded,
                                       const std::function<Device*(const Node*)>& device_of,
                                       const KernelRegistry& registry) {
  // Candidates, in graph order.
  std::vector<const Node*> candidates;
  std::vector<const GroupDef*> defs;
  std::vector<int> index(static_cast<size_t>(graph.num_nodes()), -1);
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node* n = graph.node(id);
    if (excluded(n)) continue;
    Device* d = device_of(n);
    if (d == nullptr) continue;
    const GroupDef* def = registry.FindGroup(*n, d->device_type());
    if (def == nullptr) continue;
    index[static_cast<size_t>(id)] = static_cast<int>(candidates.size());
    candidates.push_back(n);
    defs.push_back(def);
  }
  if (candidates.size() < 2) return {};
  // The step's edges forward (data and control), among needed nodes.
  std::vector<std::vector<int>> consumers(static_cast<size_t>(graph.num_nodes()));
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node* n = graph.node(id);
    for (const Output& in : n->inputs()) consumers[static_cast<size_t>(in.node->id())].push_back(id);
    for (const Node* c : n->control_inputs()) consumers[static_cast<size_t>(c->id())].push_back(id);
  }
  // reaches[a]: the candidates a path from candidate a leads to.
  const size_t m = candidates.size();
  std::vector<std::vector<char>> reaches(m, std::vector<char>(m, 0));
  std::vector<char> seen(static_cast<size_t>(graph.num_nodes()));
  std::vector<int> stack;
  for (size_t a = 0; a < m; ++a) {
    std::fill(seen.begin(), seen.end(), 0);
    stack.assign(1, candidates[a]->id());
    while (!stack.empty()) {
      const int id = stack.back();
      stack.pop_back();
      for (int next : consumers[static_cast<size_t>(id)]) {
        if (seen[static_cast<size_t>(next)]) continue;
        seen[static_cast<size_t>(next)] = 1;
        if (index[static_cast<size_t>(next)] >= 0) reaches[a][static_cast<size_t>(index[static_cast<size_t>(next)])] = 1;
        stack.push_back(next);
      }
    }
  }
  std::vector<PlannedGroup> groups;
  std::vector<std::vector<size_t>> member_index;  // per group, candidate indices
  for (size_t c = 0; c < m; ++c) {
    const Node* n = candidates[c];
    Device* d = device_of(n);
    bool joined = false;
    for (size_t g = 0; g < groups.size() && !joined; ++g) {
      PlannedGroup& group = groups[g];
      if (group.def != defs[c] || group.device != d) continue;
      if (n->attrs().Get<DataType>("T").value() != group.members[0]->attrs().Get<DataType>("T").value()) continue;
      if (group.def->compatible && !group.def->compatible(*group.members[0], *n)) continue;
      const bool ordered = std::any_of(member_index[g].begin(), member_index[g].end(),
                                       [&](size_t k) { return reaches[k][c] || reaches[c][k]; });
      if (ordered) continue;
      group.members.push_back(n);
      member_index[g].push_back(c);
      joined = true;
    }
    if (!joined) {
      groups.push_back(PlannedGroup{defs[c], d, {n}});
      member_index.push_back({c});
    }
  }
  groups.erase(std::remove_if(groups.begin(), groups.end(), [](const PlannedGroup& g) { return g.members.size() < 2; }),
               groups.end());
  return groups;
}

}  // namespace tw
