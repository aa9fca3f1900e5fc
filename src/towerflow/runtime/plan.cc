#include "towerflow/runtime/plan.h"

#include "towerflow/core/status.h"
#include "towerflow/device/kernel_registry.h"

namespace tw {

int ExecutorPlan::Item::NumInputs() const {
  if (region != nullptr) return static_cast<int>(region->sources.size());
  return fused == nullptr ? node->num_inputs() : static_cast<int>(fused->inputs.size());
}

int ExecutorPlan::Item::NumOutputs() const {
  if (region != nullptr) return static_cast<int>(region->outputs.size());
  if (fused == nullptr || !fused->group) return node->num_outputs();
  int n = 0;
  for (const Node* m : fused->nodes) n += m->num_outputs();
  return n;
}

std::pair<const Node*, int> ExecutorPlan::Item::OutputSource(int o) const {
  if (region != nullptr) return region->output_sources[static_cast<size_t>(o)];
  if (fused == nullptr || !fused->group) return {node, o};
  for (const Node* m : fused->nodes) {
    if (o < m->num_outputs()) return {m, o};
    o -= m->num_outputs();
  }
  return {node, o};
}

const Output& ExecutorPlan::Item::InputSource(int i) const {
  if (region != nullptr) return region->sources[static_cast<size_t>(i)];
  if (fused == nullptr) return node->input(i);
  const auto& [n, k] = fused->inputs[static_cast<size_t>(i)];
  return n->input(k);
}

bool ExecutorPlan::Item::InputIsRef(int i) const {
  if (region != nullptr) return inputs[static_cast<size_t>(i)].is_ref;
  if (fused == nullptr) return node->input_is_ref(i);
  const auto& [n, k] = fused->inputs[static_cast<size_t>(i)];
  return n->input_is_ref(k);
}

void CountEntryUses(ExecutorPlan* plan) {
  plan->entry_uses.assign(static_cast<size_t>(plan->num_entries), 0);
  for (const ExecutorPlan::Item& item : plan->items) {
    for (const ExecutorPlan::Input& in : item.inputs) {
      if (in.entry >= 0) ++plan->entry_uses[static_cast<size_t>(in.entry)];
    }
  }
  // A fetched value is read after the step: it is never released (its count
  // stays above the number of readers that count down).
  for (const ExecutorPlan::Input& f : plan->fetches) {
    if (f.entry >= 0) plan->entry_uses[static_cast<size_t>(f.entry)] += 1;
  }
}

void AddOutputSinks(ExecutorPlan* plan) {
  // The node item and output that writes each entry.
  std::vector<std::pair<int, int>> writer(static_cast<size_t>(plan->num_entries), {-1, -1});
  for (size_t p = 0; p < plan->items.size(); ++p) {
    ExecutorPlan::Item& item = plan->items[p];
    item.output_sinks.clear();
    if (item.kernel == nullptr || item.is_transfer() || item.resolved || item.absorbed || item.region != nullptr) {
      continue;
    }
    for (int o = 0; o < item.NumOutputs(); ++o) {
      const int entry = item.OutputEntry(o);
      if (entry >= 0 && entry < plan->num_entries) writer[static_cast<size_t>(entry)] = {static_cast<int>(p), o};
    }
  }
  for (size_t c = 0; c < plan->items.size(); ++c) {
    const ExecutorPlan::Item& consumer = plan->items[c];
    if (consumer.kernel == nullptr || consumer.absorbed || consumer.region != nullptr ||
        !consumer.kernel->LendsInputBuffers()) {
      continue;
    }
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      const ExecutorPlan::Input& in = consumer.inputs[i];
      if (in.entry < 0 || in.is_ref) continue;
      const auto [p, o] = writer[static_cast<size_t>(in.entry)];
      if (p < 0) continue;
      ExecutorPlan::Item& producer = plan->items[static_cast<size_t>(p)];
      if (producer.device != consumer.device ||
          OutputInHostMemory(producer, o) != InputInHostMemory(consumer, static_cast<int>(i))) {
        continue;
      }
      producer.output_sinks.push_back({o, static_cast<int>(c), static_cast<int>(i)});
    }
  }
}

bool OutputInHostMemory(const ExecutorPlan::Item& item, int o) {
  return item.device->host_memory() || (item.kernel_def != nullptr && item.kernel_def->HostMemoryOutput(o));
}

bool InputInHostMemory(const ExecutorPlan::Item& item, int i) {
  return item.device->host_memory() || (item.kernel_def != nullptr && item.kernel_def->HostMemoryInput(i));
}

PlanCounts CountItems(const ExecutorPlan& plan) {
  PlanCounts c;
  for (const ExecutorPlan::Item& item : plan.items) {
    if (item.resolved) {
      ++c.resolved;
      continue;
    }
    if (item.absorbed) {
      ++c.captured;
      continue;
    }
    c.step_graphs += item.region != nullptr ? 1 : 0;
    ++c.items;
    if (item.is_transfer()) {
      ++c.transfers;
      c.device_waits += item.waits_for_device() ? 1 : 0;
    } else {
      ++c.kernels;
      c.fused += item.fused != nullptr ? 1 : 0;
    }
  }
  c.roots = static_cast<int>(plan.roots.size());
  return c;
}

std::string PlanCounts::ToString() const {
  const std::string graphs = step_graphs > 0 ? StrCat(", ", step_graphs, " step graph(s) of ", captured) : "";
  return StrCat(items, " items: ", kernels, " kernels (", fused, " fused", graphs, "), ", transfers, " transfers (", device_waits,
                " wait for a device), ", roots, " roots; ", resolved, " resolved");
}

}  // namespace tw
