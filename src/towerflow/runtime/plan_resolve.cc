// ResolveFixedItems and ForwardVariableReads (plan_resolve.h).
#include "towerflow/runtime/plan_resolve.h"

#include <algorithm>
#include <vector>

#include "towerflow/device/kernel_registry.h"

namespace tw {
namespace {

using Item = ExecutorPlan::Item;

// Per entry: how many item inputs read it, and whether a fetch does.
struct EntryReads {
  std::vector<int> reads;
  std::vector<char> fetched;
  explicit EntryReads(const ExecutorPlan& plan)
      : reads(static_cast<size_t>(plan.num_entries), 0), fetched(static_cast<size_t>(plan.num_entries), 0) {
    for (const Item& item : plan.items) {
      for (const ExecutorPlan::Input& in : item.inputs) {
        if (in.entry >= 0) ++reads[static_cast<size_t>(in.entry)];
      }
    }
    for (const ExecutorPlan::Input& f : plan.fetches) {
      if (f.entry >= 0) fetched[static_cast<size_t>(f.entry)] = 1;
    }
  }
};

// Per item, the items with an edge to it (one entry per edge).
std::vector<std::vector<int>> Predecessors(const ExecutorPlan& plan) {
  std::vector<std::vector<int>> preds(plan.items.size());
  for (size_t i = 0; i < plan.items.size(); ++i) {
    for (int s : plan.items[i].successors) preds[static_cast<size_t>(s)].push_back(static_cast<int>(i));
  }
  return preds;
}

// Item `i` no longer runs: its successors stop waiting for it, and each of
// them waits instead for every predecessor of `i` it did not already wait
// for; its predecessors forget it.
void Bypass(ExecutorPlan* plan, std::vector<std::vector<int>>& preds, int i) {
  auto& items = plan->items;
  Item& item = items[static_cast<size_t>(i)];
  const std::vector<int> before = preds[static_cast<size_t>(i)];
  for (int p : before) {
    auto& succ = items[static_cast<size_t>(p)].successors;
    succ.erase(std::remove(succ.begin(), succ.end(), i), succ.end());
  }
  for (int s : item.successors) {
    --items[static_cast<size_t>(s)].initial_pending;
    auto& of_s = preds[static_cast<size_t>(s)];
    of_s.erase(std::find(of_s.begin(), of_s.end(), i));
    for (int p : before) {
      if (std::find(of_s.begin(), of_s.end(), p) != of_s.end()) continue;
      items[static_cast<size_t>(p)].successors.push_back(s);
      ++items[static_cast<size_t>(s)].initial_pending;
      of_s.push_back(p);
    }
  }
  preds[static_cast<size_t>(i)].clear();
  item.initial_pending = 0;
  item.successors.clear();
  item.resolved = true;
  ++plan->num_resolved;
}

// Readers of entry e read constant constant_of[e] instead (where >= 0).
void ReadConstants(ExecutorPlan* plan, const std::vector<int>& constant_of) {
  for (Item& item : plan->items) {
    for (ExecutorPlan::Input& in : item.inputs) {
      if (in.entry < 0 || constant_of[static_cast<size_t>(in.entry)] < 0) continue;
      in.constant = constant_of[static_cast<size_t>(in.entry)];
      in.entry = -1;
    }
  }
}

}  // namespace

void ResolveFixedItems(ExecutorPlan* plan, ResourceMgr* resources) {
  auto& items = plan->items;
  const EntryReads entries(*plan);
  std::vector<std::vector<int>> preds = Predecessors(*plan);
  std::vector<int> constant_of(static_cast<size_t>(plan->num_entries), -1);
  for (size_t i = 0; i < items.size(); ++i) {
    Item& item = items[i];
    if (item.is_transfer() || item.fused != nullptr || item.kernel == nullptr || !item.kernel->OutputsFixed() ||
        !item.inputs.empty()) {
      continue;
    }
    const int outputs = item.NumOutputs();
    int data_reads = 0;
    bool eligible = true;
    for (int o = 0; o < outputs; ++o) {
      data_reads += entries.reads[static_cast<size_t>(item.entry_base + o)];
      eligible = eligible && !entries.fetched[static_cast<size_t>(item.entry_base + o)];
    }
    if (!eligible || data_reads != static_cast<int>(item.successors.size())) continue;
    std::vector<TensorValue> no_inputs;
    OpKernelContext::Params params;
    params.node = item.node;
    params.device = item.device;
    params.resources = resources;
    params.inputs = &no_inputs;
    params.step_id = -1;
    if (item.kernel_def != nullptr && !item.kernel_def->host_memory_outputs.empty()) {
      params.host_memory_outputs = &item.kernel_def->host_memory_outputs;
    }
    OpKernelContext ctx(params);
    item.kernel->Compute(&ctx);
    if (!ctx.status().ok()) continue;
    bool complete = true;
    for (int o = 0; o < outputs; ++o) complete = complete && (ctx.output(o).is_ref() || ctx.output(o).value.IsInitialized());
    if (!complete) continue;
    for (int o = 0; o < outputs; ++o) {
      constant_of[static_cast<size_t>(item.entry_base + o)] = static_cast<int>(plan->constants.size());
      plan->constants.push_back(std::move(ctx.output(o)));
      plan->constant_nodes.push_back(item.node);
    }
    Bypass(plan, preds, static_cast<int>(i));
  }
  ReadConstants(plan, constant_of);
}

}  // namespace tw
