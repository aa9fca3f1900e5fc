#include "towerflow/runtime/capture_memory.h"

#include <utility>

#include "towerflow/runtime/arena_layout.h"

namespace tw {

void* AllocationRecorder::Allocate(size_t bytes) {
  void* p = base_->Allocate(bytes);
  if (p != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    open_[p] = requests_.size();
    requests_.push_back({.bytes = bytes});
    ++live_;
  }
  return p;
}

void AllocationRecorder::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  Allocator* base = base_;
  bool last;
  {
    // Noted before the base has it back: another request could get the
    // same address as soon as it does.
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = open_.find(ptr); it != open_.end()) {
      requests_[it->second].freed_after = requests_.size();
      open_.erase(it);
    }
    // Decided in the same section as the count: two threads freeing the last
    // buffers at once must not both see "nothing left".
    last = --live_ == 0 && released_;
  }
  base->Deallocate(ptr, bytes);
  if (last) delete this;
}

std::vector<CaptureRequest> AllocationRecorder::TakeRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  open_.clear();
  return std::move(requests_);
}

void AllocationRecorder::Release() {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    last = live_ == 0;
  }
  if (last) delete this;
}

CaptureMemory* CaptureMemory::Create(Allocator* base, const std::vector<CaptureRequest>& requests) {
  // The requests in the order they were made, a chain of events: request i
  // is born at event i and dead after event freed_after - 1 (one that lived
  // past the run, after the last event, n).
  const int n = static_cast<int>(requests.size());
  std::vector<ArenaBuffer> buffers(requests.size());
  std::vector<size_t> sizes(requests.size());
  for (int i = 0; i < n; ++i) {
    const CaptureRequest& r = requests[static_cast<size_t>(i)];
    ArenaBuffer& b = buffers[static_cast<size_t>(i)];
    b.bytes = sizes[static_cast<size_t>(i)] = r.bytes;
    b.producer = i;
    const bool freed = r.freed_after != CaptureRequest::kLive && r.freed_after > static_cast<size_t>(i) &&
                       r.freed_after <= requests.size();
    b.readers = {freed ? static_cast<int>(r.freed_after) - 1 : n};
  }
  ArenaLayout layout = PlanArena(buffers, PlanOrder::Chain(n + 1));
  char* block = nullptr;
  if (layout.total_bytes > 0) {
    block = static_cast<char*>(base->Allocate(layout.total_bytes));
    if (block == nullptr) return nullptr;
  }
  return new CaptureMemory(base, std::move(sizes), std::move(layout.offsets), std::move(layout.overlaps), block,
                           layout.total_bytes);
}

CaptureMemory::CaptureMemory(Allocator* base, std::vector<size_t> sizes, std::vector<size_t> offsets,
                             std::vector<std::vector<int>> overlaps, char* block, size_t block_bytes)
    : base_(base),
      sizes_(std::move(sizes)),
      offsets_(std::move(offsets)),
      overlaps_(std::move(overlaps)),
      block_(block),
      block_bytes_(block_bytes),
      out_(sizes_.size(), 0) {
  for (size_t i = 0; i < sizes_.size(); ++i) {
    index_.emplace(block_ + offsets_[i], i);
    requested_bytes_ += sizes_[i];
  }
}

CaptureMemory::~CaptureMemory() {
  if (block_ != nullptr) base_->Deallocate(block_, block_bytes_);
}

bool CaptureMemory::Owns(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  return block_ != nullptr && p >= block_ && p < block_ + block_bytes_;
}

void CaptureMemory::Release() {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    last = live_ == 0;
  }
  if (last) delete this;
}

void* CaptureMemory::Allocate(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ < sizes_.size() && sizes_[next_] == bytes) {
      // Its bytes are free: no request over them is out, itself included.
      bool free = !out_[next_];
      for (int other : overlaps_[next_]) free = free && !out_[static_cast<size_t>(other)];
      if (free) {
        out_[next_] = 1;
        ++live_;
        return block_ + offsets_[next_++];
      }
    }
    mismatch_ = true;
    if (strict_) return nullptr;
  }
  void* p = base_->Allocate(bytes);
  if (p != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    ++live_;
  }
  return p;
}

void CaptureMemory::set_strict(bool strict) {
  std::lock_guard<std::mutex> lock(mu_);
  strict_ = strict;
}

void CaptureMemory::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  if (!Owns(ptr)) base_->Deallocate(ptr, bytes);
  bool gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The request out at this address (requests over the same bytes are
    // never out at once).
    auto [first, last] = index_.equal_range(ptr);
    for (auto it = first; it != last; ++it) {
      if (out_[it->second]) {
        out_[it->second] = 0;
        break;
      }
    }
    gone = --live_ == 0 && released_;  // as AllocationRecorder::Deallocate
  }
  if (gone) delete this;
}

void CaptureMemory::Rewind() {
  std::lock_guard<std::mutex> lock(mu_);
  next_ = 0;
  mismatch_ = false;
}

bool CaptureMemory::exact() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !mismatch_ && next_ == sizes_.size();
}

bool CaptureMemory::mismatch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mismatch_;
}

}  // namespace tw
