// The memory of a step graph (step_graph.h): the buffers its kernels asked
// for, fixed once so that a recorded graph's addresses stay valid.
//
// AllocationRecorder passes requests to its base allocator and notes them in
// order: each one's size, and how many requests had been made when it was
// freed. One eager run of a step graph's kernels gives the sequence.
// Both outlive their owner while a tensor holds a buffer of theirs (the
// buffer names its allocator).
// CaptureMemory then lays the sequence out in one block (before a capture
// begins: no allocation is recorded into a CUDA graph): requests whose
// lifetimes in the recorded run do not meet share bytes (ArenaLayout over the
// sequence, as PyTorch's graph pool reuses what a capture frees), so the
// block is the run's peak rather than the sum of its requests. It hands them
// out in the same order each time its kernels run (the capture, and each
// replay that re-runs them on a device that cannot capture); Rewind starts
// the sequence again. On one stream the sharing is safe: a kernel enqueued
// after a buffer was freed runs after every kernel enqueued before the free.
// A request that does not match the next size, or whose bytes another
// request still holds (the kernels freed later than they did when
// recorded), goes to the base allocator (or fails, while strict) and sets
// mismatch(): the kernels do not allocate the same way run after run, and
// their graph is not valid.
// Freeing a handed-out buffer only marks it free: the block stays until the
// memory is released and no tensor holds a buffer of it. Thread-safe.
#ifndef TOWERFLOW_RUNTIME_CAPTURE_MEMORY_H_
#define TOWERFLOW_RUNTIME_CAPTURE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/core/allocator.h"

namespace tw {

// One request of a recorded run.
struct CaptureRequest {
  static constexpr size_t kLive = std::numeric_limits<size_t>::max();
  size_t bytes = 0;
  // The number of requests the run had made when this one was freed; kLive
  // when it was not freed during the run (an output, a buffer kept).
  size_t freed_after = kLive;
  bool operator==(const CaptureRequest&) const = default;
};

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
  // The requests so far; the recorder starts a new sequence.
  std::vector<CaptureRequest> TakeRequests();

 private:
  explicit AllocationRecorder(Allocator* base) : base_(base) {}

  Allocator* base_;
  std::mutex mu_;
  std::vector<CaptureRequest> requests_;  // guarded by mu_
  std::map<const void*, size_t> open_;    // a live buffer -> its request; guarded by mu_
  int64_t live_ = 0;                      // guarded by mu_
  bool released_ = false;                 // guarded by mu_
};

class CaptureMemory final : public Allocator {
 public:
  // The requests laid out in one block from `base`; null when `base` runs
  // out. The caller owns it until Release().
  static CaptureMemory* Create(Allocator* base, const std::vector<CaptureRequest>& requests);
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
  bool Owns(const void* ptr) const;
  // The block's size: the most bytes the requests hold at once, laid out.
  size_t bytes() const { return block_bytes_; }
  // The sum of the requests' sizes (what one buffer each would take).
  size_t requested_bytes() const { return requested_bytes_; }

 private:
  CaptureMemory(Allocator* base, std::vector<size_t> sizes, std::vector<size_t> offsets,
                std::vector<std::vector<int>> overlaps, char* block, size_t block_bytes);
  ~CaptureMemory() override;

  Allocator* base_;
  const std::vector<size_t> sizes_;
  const std::vector<size_t> offsets_;               // per request, in the block
  const std::vector<std::vector<int>> overlaps_;    // per request: those over some of its bytes
  char* const block_;
  const size_t block_bytes_;
  size_t requested_bytes_ = 0;
  std::multimap<const void*, size_t> index_;  // address -> the requests there; fixed
  mutable std::mutex mu_;
  size_t next_ = 0;           // guarded by mu_
  std::vector<char> out_;     // per request: handed out, not freed; guarded by mu_
  bool mismatch_ = false;     // guarded by mu_
  bool strict_ = false;       // guarded by mu_
  int64_t live_ = 0;          // handed out, not freed; guarded by mu_
  bool released_ = false;     // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_CAPTURE_MEMORY_H_
