// A gradient bucket's tensors made end to end in one block, so that its
// all-reduce (ProcessAllReduce's CPU kernel, collective_kernels.cc) reduces
// them where they are, with no pack into a call buffer and no copy of the
// result out of it: TF's scoped allocator, PyTorch DDP's gradients as bucket
// views.
//
// How a bucket's kernel uses it (BucketLender, one per kernel):
//   - Each run, the kernel tells it its inputs' sizes (Observe). The first
//     run fixes a layout: input i at a 64-byte aligned offset, the gaps
//     zero-filled, and a block of that layout. Sizes that change make a new
//     layout (at most kMaxLayouts; after that, none: nothing is lent again).
//   - The layout, which depends on the sizes alone, is the same on every
//     rank at every step; the block, and whether a step's inputs are in it,
//     are this rank's. So every rank sends MPI the layout's message (the
//     gaps included) whether it reduces its block in place or packs its
//     inputs into a buffer of the layout (Layout): the ranks' calls always
//     have one length, and each element one place.
//   - The executor asks it, for each input's producer as it runs, for the
//     allocator of that input (SlotAllocator, through
//     OpKernel::InputAllocator): the block's slot i. A slot serves one
//     buffer of its planned size at a time; any other request (another size,
//     the slot still held by an earlier step's tensor, a retired block) goes
//     to the device's allocator, so a producer never sees bytes another
//     tensor holds.
//   - At the kernel's run, InPlace says whether every input is its slot of
//     the current block and held by the kernel alone (nothing else reads the
//     local gradient the reduction writes over): then the whole block,
//     gaps included, is reduced in place, and the outputs are the inputs.
//     Otherwise the kernel packs, as without a lender.
//   - A failed in-place reduction retires the block (MPI may still write
//     there): its memory lives until the call and every tensor in it are
//     gone, and it is never lent again; nor is any later block.
// Blocks are reference-counted by the lender, each live buffer of a slot
// (served or sent to the device's allocator: the slot is its allocator) and
// each in-place call, and freed with the last. Thread-safe.
#ifndef TOWERFLOW_DIST_INTERNAL_BUCKET_BUFFER_H_
#define TOWERFLOW_DIST_INTERNAL_BUCKET_BUFFER_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/core/allocator.h"
#include "towerflow/core/tensor.h"

namespace tw::dist::internal {

class BucketBlock;

class BucketLender {
 public:
  static constexpr int kMaxLayouts = 4;

  // `name` names the slots' allocators ("bucket <name> input i").
  explicit BucketLender(std::string name);
  ~BucketLender();
  BucketLender(const BucketLender&) = delete;
  BucketLender& operator=(const BucketLender&) = delete;

  // After a run whose inputs held `bytes` each (elements of `element_bytes`),
  // requests sent to `base` (the kernel's device's allocator): keeps the
  // layout, or makes a new one and its block (no memory for the block: the
  // layout stays, and this rank packs by it). `block_memory`, when given,
  // provides the block instead of `base` (a shared bucket's memory,
  // World::SharedBucket); it must outlive every block.
  void Observe(const std::vector<size_t>& bytes, size_t element_bytes, Allocator* base,
               Allocator* block_memory = nullptr);

  // The layout of inputs of `bytes`, as Observe makes it: each input's
  // offset (64-byte aligned, end to end) and the message's bytes.
  static size_t LayoutOf(const std::vector<size_t>& bytes, std::vector<size_t>* offsets);

  // The current layout when it is the layout of inputs of `bytes`: each
  // input's offset and the message's bytes (gaps included). False before the
  // first Observe, for other sizes, and once layouts stopped.
  bool Layout(const std::vector<size_t>& bytes, std::vector<size_t>* offsets, size_t* total) const;

  // Input i's allocator for a producer about to run; null before the first
  // Observe, past the inputs, or once lending stopped. Valid as long as the
  // lender lives and any buffer it served does.
  Allocator* SlotAllocator(int i);

  // The block of `inputs` when each is its slot of the current block at its
  // planned size, held by its caller alone: its data, its elements (`count`,
  // gaps included, of `element_bytes` each) and a hold on its memory for
  // World::AllReduceInPlace. Null data otherwise.
  struct InPlace {
    void* data = nullptr;
    int64_t count = 0;
    std::shared_ptr<void> keep;
  };
  InPlace Contiguous(const std::vector<const Tensor*>& inputs);

  // An in-place reduction failed (MPI may still write into its block): the
  // block is retired and nothing is lent any more (the layout stays).
  void Failed();

  // For tests: layouts made so far, and whether slots are being lent.
  int layouts() const;
  bool lending() const;

 private:
  void RetireCurrent();  // REQUIRES: mu_

  const std::string name_;
  mutable std::mutex mu_;
  // The layout (guarded by mu_): empty sizes_ for none.
  std::vector<size_t> sizes_, offsets_;
  size_t total_ = 0;
  size_t element_bytes_ = 0;
  int layouts_ = 0;
  bool stopped_ = false;  // no layout ever again
  // This rank's block of the layout (guarded by mu_).
  BucketBlock* current_ = nullptr;     // one reference held; null: nothing lent
  std::vector<BucketBlock*> retired_;  // one reference each (SlotAllocator's pointers stay valid)
  bool failed_ = false;                // nothing lent ever again
};

}  // namespace tw::dist::internal

#endif  // TOWERFLOW_DIST_INTERNAL_BUCKET_BUFFER_H_
