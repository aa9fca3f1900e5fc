// NcclAllReducer: the AllReducer (all_reduce.h) for tensors in the memory of
// this process's GPUs, one tensor per GpuDevice, reduced with NCCL.
//
// Builds with the CUDA backend only. This header names no CUDA type, so any
// file may include it in any build, but the class's functions are defined in
// nccl_all_reduce_cuda.cc, which is compiled only with TOWERFLOW_CUDA: code
// that calls them must itself be compiled only then (a *_cuda.cc file, or
// under #if TOWERFLOW_HAVE_CUDA), or it will not link.
//
// Devices. The reducer is made for an ordered list of GpuDevices; tensor i of
// every call lives on device i. Devices are grouped by physical GPU (CUDA
// ordinal). Each physical GPU is one NCCL rank (ncclCommInitAll over the
// ordinals, on first use). Logical GPUs of one physical GPU cannot be separate
// ranks of one communicator, so their tensors are reduced through device
// memory first: the group's first device combines the others' buffers (the
// same physical memory; its stream waits, through events, for the work queued
// on theirs) into a temporary buffer, which takes part in the NCCL all-reduce
// across physical GPUs when there is more than one, and is then copied back to
// every member, whose streams wait for the copies.
//
// Ordering. All work is queued on the devices' compute streams: after the work
// queued there before the call, before the work queued after it. Nothing waits
// for the GPU; a failure of the queued work surfaces at the devices' next
// synchronisation (a fetch).
//
// Mean: NCCL's ncclAvg when every device is a physical GPU of its own and the
// dtype is floating; otherwise the sum divided by N (integers truncate, as
// CpuAllReducer's). Sums of two logical GPUs of one physical GPU add in input
// order, as CpuAllReducer does; NCCL's reduction order across GPUs is its own.
//
// Fusion: AllReduceBatch packs the values smaller than bucket_bytes into one
// flat buffer per device per bucket, so that many small gradients make one
// NCCL call instead of one each.
//
// Thread-safe: calls are serialised (NCCL needs every rank's collectives
// enqueued in the same order).
#ifndef TOWERFLOW_TRAIN_NCCL_ALL_REDUCE_H_
#define TOWERFLOW_TRAIN_NCCL_ALL_REDUCE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/train/all_reduce.h"

namespace tw {
class GpuDevice;
class KernelRegistry;
}  // namespace tw

namespace tw::train {

struct NcclAllReducerOptions {
  // AllReduceBatch reduces each value of at least this many bytes (per device)
  // on its own, and packs the smaller ones, in order and by dtype, into buckets
  // of at most this many bytes.
  int64_t bucket_bytes = 4 << 20;
  // Reduce across physical GPUs through NCCL even when the devices are all
  // on one (a communicator of one rank, whose all-reduce copies): tests run
  // the NCCL calls on a machine with one GPU.
  bool nccl_with_one_gpu = false;
};

class NcclAllReducer : public AllReducer {
 public:
  // Tensor i of every call lives on devices[i]; a device may appear more than
  // once. Borrows the devices: they must outlive the reducer. Communicators,
  // events and checks of the list (InvalidArgument for a null device) come
  // with the first call, which reports their failures.
  explicit NcclAllReducer(std::vector<GpuDevice*> devices, NcclAllReducerOptions options = {});
  ~NcclAllReducer() override;

  std::string name() const override { return "nccl"; }

  // AllReducer's contract (the same InvalidArgument checks and messages as
  // CpuAllReducer), plus InvalidArgument, with the tensors unchanged, when the
  // number of tensors is not the number of devices or a non-empty tensor is
  // not in the memory of its device's physical GPU. REQUIRES: tensor i's
  // pending writes were queued on device i's compute stream (the ordering
  // above follows that stream). CUDA and NCCL failures: Internal
  // (ResourceExhausted when out of memory), the call named; the tensors may
  // then be partly reduced.
  Status AllReduce(const std::vector<Tensor*>& tensors, Reduction op = Reduction::kMean) override;

  // values[v] holds the N tensors of one value (as AllReduce's list); each
  // value is reduced as by AllReduce, small ones fused into buckets. Every
  // value is checked before any is reduced (errors name the value's index);
  // an empty batch does nothing.
  Status AllReduceBatch(const std::vector<std::vector<Tensor*>>& values, Reduction op = Reduction::kMean);

 private:
  struct State;
  Status CheckValue(const std::vector<Tensor*>& tensors) const;
  Status InitLocked();
  Status ReduceLocked(const std::vector<void*>& buffers, DataType dtype, int64_t count, Reduction op);
  Status ReduceBucketLocked(const std::vector<const std::vector<Tensor*>*>& bucket, DataType dtype,
                            Reduction op);

  const std::vector<GpuDevice*> devices_;
  const NcclAllReducerOptions options_;
  std::mutex mu_;
  std::unique_ptr<State> state_;  // guarded by mu_; made by the first call
};

// Registers CollectiveAllReduce's GPU kernel (collective_all_reduce_cuda.cc:
// the participants' lists reduced by one NcclAllReducer) in the global
// registry, once, where CUDA GPUs are visible (kernels/register_all.h's rule:
// on fake GPUs the CPU kernel's copy runs). Returns whether it is registered.
// Thread-safe.
bool EnsureCollectiveAllReduceCudaKernel();
// The same kernel into `registry` (`towerflow ops` lists it without a GPU).
void RegisterCollectiveAllReduceCudaKernel(KernelRegistry& registry);

}  // namespace tw::train

#endif  // TOWERFLOW_TRAIN_NCCL_ALL_REDUCE_H_
