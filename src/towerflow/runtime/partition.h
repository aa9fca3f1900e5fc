// Partitioning: how a plan that spans devices moves tensors between them.
//
// TF splits a step's graph into one subgraph per device joined by _Send/_Recv
// pairs. towerflow runs a step's nodes of every device in one executor, so a
// partition is the set of plan items on one device, and each cross-device data
// edge gets one transfer item (the Send/Recv pair): it waits for the producer,
// copies the tensor into the destination device's allocator, and feeds every
// consumer of that output on that device. Control edges need no transfer: the
// executor's pending counts already span devices. Ref edges never cross devices
// (the placer colocates their ends); a value read of a variable on another
// device reads it under its lock, then copies.
//
// Copies between host-memory devices (CPU, fake GPU) are memcpys; a device
// without host memory (CUDA, [cuda]) supplies Device::CopyFromHost/CopyToHost.
// A single-device plan has no transfer items and pays nothing. Functions here are
// thread-safe; PlanPartitioner is used by one thread building one plan.
#ifndef TOWERFLOW_RUNTIME_PARTITION_H_
#define TOWERFLOW_RUNTIME_PARTITION_H_

#include <map>
#include <tuple>

#include "towerflow/runtime/executor.h"

namespace tw {

// Copies `src`, which lives on `src_device`, into a new tensor allocated by
// `dst_device`'s allocator (always a copy, even between host-memory devices, so
// the destination owns its bytes as a real device would). ResourceExhausted when
// the destination is out of memory; Unimplemented when a device without host
// memory has no copy.
Status CopyTensorBetweenDevices(const Tensor& src, Device* src_device, Device* dst_device, Tensor* dst);

// Wires a plan's data edges, inserting transfer items for cross-device ones.
class PlanPartitioner {
 public:
  explicit PlanPartitioner(ExecutorPlan* plan) : plan_(plan) {}

  // Makes item `consumer` read output `output` of item `producer`: directly when
  // both are on one device, else through the (shared) transfer item for that
  // output and the consumer's device. Updates successors and pending counts.
  // Internal error for a ref input across devices (the placer prevents it).
  Status Connect(int producer, int output, int consumer, bool is_ref, ExecutorPlan::Input* input);

  int num_transfers() const { return static_cast<int>(transfers_.size()); }

 private:
  ExecutorPlan* plan_;
  // (producer item, output, destination device) -> transfer item
  std::map<std::tuple<int, int, const Device*>, int> transfers_;
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_PARTITION_H_
