#include "towerflow/runtime/partition.h"

#include <tuple>

#include "towerflow/device/kernel_registry.h"

namespace tw {

Device* PlanPartitioner::OutputMemory(int item, int o) const {
  const ExecutorPlan::Item& it = plan_->items[static_cast<size_t>(item)];
  return it.device->host_memory() || !OutputInHostMemory(it, o) ? it.device : host_device_;
}

Device* PlanPartitioner::InputMemory(int item, int i) const {
  const ExecutorPlan::Item& it = plan_->items[static_cast<size_t>(item)];
  return it.device->host_memory() || !InputInHostMemory(it, i) ? it.device : host_device_;
}

int PlanPartitioner::TransferItem(int producer, int output, Device* from, Device* to, int consumer,
                                  const std::vector<int>& read_after) {
  auto& items = plan_->items;
  if (read_after.empty()) consumer = -1;
  auto key = std::make_tuple(producer, output, static_cast<const Device*>(to), consumer);
  auto it = transfers_.find(key);
  if (it != transfers_.end()) return it->second;
  ExecutorPlan::Item t;
  // Named by the node and output it moves (a group member's, for a group).
  std::tie(t.node, t.transfer_output) = items[static_cast<size_t>(producer)].OutputSource(output);
  t.device = to;
  t.transfer_from = from;
  t.entry_base = plan_->num_entries++;
  ExecutorPlan::Input in;
  in.entry = items[static_cast<size_t>(producer)].entry_base + output;
  t.inputs.push_back(in);
  t.initial_pending = 1;
  const int transfer = static_cast<int>(items.size());
  items.push_back(std::move(t));
  items[static_cast<size_t>(producer)].successors.push_back(transfer);
  for (int before : read_after) {
    items[static_cast<size_t>(before)].successors.push_back(transfer);
    ++items[static_cast<size_t>(transfer)].initial_pending;
  }
  transfers_.emplace(key, transfer);
  return transfer;
}

Status PlanPartitioner::Connect(int producer, int output, int consumer, int consumer_input, bool is_ref,
                                const std::vector<int>& read_after, ExecutorPlan::Input* input) {
  auto& items = plan_->items;
  input->is_ref = is_ref;
  const ExecutorPlan::Item& src = items[static_cast<size_t>(producer)];
  const ExecutorPlan::Item& dst = items[static_cast<size_t>(consumer)];
  Device* from = OutputMemory(producer, output);
  Device* to = InputMemory(consumer, consumer_input);
  if (src.device == dst.device && from == to) {
    input->entry = src.entry_base + output;
    items[static_cast<size_t>(producer)].successors.push_back(consumer);
    ++items[static_cast<size_t>(consumer)].initial_pending;
    return Status::OK();
  }
  if (is_ref) {
    return errors::Internal("ref edge from ", src.node->DebugName(), " on ", src.device->name(), " to ",
                            dst.node->DebugName(), " on ", dst.device->name(),
                            src.device != dst.device ? " crosses devices; the placer should have colocated them"
                                       : " crosses memory types (host and device memory of one device)");
  }
  // Host memory is one memory: a host-memory value of a GPU kernel feeds a CPU
  // kernel on the host device directly. Between two host-memory devices the
  // value is still copied, so that each device owns its tensors as a real one would.
  if (from == to) {
    input->entry = src.entry_base + output;
    items[static_cast<size_t>(producer)].successors.push_back(consumer);
    ++items[static_cast<size_t>(consumer)].initial_pending;
    return Status::OK();
  }
  // A value read of a variable: the copy reads it when the consumer would.
  const auto [out_node, out_index] = src.OutputSource(output);
  const bool reads_ref = out_node->output_is_ref(out_index);
  const int transfer =
      TransferItem(producer, output, from, to, consumer, reads_ref ? read_after : std::vector<int>{});
  input->entry = items[static_cast<size_t>(transfer)].entry_base;
  items[static_cast<size_t>(transfer)].successors.push_back(consumer);
  ++items[static_cast<size_t>(consumer)].initial_pending;
  return Status::OK();
}

void PlanPartitioner::ConnectFeed(int feed, const Node* node, int output, int consumer, int consumer_input,
                                  ExecutorPlan::Input* input) {
  auto& items = plan_->items;
  Device* to = InputMemory(consumer, consumer_input);
  if (to->host_memory()) {
    input->feed = feed;
    return;
  }
  auto key = std::make_pair(feed, static_cast<const Device*>(to));
  auto it = feed_transfers_.find(key);
  int transfer;
  if (it != feed_transfers_.end()) {
    transfer = it->second;
  } else {
    ExecutorPlan::Item t;
    t.node = node;
    t.device = to;
    t.transfer_from = host_device_;
    t.transfer_output = output;
    t.entry_base = plan_->num_entries++;
    ExecutorPlan::Input in;
    in.feed = feed;
    t.inputs.push_back(in);
    transfer = static_cast<int>(items.size());
    items.push_back(std::move(t));
    feed_transfers_.emplace(key, transfer);
  }
  input->entry = items[static_cast<size_t>(transfer)].entry_base;
  items[static_cast<size_t>(transfer)].successors.push_back(consumer);
  ++items[static_cast<size_t>(consumer)].initial_pending;
}

std::vector<int> PlanPartitioner::HostEntries(const std::vector<std::pair<int, int>>& outputs) {
  auto& items = plan_->items;
  std::vector<int> entries(outputs.size(), -1);
  // Per source device, the outputs its batch copies (each once) and the
  // fetches that read each.
  std::map<Device*, std::vector<std::pair<int, int>>> batches;
  std::map<std::pair<int, int>, std::vector<size_t>> readers;
  for (size_t f = 0; f < outputs.size(); ++f) {
    const auto [producer, output] = outputs[f];
    const ExecutorPlan::Item& src = items[static_cast<size_t>(producer)];
    if (OutputInHostMemory(src, output)) {
      entries[f] = src.entry_base + output;
      continue;
    }
    auto existing = transfers_.find(std::make_tuple(producer, output, static_cast<const Device*>(host_device_), -1));
    if (existing != transfers_.end()) {
      entries[f] = items[static_cast<size_t>(existing->second)].entry_base;
      continue;
    }
    auto& readers_of = readers[{producer, output}];
    if (readers_of.empty()) batches[src.device].emplace_back(producer, output);
    readers_of.push_back(f);
  }
  for (auto& [device, batch] : batches) {
    ExecutorPlan::Item t;
    std::tie(t.node, t.transfer_output) = items[static_cast<size_t>(batch[0].first)].OutputSource(batch[0].second);
    t.device = host_device_;
    t.transfer_from = device;
    t.fetch_copy = true;
    t.entry_base = plan_->num_entries;
    plan_->num_entries += static_cast<int>(batch.size());
    const int transfer = static_cast<int>(items.size());
    for (size_t k = 0; k < batch.size(); ++k) {
      const auto [producer, output] = batch[k];
      ExecutorPlan::Input in;
      in.entry = items[static_cast<size_t>(producer)].entry_base + output;
      t.inputs.push_back(in);
      ++t.initial_pending;
      for (size_t f : readers[batch[k]]) entries[f] = t.entry_base + static_cast<int>(k);
    }
    items.push_back(std::move(t));
    for (const auto& [producer, output] : batch) items[static_cast<size_t>(producer)].successors.push_back(transfer);
    batch_transfers_.push_back(transfer);
  }
  return entries;
}

}  // namespace tw
