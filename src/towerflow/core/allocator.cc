#include "towerflow/core/allocator.h"

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
    if (rounded < bytes) return nullptr;  // overflow
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

Allocator* CpuAllocator() {
  static HostAllocator* allocator = new HostAllocator("cpu");
  return allocator;
}

std::unique_ptr<Allocator> NewHostAllocator(std::string name) {
  return std::make_unique<HostAllocator>(std::move(name));
}

}  // namespace tw
