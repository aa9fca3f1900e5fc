// PinnedStagingPool (pinned_staging.h).
#include "towerflow/device/cuda/pinned_staging.h"

#include "towerflow/core/logging.h"
#include "towerflow/device/cuda/cuda_status.h"

namespace tw {
namespace {

// Block sizes: powers of two from 64 KiB to 64 MiB (a batch of one size fits
// the block of the last step), then multiples of 8 MiB (a 600 MiB variable
// must not pin 1 GiB).
size_t BlockSizeFor(size_t bytes) {
  constexpr size_t kMin = size_t{64} << 10;
  constexpr size_t kPow2Max = size_t{64} << 20;
  constexpr size_t kStep = size_t{8} << 20;
  if (bytes > kPow2Max) return (bytes + kStep - 1) / kStep * kStep;
  size_t size = kMin;
  while (size < bytes) size *= 2;
  return size;
}

void FreeBlock(PinnedStagingPool::Block* block) {
  Status s = CudaStatus(cudaEventDestroy(block->done), "cudaEventDestroy(block->done)", __FILE__, __LINE__);
  if (!s.ok()) TW_LOG(ERROR) << "pinned staging: " << s.ToString();
  s = CudaStatus(cudaFreeHost(block->data), "cudaFreeHost(block->data)", __FILE__, __LINE__);
  if (!s.ok()) TW_LOG(ERROR) << "pinned staging: " << s.ToString();
}

}  // namespace

PinnedStagingPool::~PinnedStagingPool() {
  for (auto& block : blocks_) FreeBlock(block.get());
}

size_t PinnedStagingPool::total_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_bytes_;
}

Status PinnedStagingPool::IsIdle(const Block& block, bool* idle) const {
  *idle = false;
  if (block.lent) return Status::OK();
  // An event never recorded counts as complete (cudaEventQuery returns success).
  const cudaError_t err = cudaEventQuery(block.done);
  if (err == cudaErrorNotReady) {
    // Not an error, but the runtime keeps it as the thread's last error: clear
    // it, or the next TW_CUDA_LAUNCH_CHECK on this thread would report it.
    (void)cudaGetLastError();
    return Status::OK();
  }
  TW_CUDA_RETURN_IF_ERROR(err);
  *idle = true;
  return Status::OK();
}

void PinnedStagingPool::TrimIdle() {
  for (size_t i = 0; i < blocks_.size() && total_bytes_ > max_idle_bytes_;) {
    bool idle = false;
    if (IsIdle(*blocks_[i], &idle).ok() && idle) {
      // cudaFreeHost may wait for the device; this runs only past the cap.
      total_bytes_ -= blocks_[i]->size;
      FreeBlock(blocks_[i].get());
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

StatusOr<PinnedStagingPool::Block*> PinnedStagingPool::Acquire(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Block* best = nullptr;
  for (auto& block : blocks_) {
    if (block->size < bytes || (best != nullptr && block->size >= best->size)) continue;
    bool idle = false;
    TW_RETURN_IF_ERROR(IsIdle(*block, &idle));
    if (idle) best = block.get();
  }
  if (best != nullptr) {
    best->lent = true;
    return best;
  }
  const size_t size = BlockSizeFor(bytes);
  if (total_bytes_ + size > max_idle_bytes_) TrimIdle();
  auto block = std::make_unique<Block>();
  block->size = size;
  TW_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&block->data, size, cudaHostAllocDefault));
  const cudaError_t err = cudaEventCreateWithFlags(&block->done, cudaEventDisableTiming);
  if (err != cudaSuccess) {
    Status s = CudaStatus(err, "cudaEventCreateWithFlags(&block->done, cudaEventDisableTiming)", __FILE__, __LINE__);
    Status freed = CudaStatus(cudaFreeHost(block->data), "cudaFreeHost(block->data)", __FILE__, __LINE__);
    if (!freed.ok()) TW_LOG(ERROR) << "pinned staging: " << freed.ToString();
    return s;
  }
  block->lent = true;
  total_bytes_ += size;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

Status PinnedStagingPool::Release(Block* block, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream != nullptr) TW_CUDA_RETURN_IF_ERROR(cudaEventRecord(block->done, stream));
  block->lent = false;
  return Status::OK();
}

}  // namespace tw
