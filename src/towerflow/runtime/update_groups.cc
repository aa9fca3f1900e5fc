#include "towerflow/runtime/update_groups.h"

#include <algorithm>

#include "towerflow/device/device.h"

namespace tw {

namespace {

// A node with no inputs of either kind: the step bump's variable and constant.
bool IsSource(const Node* n, const char* op) {
  return n->op() == op && n->num_inputs() == 0 && n->control_inputs().empty();
}

// Whether `n` is a global step's AssignAdd that may end `group` (the header's
// rule). Nothing of the group can wait for it: it waits for a member, and a
// member reached from it would be ordered after that member, which the
// group's members never are.
bool IsStepBump(const Node* n, const PlannedGroup& group) {
  if (n->op() != "AssignAdd" || n->num_inputs() != 2 || n->control_inputs().empty()) return false;
  auto t = n->attrs().Get<DataType>("T");
  if (!t.ok() || (*t != kInt32 && *t != kInt64)) return false;
  const Output& var = n->input(0);
  const Output& by = n->input(1);
  if (!IsSource(var.node, "VariableV2") || !IsSource(by.node, "Const")) return false;
  if (!var.shape().IsFullyDefined() || var.shape().num_elements() != 1) return false;
  if (!by.shape().IsFullyDefined() || by.shape() != var.shape()) return false;
  for (const Node* c : n->control_inputs()) {
    if (std::find(group.members.begin(), group.members.end(), c) == group.members.end()) return false;
  }
  return true;
}

// Whether `a` and `b` update one state: a ref input of each comes from the
// same output (a variable, or an accumulator). A group's members run at once,
// each on its own elements, without atomics: two updates of one variable in
// one group would lose one of them, where apart (in either order) both land.
bool SharesState(const Node* a, const Node* b) {
  for (int i = 0; i < a->num_inputs(); ++i) {
    if (!a->input_is_ref(i)) continue;
    for (int j = 0; j < b->num_inputs(); ++j) {
      if (b->input_is_ref(j) && a->input(i) == b->input(j)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<PlannedGroup> ChooseGroups(const Graph& graph, const std::vector<char>& needed,
                                       const std::vector<char>& step_nodes,
                                       const std::function<bool(const Node*)>& excluded,
                                       const std::function<bool(const Node*)>& bump_excluded,
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
  // The step's edges forward (data and control), fused producers included.
  std::vector<std::vector<int>> consumers(static_cast<size_t>(graph.num_nodes()));
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!step_nodes[static_cast<size_t>(id)]) continue;
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
      if (std::any_of(group.members.begin(), group.members.end(), [&](const Node* k) { return SharesState(k, n); })) {
        continue;
      }
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
  // Each group's step bump, where its def takes one.
  for (PlannedGroup& group : groups) {
    if (!group.def->step_bump) continue;
    for (int id = 0; id < graph.num_nodes(); ++id) {
      const Node* n = graph.node(id);
      if (!needed[static_cast<size_t>(id)] || bump_excluded(n) || device_of(n) != group.device) continue;
      if (!IsStepBump(n, group)) continue;
      group.members.push_back(n);
      group.step_bump = true;
      break;
    }
  }
  return groups;
}

}  // namespace tw
