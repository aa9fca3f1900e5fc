#include "towerflow/runtime/plan_builder.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/runtime/partition.h"
#include "towerflow/runtime/plan_resolve.h"
#include "towerflow/runtime/step_arena.h"

namespace tw {
namespace {

// Whether control input `c` is satisfied by a feed: a Placeholder whose
// output is fed does not run, and what waited on it waits on the feed (TF's
// rule, subgraph.cc's FeedInputs), so that
// control_dependencies([placeholder]) works with the placeholder fed.
bool FedPlaceholder(const Node* c, const std::map<Output, int>& feed_index) {
  return c->op() == "Placeholder" && feed_index.count(Output(const_cast<Node*>(c), 0)) > 0;
}

// Pass 1: the nodes the fetches and targets need (needed[id]); a fed output
// cuts its edge.
StatusOr<std::vector<char>> Prune(const Graph& graph, const std::map<Output, int>& feed_index,
                                  const std::vector<Output>& fetches, const std::vector<Node*>& targets) {
  std::vector<char> needed(static_cast<size_t>(graph.num_nodes()), 0);
  std::vector<const Node*> stack;
  auto visit = [&](const Node* n) {
    if (!needed[static_cast<size_t>(n->id())]) {
      needed[static_cast<size_t>(n->id())] = 1;
      stack.push_back(n);
    }
  };
  for (const Output& f : fetches) {
    if (!f.valid()) return errors::InvalidArgument("a fetch is a null Output (did graph building fail?)");
    if (f.index >= f.node->num_outputs()) {
      return errors::InvalidArgument("fetch ", f.node->name(), ":", f.index, " does not exist");
    }
    if (!feed_index.count(f)) visit(f.node);
  }
  for (const Node* t : targets) {
    if (t == nullptr) return errors::InvalidArgument("a target is null (did graph building fail?)");
    visit(t);
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Output& in : n->inputs()) {
      if (!feed_index.count(in)) visit(in.node);
    }
    for (const Node* c : n->control_inputs()) {
      if (!FedPlaceholder(c, feed_index)) visit(c);
    }
  }
  return needed;
}

// A step that runs some participants of a CollectiveAllReduce group but not
// all of them would wait forever for the others: InvalidArgument instead,
// naming the group and the participants the step runs.
Status CheckCollectiveGroups(const ExecutorPlan& plan) {
  std::map<std::string, std::vector<const Node*>> groups;
  for (const ExecutorPlan::Item& item : plan.items) {
    if (item.node->op() != "CollectiveAllReduce") continue;
    auto name = item.node->attrs().Get<std::string>("shared_name");
    if (name.ok()) groups[*name].push_back(item.node);
  }
  for (const auto& [name, nodes] : groups) {
    auto wanted = nodes[0]->attrs().Get<int64_t>("num_devices");
    if (!wanted.ok() || *wanted == static_cast<int64_t>(nodes.size())) continue;
    std::string present;
    for (const Node* n : nodes) present += (present.empty() ? "" : ", ") + n->name();
    return errors::InvalidArgument("CollectiveAllReduce group '", name, "' has ", *wanted,
                                   " participants but this step runs ", nodes.size(), " of them (", present,
                                   "); fetch or target what depends on all of them, or none");
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::shared_ptr<const ExecutorPlan>> PlanBuilder::Build(const std::vector<Output>& feeds,
                                                                 const std::vector<Output>& fetches,
                                                                 const std::vector<Node*>& targets) const {
  std::map<Output, int> feed_index;
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (!feed_index.emplace(feeds[i], static_cast<int>(i)).second) {
      return errors::InvalidArgument(feeds[i].name(), " is fed more than once");
    }
  }
  TW_ASSIGN_OR_RETURN(std::vector<char> needed, Prune(graph_, feed_index, fetches, targets));

  // Pass 2: fusions.
  std::map<int, PlannedFusion> fusions;
  std::vector<PlannedGroup> groups;
  if (options_.fuse_kernels) {
    std::set<const Node*> fetched(targets.begin(), targets.end());
    std::set<const Node*> outputs_fetched;
    for (const Output& f : fetches) {
      fetched.insert(f.node);
      outputs_fetched.insert(f.node);
    }
    fusions = ChooseFusions(
        graph_, needed, [&](const Output& o) { return feed_index.count(o) > 0; },
        [&](const Node* n) { return fetched.count(n) > 0; },
        [&](const Node* n) -> Device* {
          const NodePlacement& placed = placement_.at(n->id());
          return placed.status.ok() ? placed.device : nullptr;
        },
        KernelRegistry::Global());
    // Absorbed nodes run inside their consumer's item; the groups' ordering
    // still follows the edges through them.
    const std::vector<char> step_nodes = needed;
    for (const auto& [consumer, fusion] : fusions) {
      for (const FusedEdge& e : fusion.edges) needed[static_cast<size_t>(e.producer->id())] = 0;
    }
    groups = ChooseGroups(
        graph_, needed, step_nodes,
        [&](const Node* n) { return fetched.count(n) > 0 || fusions.count(n->id()) > 0; },
        [&](const Node* n) { return outputs_fetched.count(n) > 0 || fusions.count(n->id()) > 0; },
        [&](const Node* n) -> Device* {
          const NodePlacement& placed = placement_.at(n->id());
          return placed.status.ok() ? placed.device : nullptr;
        },
        KernelRegistry::Global());
  }
  // Per node id: its group (-1: none), and where its outputs start among the
  // group item's outputs.
  std::vector<int> group_of(static_cast<size_t>(graph_.num_nodes()), -1);
  std::vector<int> output_offset(static_cast<size_t>(graph_.num_nodes()), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    int offset = 0;
    for (const Node* m : groups[g].members) {
      group_of[static_cast<size_t>(m->id())] = static_cast<int>(g);
      output_offset[static_cast<size_t>(m->id())] = offset;
      offset += m->num_outputs();
    }
  }

  // Pass 3: one item per node, in the graph's order (topological: inputs
  // exist before their consumers).
  auto plan = std::make_shared<ExecutorPlan>();
  std::vector<int> item_of(static_cast<size_t>(graph_.num_nodes()), -1);
  for (int id = 0; id < graph_.num_nodes(); ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node* n = graph_.node(id);
    const NodePlacement& placed = placement_.at(id);
    if (!placed.status.ok()) return placed.status;
    const int group = group_of[static_cast<size_t>(id)];
    if (group >= 0 && groups[static_cast<size_t>(group)].members[0] != n) {
      // A later member: its outputs are its group's item's.
      item_of[static_cast<size_t>(id)] = item_of[static_cast<size_t>(groups[static_cast<size_t>(group)].members[0]->id())];
      continue;
    }
    ExecutorPlan::Item item;
    item.node = n;
    item.device = placed.device;
    if (group >= 0) {
      const PlannedGroup& planned = groups[static_cast<size_t>(group)];
      auto parts = std::make_shared<ExecutorPlan::Item::Fused>();
      parts->nodes = planned.members;
      parts->group = true;
      for (const Node* m : planned.members) {
        for (int i = 0; i < m->num_inputs(); ++i) parts->inputs.emplace_back(m, i);
      }
      item.fused = std::move(parts);
      TW_ASSIGN_OR_RETURN(item.kernel, kernels_->GroupKernel(planned));
    } else if (auto fused = fusions.find(id); fused != fusions.end()) {
      auto parts = std::make_shared<ExecutorPlan::Item::Fused>();
      parts->nodes = fused->second.Absorbed();
      parts->inputs = fused->second.Inputs(n);
      item.fused = std::move(parts);
      TW_ASSIGN_OR_RETURN(item.kernel, kernels_->FusedKernel(n, fused->second, placed.device));
    } else {
      TW_ASSIGN_OR_RETURN(item.kernel, kernels_->Kernel(n, placed.device));
      item.kernel_def = KernelRegistry::Global().Find(*n, placed.device->device_type());
    }
    item.entry_base = plan->num_entries;
    plan->num_entries += item.NumOutputs();
    item_of[static_cast<size_t>(id)] = static_cast<int>(plan->items.size());
    plan->items.push_back(std::move(item));
  }
  // Control edges from an absorbed node wait on its consumer's item.
  for (const auto& [consumer, fusion] : fusions) {
    for (const FusedEdge& e : fusion.edges) {
      item_of[static_cast<size_t>(e.producer->id())] = item_of[static_cast<size_t>(consumer)];
    }
  }
  TW_RETURN_IF_ERROR(CheckCollectiveGroups(*plan));

  // Pass 4: edges. Those between devices or memories get transfer items,
  // appended after the node items.
  PlanPartitioner partitioner(plan.get(), host_device_);
  const int num_node_items = static_cast<int>(plan->items.size());
  for (int self = 0; self < num_node_items; ++self) {
    // Connect appends transfer items: read the item's node and fusion by value.
    ExecutorPlan::Item node_item;
    node_item.node = plan->items[static_cast<size_t>(self)].node;
    node_item.fused = plan->items[static_cast<size_t>(self)].fused;
    std::vector<int> control_items;
    const std::vector<const Node*> members =
        node_item.fused != nullptr && node_item.fused->group ? node_item.fused->nodes
                                                             : std::vector<const Node*>{node_item.node};
    for (const Node* m : members) {
      for (const Node* c : m->control_inputs()) {
        if (FedPlaceholder(c, feed_index)) continue;
        const int c_item = item_of[static_cast<size_t>(c->id())];
        if (c_item == self) continue;  // a group's step bump waits for its own members
        if (std::find(control_items.begin(), control_items.end(), c_item) == control_items.end()) {
          control_items.push_back(c_item);
        }
      }
    }
    std::vector<ExecutorPlan::Input> inputs(static_cast<size_t>(node_item.NumInputs()));
    for (int i = 0; i < node_item.NumInputs(); ++i) {
      const Output& in = node_item.InputSource(i);
      ExecutorPlan::Input& src = inputs[static_cast<size_t>(i)];
      src.is_ref = node_item.InputIsRef(i);
      auto f = feed_index.find(in);
      if (f != feed_index.end()) {
        // Feeds are host tensors: one going into device memory is copied there.
        if (src.is_ref) {
          src.feed = f->second;  // the consumer reads the fed value
        } else {
          partitioner.ConnectFeed(f->second, in.node, in.index, self, i, &src);
        }
      } else {
        TW_RETURN_IF_ERROR(partitioner.Connect(item_of[static_cast<size_t>(in.node->id())],
                                               in.index + output_offset[static_cast<size_t>(in.node->id())], self, i,
                                               src.is_ref, control_items, &src));
      }
    }
    plan->items[static_cast<size_t>(self)].inputs = std::move(inputs);
    for (int c : control_items) {
      plan->items[static_cast<size_t>(c)].successors.push_back(self);
      ++plan->items[static_cast<size_t>(self)].initial_pending;
    }
  }
  // Fetches are host tensors: values in device memory are copied to the host,
  // those of one device by one transfer that waits for it once.
  std::vector<std::pair<int, int>> fetched_outputs;
  for (const Output& f : fetches) {
    if (feed_index.count(f)) continue;
    fetched_outputs.emplace_back(item_of[static_cast<size_t>(f.node->id())],
                                 f.index + output_offset[static_cast<size_t>(f.node->id())]);
  }
  const std::vector<int> fetch_entries = partitioner.HostEntries(fetched_outputs);
  size_t next_fetch = 0;
  for (const Output& f : fetches) {
    ExecutorPlan::Input src;
    auto it = feed_index.find(f);
    if (it != feed_index.end()) {
      src.feed = it->second;
    } else {
      src.entry = fetch_entries[next_fetch++];
    }
    plan->fetches.push_back(src);
  }
  plan->num_transfers = partitioner.num_transfers();
  if (options_.resources != nullptr) ResolveFixedItems(plan.get(), options_.resources);
  if (options_.gpu_launchers) {
    // Kernels and copies into a GPU's memory run on its launcher; kernels that
    // may wait (a collective waiting for its peers) do not hold it.
    for (ExecutorPlan::Item& item : plan->items) {
      if (item.device->device_type() != kDeviceGpu) continue;
      if (item.kernel != nullptr && item.kernel->MayBlock()) continue;
      item.launcher = item.device->index();
    }
  }
  AddStepGraphs(plan.get(), options_.step_graphs);
  for (size_t i = 0; i < plan->items.size(); ++i) {
    const ExecutorPlan::Item& item = plan->items[i];
    if (item.initial_pending == 0 && !item.resolved && !item.absorbed) plan->roots.push_back(static_cast<int>(i));
  }
  plan->costs = std::make_shared<ExecutorPlan::Costs>(plan->items.size());
  CountEntryUses(plan.get());
  AddOutputSinks(plan.get());
  if (options_.arena != PlanOptions::Arena::kOff) {
    plan->arena = std::make_shared<ArenaPool>(plan.get(), options_.arena == PlanOptions::Arena::kDeviceMemory);
    if (!plan->arena->serves_any()) plan->arena.reset();
  }
  return std::shared_ptr<const ExecutorPlan>(std::move(plan));
}

}  // namespace tw
