// Allocator: where a device's tensor memory comes from.
//
// An Allocator hands out aligned raw blocks and counts what is in use. The CPU
// allocator returns 64-byte aligned memory (one cache line, the widest SIMD load).
// Implementations are thread-safe. Allocate returns nullptr when memory runs out
// (for host allocators, also for a block larger than MaxHostAllocationBytes());
// callers turn that into ResourceExhausted naming the request.
#ifndef TOWERFLOW_CORE_ALLOCATOR_H_
#define TOWERFLOW_CORE_ALLOCATOR_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace tw {

inline constexpr size_t kTensorAlignment = 64;

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Returns nullptr on exhaustion. A 0-byte request returns a valid unique pointer.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
  // Bytes currently handed out through this allocator.
  virtual size_t BytesInUse() const = 0;
};

// The largest block a host allocator hands out: the machine's physical memory
// plus swap (sysinfo(2)), read once. A larger request returns nullptr, so it is
// ResourceExhausted naming the node, instead of being granted by a kernel that
// overcommits (vm.overcommit_memory=1, as Kubernetes sets it) and the process
// being OOM-killed when a kernel writes to the block.
size_t MaxHostAllocationBytes();

// The process-wide host allocator (aligned_alloc), shared by CPU devices.
Allocator* CpuAllocator();
// A new host allocator with its own name and byte count (devices whose memory
// is host memory but whose use is counted apart, such as the test fake GPU).
std::unique_ptr<Allocator> NewHostAllocator(std::string name);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_ALLOCATOR_H_
