#include "towerflow/runtime/capture_memory.h"

#include <utility>

namespace tw {

void* AllocationRecorder::Allocate(size_t bytes) {
  void* p = base_->Allocate(bytes);
  if (p != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    sizes_.push_back(bytes);
    ++live_;
  }
  return p;
}

void AllocationRecorder::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  base_->Deallocate(ptr, bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
  }
  MaybeDelete();
}

std::vector<size_t> AllocationRecorder::TakeSizes() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(sizes_);
}

void AllocationRecorder::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
  }
  MaybeDelete();
}

void AllocationRecorder::MaybeDelete() {
  bool done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done = released_ && live_ == 0;
  }
  if (done) delete this;
}

CaptureMemory* CaptureMemory::Create(Allocator* base, const std::vector<size_t>& sizes) {
  std::vector<void*> buffers;
  for (size_t bytes : sizes) {
    void* p = base->Allocate(bytes);
    if (p == nullptr) {
      for (size_t i = 0; i < buffers.size(); ++i) base->Deallocate(buffers[i], sizes[i]);
      return nullptr;
    }
    buffers.push_back(p);
  }
  return new CaptureMemory(base, sizes, std::move(buffers));
}

CaptureMemory::CaptureMemory(Allocator* base, std::vector<size_t> sizes, std::vector<void*> buffers)
    : base_(base), sizes_(std::move(sizes)), buffers_(std::move(buffers)) {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    index_[buffers_[i]] = i;
    total_bytes_ += sizes_[i];
  }
}

CaptureMemory::~CaptureMemory() {
  for (size_t i = 0; i < buffers_.size(); ++i) base_->Deallocate(buffers_[i], sizes_[i]);
}

void CaptureMemory::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
  }
  MaybeDelete();
}

void CaptureMemory::MaybeDelete() {
  bool done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done = released_ && live_ == 0;
  }
  if (done) delete this;
}

void* CaptureMemory::Allocate(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ < sizes_.size() && sizes_[next_] == bytes) {
      ++live_;
      return buffers_[next_++];
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
  }
  MaybeDelete();
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
