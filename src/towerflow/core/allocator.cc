#include "towerflow/core/allocator.h"

#include <malloc.h>
#include <sys/sysinfo.h>

#include <cstdint>
#include <cstdlib>

namespace tw {
namespace {

class HostAllocator final : public Allocator {
 public:
  explicit HostAllocator(std::string name) : name_(std::move(name)) {}
  std::string Name() const override { return name_; }
  void* Allocate(size_t bytes) override {
    // aligned_alloc requires a size that is a multiple of the alignment.
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    if (rounded == 0) rounded = kTensorAlignment;
    if (rounded < bytes || rounded > MaxHostAllocationBytes()) return nullptr;  // overflow, or never backed
    void* p = std::aligned_alloc(kTensorAlignment, rounded);
    if (p) in_use_.fetch_add(bytes, std::memory_order_relaxed);
    return p;
  }
  void Deallocate(void* ptr, size_t bytes) override {
    if (!ptr) return;
    std::free(ptr);
    in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  }
  size_t BytesInUse() const override { return in_use_.load(std::memory_order_relaxed); }

 private:
  std::string name_;
  std::atomic<size_t> in_use_{0};
};

}  // namespace

size_t MaxHostAllocationBytes() {
  static const size_t max = [] {
    struct sysinfo info;
    if (sysinfo(&info) != 0 || info.mem_unit == 0) return SIZE_MAX;
    const uint64_t units = static_cast<uint64_t>(info.totalram) + info.totalswap;
    if (units > SIZE_MAX / info.mem_unit) return SIZE_MAX;
    return static_cast<size_t>(units * info.mem_unit);
  }();
  return max;
}

// Tensors of a step are freed and allocated again every step. glibc would serve
// large ones with fresh mmaps and trim freed heap back to the system, so every
// step paid page faults (and kernel zeroing) on its activations: measured as 12%
// of a towers step. Keeping large blocks in the heap makes steps reuse warm memory.
static void KeepLargeBlocksInHeap() {
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)done;
}

Allocator* CpuAllocator() {
  static HostAllocator* allocator = [] {
    KeepLargeBlocksInHeap();
    return new HostAllocator("cpu");
  }();
  return allocator;
}

std::unique_ptr<Allocator> NewHostAllocator(std::string name) {
  KeepLargeBlocksInHeap();
  return std::make_unique<HostAllocator>(std::move(name));
}

}  // namespace tw
