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
// device (or in another memory) reads it under its lock, then copies. Such a
// read keeps the meaning it has on one device, where the consumer reads the
// variable when it runs: the transfer waits for the consumer's control inputs
// too (an Identity of a variable under a control dependency on its Assign
// reads the assigned value), so it is shared only by consumers without control
// inputs.
//
// Transfers copy with transfers.h's CopyTensorBetweenDevices.
//
// Memory types: on a device without host memory, a kernel may keep some
// inputs and outputs in host memory (KernelDef::host_memory_inputs/outputs:
// shape arguments, TF's int32-on-host values). Such a value lives "on the
// host device" (the plan's client CPU device) as far as transfers go, so an
// edge needs a copy when the producer's memory and the consumer's memory
// differ, even on one device: a GPU Shape's host output feeds a GPU Reshape's
// host shape input directly, and is copied to the GPU for a GPU Mul.
// A single-device plan on host memory has no transfer items and pays nothing. Functions here are
// thread-safe; PlanPartitioner is used by one thread building one plan.
#ifndef TOWERFLOW_RUNTIME_PARTITION_H_
#define TOWERFLOW_RUNTIME_PARTITION_H_

#include <map>
#include <tuple>
#include <vector>

#include "towerflow/runtime/plan.h"

namespace tw {

// Wires a plan's data edges, inserting transfer items for cross-device ones
// (the copies they make are transfers.h's).
class PlanPartitioner {
 public:
  // `host_device`: the client CPU device, where host-memory values of devices
  // without host memory count as living.
  PlanPartitioner(ExecutorPlan* plan, Device* host_device) : plan_(plan), host_device_(host_device) {}

  // Makes item `consumer` read output `output` of item `producer`: directly when
  // both are on one device with one memory type, else through the (shared)
  // transfer item for that output and the consumer's memory. Updates successors
  // and pending counts. Internal error for a ref input across devices or memory
  // types (the placer prevents the first; kernels never take refs in host memory).
  // `consumer_input` is the input's index on the consumer. `read_after`: the
  // items of the consumer's control inputs; a transfer that reads a ref output
  // (a variable) as a value waits for them as the consumer does.
  Status Connect(int producer, int output, int consumer, int consumer_input, bool is_ref,
                 const std::vector<int>& read_after, ExecutorPlan::Input* input);
  // Makes input `consumer_input` of item `consumer` read feed `feed` (a host
  // tensor replacing output `output` of `node`): directly when that input is in
  // host memory, else through a transfer to the consumer's device memory (one
  // per feed and device, shared by its consumers there; a root of the plan).
  void ConnectFeed(int feed, const Node* node, int output, int consumer, int consumer_input,
                   ExecutorPlan::Input* input);
  // The entries holding many outputs in host memory (a step's fetches), each
  // given as (producer item, output): the output's own entry when it is in
  // host memory, or the transfer to the host that already copies it; the
  // others are copied per source device by one transfer item that waits for
  // its device once (Device::CopyToHostMany).
  std::vector<int> HostEntries(const std::vector<std::pair<int, int>>& outputs);

  int num_transfers() const {
    return static_cast<int>(transfers_.size() + feed_transfers_.size() + batch_transfers_.size());
  }

 private:
  // The device whose memory holds output `o` of `item`, and input `i` of it.
  Device* OutputMemory(int item, int o) const;
  Device* InputMemory(int item, int i) const;
  // The transfer item copying (producer, output) from `from` into `to`, made
  // once per destination; one for `consumer` alone when `read_after` is not
  // empty, waiting for those items too.
  int TransferItem(int producer, int output, Device* from, Device* to, int consumer = -1,
                   const std::vector<int>& read_after = {});

  ExecutorPlan* plan_;
  Device* host_device_;
  // (producer item, output, destination memory, consumer or -1 when shared) -> transfer item
  std::map<std::tuple<int, int, const Device*, int>, int> transfers_;
  // (feed, destination memory) -> transfer item
  std::map<std::pair<int, const Device*>, int> feed_transfers_;
  std::vector<int> batch_transfers_;  // HostEntries' transfer items
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_PARTITION_H_
