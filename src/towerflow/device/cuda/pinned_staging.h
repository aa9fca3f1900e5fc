// PinnedStagingPool: page-locked host blocks that host-to-device copies pass
// through, so that GpuDevice::CopyFromHost has read its source when it returns.
//
// Why: cudaMemcpyAsync from pageable memory is not guaranteed to have read the
// source when it returns. CUDA's "API synchronization behavior"
// (docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html) promises that
// only for the synchronous cudaMemcpy ("The function will return once the
// pageable buffer has been copied to the staging memory"); for the Async forms
// it says the call "might be synchronous" and that the driver "may" stage the
// copy, and earlier versions of that page said the staging "will be handled
// asynchronously with a worker thread". A caller that frees or overwrites its
// host tensor after CopyFromHost (a fed batch buffer, a CPU variable updated
// next) would race with the DMA. Copying into a pinned block first makes the
// host side synchronous and the DMA truly asynchronous.
//
// A block is lent with Acquire to one copy, and Release records an event on the
// stream after the copy that reads it: the block is lent again only once that
// event has completed (polled with cudaEventQuery, never waited for). Idle
// blocks are kept for reuse up to `max_idle_bytes`; past it, idle blocks are
// freed before a new one is made. Busy blocks are never freed, so the pool
// grows with the copies in flight. Thread-safe.
#ifndef TOWERFLOW_DEVICE_CUDA_PINNED_STAGING_H_
#define TOWERFLOW_DEVICE_CUDA_PINNED_STAGING_H_

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/core/status.h"

namespace tw {

class PinnedStagingPool {
 public:
  struct Block {
    void* data = nullptr;
    size_t size = 0;
    cudaEvent_t done = nullptr;  // recorded after the last copy reading the block
    bool lent = false;           // between Acquire and Release
  };

  // REQUIRES: the GPU whose streams the blocks are copied on is current on the
  // calling thread whenever a method runs (GpuDevice calls them after Activate).
  explicit PinnedStagingPool(size_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
  // Frees every block, logging errors. REQUIRES: no copy reading a block is
  // still queued (the device synchronized its streams).
  ~PinnedStagingPool();
  PinnedStagingPool(const PinnedStagingPool&) = delete;
  PinnedStagingPool& operator=(const PinnedStagingPool&) = delete;

  // An idle block of at least `bytes` (> 0), lent to the caller until Release.
  // ResourceExhausted when pinned memory runs out; Internal for other CUDA errors.
  StatusOr<Block*> Acquire(size_t bytes);
  // Ends the loan. With a non-null `stream`, the block stays busy until the
  // work queued on `stream` so far (the copy that reads it) has finished; with
  // nullptr (no copy was queued) it is idle at once. Returns the event record's
  // error, in which case the block is never lent again (its end is unknown).
  Status Release(Block* block, cudaStream_t stream);

  size_t total_bytes() const;

 private:
  // REQUIRES: mu_ held. OK and *idle = the block's state; an error of the query.
  Status IsIdle(const Block& block, bool* idle) const;
  // Frees idle blocks until the pool holds at most max_idle_bytes_. REQUIRES: mu_ held.
  void TrimIdle();

  const size_t max_idle_bytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;  // guarded by mu_
  size_t total_bytes_ = 0;                      // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_CUDA_PINNED_STAGING_H_
