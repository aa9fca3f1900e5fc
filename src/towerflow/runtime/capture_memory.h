// The memory of a step graph (step_graph.h): the buffers its kernels asked
// for, fixed once so that a recorded graph's addresses stay valid.
//
// AllocationRecorder passes requests to its base allocator and notes their
// sizes in order: one eager run of a step graph's kernels gives the sequence.
// Both outlive their owner while a tensor holds a buffer of theirs (the
// buffer names its allocator).
// CaptureMemory then makes one buffer per request of that sequence up front
// (before a capture begins: no allocation is recorded into a CUDA graph) and
// hands them out in the same order each time its kernels run (the capture,
// and each replay that re-runs them on a device that cannot capture);
// Rewind starts the sequence again. A request that does not match the next
// size goes to the base allocator (or fails, while strict) and sets
// mismatch(): the kernels do not allocate the same way run after run, and
// their graph is not valid.
// Freeing a handed-out buffer only counts it: the buffers stay until the
// memory is released and no tensor holds one. Thread-safe.
#ifndef TOWERFLOW_RUNTIME_CAPTURE_MEMORY_H_
#define TOWERFLOW_RUNTIME_CAPTURE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/core/allocator.h"

namespace tw {

class AllocationRecorder final : public Allocator {
 public:
  // The caller owns it until Release(); tensors allocated through it may
  // outlive that (a variable's buffer made by an Assign): it goes when the
  // last of them does.
  static AllocationRecorder* Create(Allocator* base) { return new AllocationRecorder(base); }
  void Release();
  std::string Name() const override { return base_->Name(); }
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  size_t BytesInUse() const override { return base_->BytesInUse(); }
  std::vector<size_t> TakeSizes();

 private:
  explicit AllocationRecorder(Allocator* base) : base_(base) {}
  void MaybeDelete();

  Allocator* base_;
  std::mutex mu_;
  std::vector<size_t> sizes_;  // guarded by mu_
  int64_t live_ = 0;           // guarded by mu_
  bool released_ = false;      // guarded by mu_
};

class CaptureMemory final : public Allocator {
 public:
  // One buffer per size, from `base`; null when `base` runs out (what was
  // taken is given back). The caller owns it until Release().
  static CaptureMemory* Create(Allocator* base, const std::vector<size_t>& sizes);
  // The owner is done: the memory goes when the last tensor over one of its
  // buffers does (now, if none is alive).
  void Release();

  std::string Name() const override { return base_->Name(); }
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  size_t BytesInUse() const override { return base_->BytesInUse(); }

  void Rewind();
  // While strict (a CUDA capture in progress), a request that does not match
  // the next size returns nullptr and sets mismatch() instead of going to the
  // base allocator: an allocation inside a capture would belong to the graph,
  // and be freed though the graph never ran.
  void set_strict(bool strict);
  // Every request since the last Rewind matched the sequence, and all of it
  // was asked for.
  bool exact() const;
  bool mismatch() const;
  bool Owns(const void* ptr) const { return index_.count(ptr) > 0; }
  size_t bytes() const { return total_bytes_; }

 private:
  CaptureMemory(Allocator* base, std::vector<size_t> sizes, std::vector<void*> buffers);
  ~CaptureMemory() override;
  // Deletes this when released and nothing is alive; call without mu_.
  void MaybeDelete();

  Allocator* base_;
  const std::vector<size_t> sizes_;
  const std::vector<void*> buffers_;
  std::map<const void*, size_t> index_;  // buffer -> position; fixed
  size_t total_bytes_ = 0;
  mutable std::mutex mu_;
  size_t next_ = 0;          // guarded by mu_
  bool mismatch_ = false;    // guarded by mu_
  bool strict_ = false;      // guarded by mu_
  int64_t live_ = 0;         // handed out, not freed; guarded by mu_
  bool released_ = false;    // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_CAPTURE_MEMORY_H_
