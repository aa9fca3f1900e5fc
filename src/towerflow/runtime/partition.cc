#include "towerflow/runtime/partition.h"

#include <cstring>

namespace tw {

Status CopyTensorBetweenDevices(const Tensor& src, Device* src_device, Device* dst_device, Tensor* dst) {
  if (src_device->host_memory() && dst_device->host_memory()) {
    StatusOr<Tensor> t = Tensor::Allocate(dst_device->allocator(), src.dtype(), src.shape());
    if (!t.ok()) return t.status().WithContext("copying to " + dst_device->name());
    if (src.dtype() == kString) {
      auto from = src.flat<std::string>();
      auto to = t->flat<std::string>();
      for (size_t i = 0; i < from.size(); ++i) to[i] = from[i];
    } else if (src.TotalBytes() > 0) {
      std::memcpy(t->raw_data(), src.raw_data(), src.TotalBytes());
    }
    *dst = std::move(t).value();
    return Status::OK();
  }
  if (src_device->host_memory()) return dst_device->CopyFromHost(src, dst);
  if (dst_device->host_memory()) return src_device->CopyToHost(src, dst);
  // Device to device through the host; [cuda] may add peer-to-peer copies here.
  Tensor host;
  TW_RETURN_IF_ERROR(src_device->CopyToHost(src, &host));
  return dst_device->CopyFromHost(host, dst);
}

Status PlanPartitioner::Connect(int producer, int output, int consumer, bool is_ref, ExecutorPlan::Input* input) {
  auto& items = plan_->items;
  Device* src_device = items[static_cast<size_t>(producer)].device;
  Device* dst_device = items[static_cast<size_t>(consumer)].device;
  input->is_ref = is_ref;
  if (src_device == dst_device) {
    input->entry = items[static_cast<size_t>(producer)].entry_base + output;
    items[static_cast<size_t>(producer)].successors.push_back(consumer);
    ++items[static_cast<size_t>(consumer)].initial_pending;
    return Status::OK();
  }
  const Node* src_node = items[static_cast<size_t>(producer)].node;
  const Node* dst_node = items[static_cast<size_t>(consumer)].node;
  if (is_ref) {
    return errors::Internal("ref edge from ", src_node->DebugName(), " on ", src_device->name(), " to ",
                            dst_node->DebugName(), " on ", dst_device->name(),
                            " crosses devices; the placer should have colocated them");
  }
  auto key = std::make_tuple(producer, output, static_cast<const Device*>(dst_device));
  auto it = transfers_.find(key);
  int transfer;
  if (it != transfers_.end()) {
    transfer = it->second;
  } else {
    ExecutorPlan::Item t;
    t.node = src_node;
    t.device = dst_device;
    t.transfer_from = src_device;
    t.transfer_output = output;
    t.entry_base = plan_->num_entries++;
    ExecutorPlan::Input from;
    from.entry = items[static_cast<size_t>(producer)].entry_base + output;
    t.inputs.push_back(from);
    t.initial_pending = 1;
    transfer = static_cast<int>(items.size());
    items.push_back(std::move(t));
    items[static_cast<size_t>(producer)].successors.push_back(transfer);
    transfers_.emplace(key, transfer);
  }
  input->entry = items[static_cast<size_t>(transfer)].entry_base;
  items[static_cast<size_t>(transfer)].successors.push_back(consumer);
  ++items[static_cast<size_t>(consumer)].initial_pending;
  return Status::OK();
}

}  // namespace tw
