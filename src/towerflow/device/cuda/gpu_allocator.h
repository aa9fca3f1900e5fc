// GpuAllocator: the memory of one logical GPU.
//
// Blocks come from the physical GPU's default memory pool with
// cudaMallocAsync on the device's compute stream, and go back with
// cudaFreeAsync on the same stream: allocation is stream-ordered (never a
// cudaMalloc per op, never a device-wide synchronisation), and a block freed on
// the host while queued kernels still use it is reused only by later work. The
// pool keeps freed memory (release threshold: the limit) instead of returning
// it to the driver at each synchronisation.
//
// Each logical GPU has a byte limit; a request past it, or one the pool cannot
// serve, returns nullptr, which OpKernelContext turns into ResourceExhausted
// naming the node, the shape and BytesInUse; Describe() adds the device, the
// limit and the largest allocation so far for that message.
//
// Test aid: with TOWERFLOW_GPU_POISON=1 in the environment, every new block is
// filled with 0xFF bytes (a float NaN) before use, so a kernel that leaves part
// of its output unwritten fails its parity test. Thread-safe.
#ifndef TOWERFLOW_DEVICE_CUDA_GPU_ALLOCATOR_H_
#define TOWERFLOW_DEVICE_CUDA_GPU_ALLOCATOR_H_

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>
#include <string>

#include "towerflow/core/allocator.h"
#include "towerflow/device/cuda/cuda_status.h"

namespace tw {

class GpuAllocator final : public Allocator {
 public:
  // `stream` is the compute stream blocks are ordered on; set by the device
  // once it exists (set_stream), before the first allocation.
  GpuAllocator(std::string name, int ordinal, size_t limit);
  void set_stream(cudaStream_t stream) { stream_ = stream; }

  std::string Name() const override { return name_; }
  void* Allocate(size_t bytes) override;
  // As Allocate, ordered on `stream` instead of the compute stream (the block
  // still goes back with Deallocate, on the compute stream). A copy into the
  // GPU allocates its destination on its own stream, so that it need not wait
  // for the work queued on the compute stream: the pool reuses a block freed
  // on another stream only once that free is known complete, or after it
  // makes `stream` wait for it (cudaMemPool's default reuse policies).
  void* AllocateOn(size_t bytes, cudaStream_t stream);
  void Deallocate(void* ptr, size_t bytes) override;
  size_t BytesInUse() const override { return in_use_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }
  size_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  // While the device's compute stream is being captured (GpuDevice::
  // BeginCapture, from the calling thread of HoldFrees), a stream-ordered
  // free or allocation would be recorded into the graph: frees wait in a
  // list instead, and EndCapture frees them; allocations from other threads
  // wait for the capture to end, and the capturing thread's own fail
  // (nullptr: a step graph's kernels take their memory from buffers made
  // before the capture). A free or allocation under way when HoldFrees is
  // called has been queued when it returns.
  void HoldFrees();
  void ReleaseHeldFrees();
  // "GPU:0 (ordinal 0): 1.2 GiB in use of a 70.0 GiB limit, peak 3.4 GiB"
  std::string Describe() const;

 private:
  std::string name_;
  int ordinal_;
  size_t limit_;
  bool poison_;
  cudaStream_t stream_ = nullptr;
  std::atomic<size_t> in_use_{0};
  std::atomic<bool> holding_{false};  // written under held_mu_
  std::mutex held_mu_;                // also held over each stream-ordered call
  std::condition_variable released_;  // holding_ went false
  std::thread::id capturing_;         // guarded by held_mu_
  std::vector<std::pair<void*, size_t>> held_;  // guarded by held_mu_
  std::atomic<size_t> peak_{0};
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_CUDA_GPU_ALLOCATOR_H_
