// Step arenas: a plan whose buffers have the same sizes step after step gets
// them from one block of memory per allocator, at offsets planned once from
// their lifetimes (arena_layout.h), instead of one allocator call per output
// and temporary (on a GPU, a cudaMallocAsync and a cudaFreeAsync each).
//
// How a plan's steps use it (ArenaPool, one per plan; StepArena, one per step):
//   - Recording: a step's kernels allocate from their device's allocator as
//     usual, through a per-item view that notes each allocation (the k-th
//     allocation of item i, its size) and which of the step's entries hold
//     each buffer (an Identity or Reshape shares its input's). A buffer that
//     is fetched, or still alive when the step ends (enqueued in a queue,
//     assigned to a variable), escapes the step and stays with the allocator.
//   - Two recordings with the same sizes fix the layout: every other buffer
//     gets an offset, from its producer's start to its last reader's end.
//     Plans whose sizes change keep allocating (kMaxRecordings tries).
//   - Serving: a step takes a block per allocator (reused from the pool when
//     free) and the k-th allocation of item i gets its planned bytes when the
//     size fits and every buffer planned over the same bytes is dead; any
//     other request (a size that changed, a buffer kept past its planned end)
//     goes to the allocator, so a kernel never sees bytes another one holds.
//     The block goes back to the pool when the last buffer in it dies.
// Arena buffers are never forwarded to outputs in place (their allocator is
// the item's view, which no other item's output uses), so lifetimes do not
// depend on the order threads run the step.
//
// On a GPU, a buffer's bytes are reused by work queued after its readers on
// the same compute stream, as with the stream-ordered allocator. Thread-safe.
#ifndef TOWERFLOW_RUNTIME_STEP_ARENA_H_
#define TOWERFLOW_RUNTIME_STEP_ARENA_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/core/allocator.h"
#include "towerflow/runtime/plan.h"

namespace tw {

class StepArena;

// One allocation a recording step saw: the k-th of its item.
struct ArenaRecord {
  size_t bytes = 0;
  void* data = nullptr;
  bool alive = false;        // not freed yet
  std::vector<int> entries;  // the step's entries that held the buffer
};

// What a plan's arena did, for tests, benchmarks and traces.
struct ArenaStats {
  int64_t recordings = 0;       // steps that recorded allocations
  int64_t served_steps = 0;     // steps that ran with a layout
  int64_t arena_allocations = 0;
  int64_t fallbacks = 0;        // planned requests a served step sent to the allocator
  int64_t unplanned_allocations = 0;  // requests for buffers that escape (fetched, kept)
  int64_t planned_buffers = 0;  // buffers in the layout
  int64_t escaped_buffers = 0;  // recorded buffers left to the allocator
  int64_t arena_bytes = 0;      // the layout's blocks, summed over allocators
  int64_t planned_bytes = 0;    // the planned buffers' sizes, summed
  bool gave_up = false;         // kMaxRecordings recordings, no two alike in a row
};

class ArenaPool : public std::enable_shared_from_this<ArenaPool> {
 public:
  static constexpr int kMaxRecordings = 4;

  // `plan` must outlive every step of it (the session keeps its plans); its
  // items must be final. Items served: kernels (not transfers) that do not
  // block, on any device, or with `device_memory_only` on devices without
  // host memory (GPUs) only.
  ArenaPool(const ExecutorPlan* plan, bool device_memory_only);
  ~ArenaPool();
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  // The arena of a new step of the plan; the step calls End() when done.
  StepArena* BeginStep();
  // Whether any item of the plan is served (else the plan needs no pool).
  bool serves_any() const;
  ArenaStats stats() const;

 private:
  friend class StepArena;
  struct Layout;
  struct Block {
    Allocator* allocator;
    void* data;
    size_t bytes;
  };
  // A recording step ended: compare, and maybe fix the layout.
  void FinishRecording(StepArena* step);
  // A block back from a step whose buffers are all dead.
  void ReturnBlocks(std::vector<Block> blocks);
  // The layout of the buffers a step recorded (per item, in allocation
  // order), each item's allocations coming from bases[item]. REQUIRES: mu_.
  std::shared_ptr<const Layout> BuildLayout(const std::vector<std::vector<ArenaRecord>>& records,
                                            const std::vector<Allocator*>& bases);

  const ExecutorPlan* plan_;
  std::vector<char> served_;  // per item
  mutable std::mutex mu_;
  std::shared_ptr<const Layout> layout_;            // guarded by mu_; null until fixed
  std::vector<std::vector<size_t>> last_sizes_;     // guarded by mu_; per item, the last recording's sizes
  std::vector<Block> free_;                         // guarded by mu_
  ArenaStats stats_;                                // guarded by mu_
  std::atomic<int64_t> arena_allocations_{0};
  std::atomic<int64_t> fallbacks_{0};
  std::atomic<int64_t> unplanned_{0};
};

// One step's view of its plan's arena. The executor asks it for the
// allocator of each item's kernel and tells it what the item's outputs hold.
class StepArena {
 public:
  // The allocator item `item`'s kernel allocates its device-memory outputs and
  // temporaries from in this step (a view of its device's allocator).
  Allocator* ItemAllocator(int item);
  // `item` stored `value` in entry `entry` (while recording: notes which
  // buffer the entry holds). Thread-safe for distinct items.
  void NoteEntry(int entry, const Tensor& value);
  bool recording() const { return layout_ == nullptr; }
  // `item`'s kernel declined to run (it would have waited) and freed what it
  // allocated: its next try allocates from the start again.
  void RestartItem(int item);
  // The step is done and has dropped its entries: what it recorded counts
  // when `ok`. The arena lives on until its last buffer dies.
  void End(bool ok);

 private:
  friend class ArenaPool;
  class View;
  StepArena(std::shared_ptr<ArenaPool> pool, std::shared_ptr<const ArenaPool::Layout> layout,
            std::vector<ArenaPool::Block> blocks);
  ~StepArena();
  void* Allocate(int item, size_t bytes);
  void Deallocate(int item, void* ptr, size_t bytes);
  void Unref();

  std::shared_ptr<ArenaPool> pool_;
  std::shared_ptr<const ArenaPool::Layout> layout_;  // null: recording
  std::vector<ArenaPool::Block> blocks_;              // per allocator of the layout
  std::unique_ptr<View[]> views_;                     // per item
  std::unique_ptr<std::atomic<uint8_t>[]> alive_;     // per planned buffer
  std::atomic<int64_t> refs_{1};                      // the step + live buffers
  bool ok_ = false;
  // Recording only:
  std::mutex mu_;
  std::vector<std::vector<ArenaRecord>> records_;          // guarded by mu_; per item, in allocation order
  std::map<const void*, std::pair<int, int>> by_data_;  // guarded by mu_; data -> (item, k)
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_STEP_ARENA_H_
