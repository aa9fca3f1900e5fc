#include "towerflow/runtime/step_graph_regions.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/runtime/step_graph.h"

namespace tw {
namespace {

using Item = ExecutorPlan::Item;

bool Live(const Item& item) { return !item.resolved && !item.absorbed; }

int NumEntries(const Item& item) {
  return item.is_transfer() ? static_cast<int>(item.inputs.size()) : item.NumOutputs();
}

// The item that writes each entry.
std::vector<int> EntryProducers(const ExecutorPlan& plan) {
  std::vector<int> producer(static_cast<size_t>(plan.num_entries), -1);
  for (size_t i = 0; i < plan.items.size(); ++i) {
    const Item& item = plan.items[i];
    if (!Live(item)) continue;
    for (int o = 0; o < NumEntries(item); ++o) producer[static_cast<size_t>(item.OutputEntry(o))] = static_cast<int>(i);
  }
  return producer;
}

// The live items in an order their edges allow (Kahn's), and each one's
// predecessors (one per edge).
void Order(const ExecutorPlan& plan, std::vector<int>* order, std::vector<std::vector<int>>* preds) {
  const auto& items = plan.items;
  preds->assign(items.size(), {});
  std::vector<int> pending(items.size(), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Live(items[i])) continue;
    for (int s : items[i].successors) {
      (*preds)[static_cast<size_t>(s)].push_back(static_cast<int>(i));
      ++pending[static_cast<size_t>(s)];
    }
  }
  // Shallowest first (the longest path from a root), then the graph's
  // order: as the executor, which starts every ready item at once, would
  // tend to run them. (Items no edge orders, such as a read of a variable
  // and its update, may run either way; this keeps the usual one.)
  std::vector<int> depth(items.size(), 0);
  using Key = std::pair<int, int>;  // depth, index
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  for (size_t i = 0; i < items.size(); ++i) {
    if (Live(items[i]) && pending[i] == 0) ready.push({0, static_cast<int>(i)});
  }
  order->clear();
  while (!ready.empty()) {
    const int i = ready.top().second;
    ready.pop();
    order->push_back(i);
    for (int s : items[static_cast<size_t>(i)].successors) {
      depth[static_cast<size_t>(s)] = std::max(depth[static_cast<size_t>(s)], depth[static_cast<size_t>(i)] + 1);
      if (--pending[static_cast<size_t>(s)] == 0) ready.push({depth[static_cast<size_t>(s)], s});
    }
  }
}

// Whether `item` may join a region on `device`, its producers aside.
bool Candidate(const Item& item, const Device* device) {
  if (!Live(item) || item.is_transfer() || item.region != nullptr || item.device != device) return false;
  if (item.kernel == nullptr || !item.kernel->Capturable() || item.kernel->MayBlock()) return false;
  for (const ExecutorPlan::Input& in : item.inputs) {
    if (in.feed >= 0 && in.is_ref) return false;
  }
  return true;
}

// Input i of `item` must come from the plan's constants or another member:
// a host-memory input, or a variable taken by reference.
bool NeedsConstantOrMember(const Item& item, int i) {
  const ExecutorPlan::Input& in = item.inputs[static_cast<size_t>(i)];
  if (in.constant >= 0) return false;
  if (in.is_ref) return true;
  return item.kernel_def != nullptr && item.kernel_def->HostMemoryInput(i);
}

// The region of `device`: members in `order`'s order.
std::vector<int> ChooseRegion(const ExecutorPlan& plan, const Device* device, const std::vector<int>& order,
                              const std::vector<std::vector<int>>& preds, const std::vector<int>& producer) {
  const auto& items = plan.items;
  std::vector<char> in(items.size(), 0);
  for (int i : order) in[static_cast<size_t>(i)] = Candidate(items[static_cast<size_t>(i)], device);
  for (bool changed = true; changed;) {
    changed = false;
    // Host-memory and reference inputs from outside the plan's constants
    // must be the region's own.
    for (int i : order) {
      if (!in[static_cast<size_t>(i)]) continue;
      const Item& item = items[static_cast<size_t>(i)];
      for (int k = 0; k < static_cast<int>(item.inputs.size()); ++k) {
        if (!NeedsConstantOrMember(item, k)) continue;
        const int e = item.inputs[static_cast<size_t>(k)].entry;
        const int p = e >= 0 ? producer[static_cast<size_t>(e)] : -1;
        if (p < 0 || !in[static_cast<size_t>(p)]) {
          in[static_cast<size_t>(i)] = 0;
          changed = true;
          break;
        }
      }
    }
    // Convex: an item reachable from the region through an outsider leaves it.
    std::vector<char> reached_outside(items.size(), 0);
    for (int i : order) {
      bool after_outsider = false, after_region = false;
      for (int p : preds[static_cast<size_t>(i)]) {
        after_outsider = after_outsider || reached_outside[static_cast<size_t>(p)];
        after_region = after_region || in[static_cast<size_t>(p)];
      }
      if (in[static_cast<size_t>(i)] && after_outsider) {
        in[static_cast<size_t>(i)] = 0;
        changed = true;
      }
      if (!in[static_cast<size_t>(i)]) reached_outside[static_cast<size_t>(i)] = after_outsider || after_region;
    }
  }
  std::vector<int> members;
  for (int i : order) {
    if (in[static_cast<size_t>(i)]) members.push_back(i);
  }
  return members;
}

// Replaces `members` (of `device`) with one step graph item.
void Rewire(ExecutorPlan* plan, Device* device, const std::vector<int>& members, const std::vector<int>& producer) {
  auto& items = plan->items;
  std::vector<char> is_member(items.size(), 0);
  for (int m : members) is_member[static_cast<size_t>(m)] = 1;
  // Entries read outside the region: by live items, or fetched.
  std::vector<char> read_outside(static_cast<size_t>(plan->num_entries), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Live(items[i]) || is_member[i]) continue;
    for (const ExecutorPlan::Input& in : items[i].inputs) {
      if (in.entry >= 0) read_outside[static_cast<size_t>(in.entry)] = 1;
    }
  }
  for (const ExecutorPlan::Input& f : plan->fetches) {
    if (f.entry >= 0) read_outside[static_cast<size_t>(f.entry)] = 1;
  }

  StepGraphSpec spec;
  spec.device = device;
  auto region = std::make_shared<Item::Region>();
  region->members = members;
  Item r;
  std::map<int, int> slot_of;  // entry -> slot
  std::map<std::tuple<int, int, int, bool>, int> input_of;
  for (int m : members) {
    const Item& item = items[static_cast<size_t>(m)];
    StepGraphSpec::Member member;
    member.node = item.node;
    member.kernel = item.kernel;
    member.kernel_def = item.kernel_def;
    member.num_outputs = item.fused != nullptr && item.fused->group ? item.NumOutputs() : -1;
    member.first_slot = spec.num_slots;
    member.outputs = item.NumOutputs();
    for (int k = 0; k < static_cast<int>(item.inputs.size()); ++k) {
      const ExecutorPlan::Input& in = item.inputs[static_cast<size_t>(k)];
      StepGraphSpec::Source src;
      src.is_ref = in.is_ref;
      const int from = in.entry >= 0 ? producer[static_cast<size_t>(in.entry)] : -1;
      if (from >= 0 && is_member[static_cast<size_t>(from)]) {
        src.slot = slot_of.at(in.entry);
      } else {
        auto key = std::make_tuple(in.entry, in.feed, in.constant, in.is_ref);
        auto [it, added] = input_of.emplace(key, static_cast<int>(r.inputs.size()));
        if (added) {
          r.inputs.push_back(in);
          region->sources.push_back(item.InputSource(k));
          spec.input_constant.push_back(in.constant >= 0);
          spec.input_host_memory.push_back(0);
        }
        const bool host = item.kernel_def != nullptr && item.kernel_def->HostMemoryInput(k);
        if (host) spec.input_host_memory[static_cast<size_t>(it->second)] = 1;
        src.input = it->second;
      }
      member.inputs.push_back(src);
    }
    for (int o = 0; o < member.outputs; ++o) {
      const int entry = item.entry_base + o;
      slot_of[entry] = spec.num_slots + o;
      if (!read_outside[static_cast<size_t>(entry)]) continue;
      region->outputs.push_back(entry);
      region->output_sources.push_back(item.OutputSource(o));
      spec.output_slots.push_back(spec.num_slots + o);
    }
    spec.num_slots += member.outputs;
    spec.members.push_back(std::move(member));
  }

  const int self = static_cast<int>(items.size());
  const Item& first = items[static_cast<size_t>(members[0])];
  r.node = first.node;
  r.device = device;
  r.launcher = first.launcher;
  r.region = region;
  for (int m : members) {
    for (int s : items[static_cast<size_t>(m)].successors) {
      if (!is_member[static_cast<size_t>(s)]) r.successors.push_back(s);
    }
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Live(items[i]) || is_member[i]) continue;
    for (int& s : items[i].successors) {
      if (!is_member[static_cast<size_t>(s)]) continue;
      s = self;
      ++r.initial_pending;
    }
  }
  OpKernelConstruction construction(*first.node, device);
  auto kernel = std::make_shared<StepGraphKernel>(&construction, std::move(spec));
  r.kernel = kernel.get();
  plan->step_graphs.push_back(std::move(kernel));
  for (int m : members) {
    Item& item = items[static_cast<size_t>(m)];
    item.absorbed = true;
    item.successors.clear();
    item.inputs.clear();
    item.initial_pending = 0;
  }
  plan->num_absorbed += static_cast<int>(members.size());
  items.push_back(std::move(r));
}

}  // namespace

void AddStepGraphs(ExecutorPlan* plan, const StepGraphOptions& options) {
  if (options.devices == StepGraphOptions::Devices::kNone) return;
  std::vector<Device*> devices;
  for (const Item& item : plan->items) {
    Device* d = item.device;
    if (!Live(item) || d == nullptr || d->device_type() != kDeviceGpu) continue;
    if (options.devices == StepGraphOptions::Devices::kCapturingDevices && !d->CanCaptureWork()) continue;
    if (options.devices == StepGraphOptions::Devices::kFakeGpusOnly && d->CanCaptureWork()) continue;
    if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  for (Device* d : devices) {
    std::vector<int> order;
    std::vector<std::vector<int>> preds;
    Order(*plan, &order, &preds);
    const std::vector<int> producer = EntryProducers(*plan);
    const std::vector<int> members = ChooseRegion(*plan, d, order, preds, producer);
    if (static_cast<int>(members.size()) < StepGraphOptions::kMinMembers) continue;
    Rewire(plan, d, members, producer);
  }
}

}  // namespace tw
