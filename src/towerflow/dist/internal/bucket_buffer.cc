#include "towerflow/dist/internal/bucket_buffer.h"

#include <atomic>
#include <cstring>

namespace tw::dist::internal {

// One layout's block: slot i at offsets_[i], sizes_[i] bytes.
class BucketBlock {
 public:
  // A block of the layout (`offsets`, `total` bytes, from LayoutOf); null
  // when `base` has no memory for it. The caller holds one reference.
  // `memory` provides the block itself (null: `base`).
  static BucketBlock* Create(const std::string& name, const std::vector<size_t>& sizes, std::vector<size_t> offsets,
                             size_t total, Allocator* base, Allocator* memory) {
    if (memory == nullptr) memory = base;
    void* data = memory->Allocate(total);
    if (data == nullptr) return nullptr;
    std::memset(data, 0, total);  // the gaps are reduced too: defined values
    return new BucketBlock(name, sizes, std::move(offsets), total, static_cast<char*>(data), base, memory);
  }

  Allocator* slot(int i) { return &slots_[static_cast<size_t>(i)]; }
  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  size_t offset(int i) const { return offsets_[static_cast<size_t>(i)]; }

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // Serves nothing any more.
  void Retire() { retired_.store(true, std::memory_order_release); }

 private:
  class Slot final : public Allocator {
   public:
    std::string Name() const override { return name; }
    void* Allocate(size_t bytes) override { return block->AllocateSlot(index, bytes); }
    void Deallocate(void* ptr, size_t bytes) override { block->DeallocateSlot(index, ptr, bytes); }
    size_t BytesInUse() const override { return block->base_->BytesInUse(); }

    BucketBlock* block = nullptr;
    int index = 0;
    std::string name;
  };

  BucketBlock(const std::string& name, const std::vector<size_t>& sizes, std::vector<size_t> offsets, size_t bytes,
              char* data, Allocator* base, Allocator* memory)
      : sizes_(sizes), offsets_(std::move(offsets)), bytes_(bytes), data_(data), base_(base), memory_(memory),
        slots_(sizes.size()), taken_(new std::atomic<bool>[sizes.size()]) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      slots_[i].block = this;
      slots_[i].index = static_cast<int>(i);
      slots_[i].name = "bucket " + name + " input " + std::to_string(i);
      taken_[i].store(false, std::memory_order_relaxed);
    }
  }
  ~BucketBlock() { memory_->Deallocate(data_, bytes_); }

  // Every buffer of a slot, served or not, holds a reference: the slot is
  // its allocator until it is freed.
  void* AllocateSlot(int i, size_t bytes) {
    Ref();
    const size_t k = static_cast<size_t>(i);
    if (bytes > 0 && bytes == sizes_[k] && !retired_.load(std::memory_order_acquire) &&
        !taken_[k].exchange(true, std::memory_order_acq_rel)) {
      // Retired meanwhile (a failed call may still write here): not served.
      if (!retired_.load(std::memory_order_acquire)) return data_ + offsets_[k];
      taken_[k].store(false, std::memory_order_release);
    }
    void* p = base_->Allocate(bytes);
    if (p == nullptr) Unref();
    return p;
  }
  void DeallocateSlot(int i, void* ptr, size_t bytes) {
    const size_t k = static_cast<size_t>(i);
    if (bytes > 0 && ptr == data_ + offsets_[k]) {
      taken_[k].store(false, std::memory_order_release);
    } else {
      base_->Deallocate(ptr, bytes);  // never inside the block: it is alive, so base_ handed it out
    }
    Unref();  // may delete this (and the slot running this): nothing after it
  }

  const std::vector<size_t> sizes_, offsets_;
  const size_t bytes_;
  char* const data_;
  Allocator* const base_;    // requests a slot does not serve
  Allocator* const memory_;  // the block's own
  std::vector<Slot> slots_;
  std::unique_ptr<std::atomic<bool>[]> taken_;
  std::atomic<int64_t> refs_{1};
  std::atomic<bool> retired_{false};
};

// Input i at a 64-byte aligned offset, end to end; the message's bytes.
size_t BucketLender::LayoutOf(const std::vector<size_t>& sizes, std::vector<size_t>* offsets) {
  offsets->assign(sizes.size(), 0);
  size_t end = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    (*offsets)[i] = (end + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    end = (*offsets)[i] + sizes[i];
  }
  return end;
}

BucketLender::BucketLender(std::string name) : name_(std::move(name)) {}

BucketLender::~BucketLender() {
  std::lock_guard<std::mutex> lock(mu_);
  if (current_ != nullptr) current_->Unref();
  for (BucketBlock* b : retired_) b->Unref();
}

void BucketLender::RetireCurrent() {
  if (current_ == nullptr) return;
  current_->Retire();
  retired_.push_back(current_);  // producers may still hold its slots' pointers
  current_ = nullptr;
}

void BucketLender::Observe(const std::vector<size_t>& bytes, size_t element_bytes, Allocator* base,
                           Allocator* block_memory) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || (!sizes_.empty() && bytes == sizes_ && element_bytes == element_bytes_)) return;
  // Decided by the sizes alone, alike on every rank.
  RetireCurrent();
  sizes_.clear();
  offsets_.clear();
  bool lendable = element_bytes > 0 && kTensorAlignment % element_bytes == 0 && !bytes.empty();
  for (size_t b : bytes) lendable = lendable && b % element_bytes == 0;
  if (!lendable || layouts_ >= kMaxLayouts) {
    stopped_ = true;
    return;
  }
  ++layouts_;
  sizes_ = bytes;
  element_bytes_ = element_bytes;
  total_ = LayoutOf(sizes_, &offsets_);
  // This rank's block (none after a failure, or without memory for it).
  if (!failed_) current_ = BucketBlock::Create(name_, sizes_, offsets_, total_, base, block_memory);
}

bool BucketLender::Layout(const std::vector<size_t>& bytes, std::vector<size_t>* offsets, size_t* total) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (sizes_.empty() || bytes != sizes_) return false;
  *offsets = offsets_;
  *total = total_;
  return true;
}

Allocator* BucketLender::SlotAllocator(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (current_ == nullptr || i < 0 || static_cast<size_t>(i) >= sizes_.size()) return nullptr;
  return current_->slot(i);
}

BucketLender::InPlace BucketLender::Contiguous(const std::vector<const Tensor*>& inputs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (current_ == nullptr || inputs.size() != sizes_.size()) return {};
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k]->TotalBytes() != sizes_[k]) return {};
    if (sizes_[k] == 0) continue;  // nothing of it is read or written
    const int i = static_cast<int>(k);
    // Counted through a copy: taking a reference is an acquiring update of
    // the count, so whatever another reader did with the buffer before
    // letting it go happens before the reduction writes it (use_count()
    // alone is a relaxed load).
    const std::shared_ptr<TensorBuffer> buffer = inputs[k]->buffer();
    if (buffer == nullptr || buffer.use_count() != 2 || buffer->allocator() != current_->slot(i) ||
        buffer->data() != current_->data() + current_->offset(i)) {
      return {};
    }
  }
  BucketBlock* block = current_;
  block->Ref();
  InPlace in_place;
  in_place.data = block->data();
  in_place.count = static_cast<int64_t>(block->bytes() / element_bytes_);
  in_place.keep = std::shared_ptr<void>(block->data(), [block](void*) { block->Unref(); });
  return in_place;
}

void BucketLender::Failed() {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = true;
  RetireCurrent();
}

int BucketLender::layouts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return layouts_;
}

bool BucketLender::lending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_ != nullptr;
}

}  // namespace tw::dist::internal
