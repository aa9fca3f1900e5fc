#include "towerflow/runtime/step_arena.h"

#include <algorithm>
#include <set>

#include "towerflow/device/device.h"
#include "towerflow/runtime/arena_layout.h"

namespace tw {

// The fixed layout of a plan's buffers.
struct ArenaPool::Layout {
  std::vector<Allocator*> allocators;          // one block each
  std::vector<size_t> block_bytes;             // per allocator
  std::vector<int> item_allocator;             // per item: index into allocators
  std::vector<std::vector<int>> slots;         // per item, per allocation: buffer, or -1 (the allocator's)
  std::vector<size_t> bytes;                   // per buffer
  std::vector<size_t> offsets;                 // per buffer, in its allocator's block
  std::vector<int> allocator_of;               // per buffer
  std::vector<std::vector<int>> overlaps;      // per buffer: buffers planned over some of its bytes
};

// An item's allocator for one step: every allocation and free goes through
// the step's arena, which serves it or passes it to `base`.
class StepArena::View final : public Allocator {
 public:
  View() = default;
  void Init(StepArena* arena, int item, Allocator* base) {
    arena_ = arena;
    item_ = item;
    base_ = base;
  }
  std::string Name() const override { return base_->Name(); }
  void* Allocate(size_t bytes) override { return arena_->Allocate(item_, bytes); }
  void Deallocate(void* ptr, size_t bytes) override { arena_->Deallocate(item_, ptr, bytes); }
  size_t BytesInUse() const override { return base_->BytesInUse(); }

  Allocator* base() const { return base_; }
  std::atomic<int> next{0};  // this step's allocations so far

 private:
  StepArena* arena_ = nullptr;
  int item_ = 0;
  Allocator* base_ = nullptr;
};

// ---- ArenaPool

ArenaPool::ArenaPool(const ExecutorPlan* plan, bool device_memory_only) : plan_(plan) {
  served_.reserve(plan->items.size());
  for (const ExecutorPlan::Item& item : plan->items) {
    // A step graph's item keeps its own buffers (step_graph.h).
    served_.push_back(!item.is_transfer() && item.kernel != nullptr && !item.kernel->MayBlock() &&
                      item.region == nullptr && !item.absorbed &&
                      (!device_memory_only || !item.device->host_memory()));
  }
}

bool ArenaPool::serves_any() const { return std::find(served_.begin(), served_.end(), 1) != served_.end(); }

ArenaPool::~ArenaPool() {
  for (const Block& b : free_) b.allocator->Deallocate(b.data, b.bytes);
}

StepArena* ArenaPool::BeginStep() {
  std::shared_ptr<const Layout> layout;
  std::vector<Block> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (layout_ == nullptr) {
      if (stats_.gave_up) return nullptr;
    } else {
      layout = layout_;
      for (size_t a = 0; a < layout->allocators.size(); ++a) {
        auto it = std::find_if(free_.begin(), free_.end(), [&](const Block& b) {
          return b.allocator == layout->allocators[a] && b.bytes == layout->block_bytes[a];
        });
        if (it != free_.end()) {
          blocks.push_back(*it);
          free_.erase(it);
        } else {
          blocks.push_back(Block{layout->allocators[a], nullptr, layout->block_bytes[a]});
        }
      }
    }
  }
  for (size_t a = 0; a < blocks.size(); ++a) {
    if (blocks[a].data != nullptr) continue;
    blocks[a].data = blocks[a].allocator->Allocate(blocks[a].bytes);
    if (blocks[a].data == nullptr) {
      // Out of memory for a block: this step allocates as it would without.
      blocks.erase(std::remove_if(blocks.begin(), blocks.end(), [](const Block& b) { return b.data == nullptr; }),
                   blocks.end());
      ReturnBlocks(std::move(blocks));
      return nullptr;
    }
  }
  if (layout != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.served_steps;
  }
  return new StepArena(shared_from_this(), std::move(layout), std::move(blocks));
}

ArenaStats ArenaPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ArenaStats s = stats_;
  s.arena_allocations = arena_allocations_.load(std::memory_order_relaxed);
  s.fallbacks = fallbacks_.load(std::memory_order_relaxed);
  s.unplanned_allocations = unplanned_.load(std::memory_order_relaxed);
  return s;
}

void ArenaPool::ReturnBlocks(std::vector<Block> blocks) {
  // A few blocks per allocator stay for the steps that run at once (queue
  // runners share a plan); the rest go back.
  constexpr size_t kKeep = 8;
  std::vector<Block> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Block& b : blocks) {
      const bool current =
          layout_ != nullptr && std::any_of(layout_->allocators.begin(), layout_->allocators.end(),
                                            [&](Allocator* a) { return a == b.allocator; });
      if (current && free_.size() < kKeep * layout_->allocators.size()) {
        free_.push_back(b);
      } else {
        release.push_back(b);
      }
    }
  }
  for (const Block& b : release) b.allocator->Deallocate(b.data, b.bytes);
}

void ArenaPool::FinishRecording(StepArena* step) {
  // A snapshot: buffers that escaped the step may die on other threads meanwhile.
  std::vector<std::vector<ArenaRecord>> records;
  {
    std::lock_guard<std::mutex> lock(step->mu_);
    records = step->records_;
  }
  std::vector<Allocator*> bases;
  for (size_t i = 0; i < records.size(); ++i) bases.push_back(step->views_[i].base());
  std::vector<std::vector<size_t>> sizes(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    for (const ArenaRecord& r : records[i]) sizes[i].push_back(r.bytes);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.recordings;
  if (layout_ != nullptr || stats_.gave_up) return;
  if (sizes == last_sizes_) {
    // The second recording with these sizes: the plan's shapes are settled.
    layout_ = BuildLayout(records, bases);
    return;
  }
  last_sizes_ = std::move(sizes);
  if (stats_.recordings >= kMaxRecordings) stats_.gave_up = true;
}

std::shared_ptr<const ArenaPool::Layout> ArenaPool::BuildLayout(const std::vector<std::vector<ArenaRecord>>& records,
                                                                const std::vector<Allocator*>& bases) {
  const auto& items = plan_->items;
  std::vector<std::vector<int>> readers(static_cast<size_t>(plan_->num_entries));
  std::vector<std::vector<int>> successors(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    for (const ExecutorPlan::Input& in : items[i].inputs) {
      if (in.entry >= 0) readers[static_cast<size_t>(in.entry)].push_back(static_cast<int>(i));
    }
    successors[i] = items[i].successors;
  }
  std::set<int> fetched;
  for (const ExecutorPlan::Input& f : plan_->fetches) {
    if (f.entry >= 0) fetched.insert(f.entry);
  }
  auto layout = std::make_shared<Layout>();
  layout->item_allocator.assign(items.size(), -1);
  layout->slots.resize(items.size());
  std::vector<std::vector<ArenaBuffer>> per_allocator;
  std::vector<std::vector<int>> ids;  // per allocator: buffer ids in per_allocator's order
  for (size_t i = 0; i < items.size(); ++i) {
    if (records[i].empty()) continue;
    Allocator* base = bases[i];
    auto found = std::find(layout->allocators.begin(), layout->allocators.end(), base);
    const int a = static_cast<int>(found - layout->allocators.begin());
    if (found == layout->allocators.end()) {
      layout->allocators.push_back(base);
      per_allocator.emplace_back();
      ids.emplace_back();
    }
    layout->item_allocator[i] = a;
    for (const ArenaRecord& r : records[i]) {
      bool escapes = r.alive || r.data == nullptr;
      ArenaBuffer buffer;
      buffer.bytes = r.bytes;
      buffer.producer = static_cast<int>(i);
      for (int e : r.entries) {
        escapes = escapes || fetched.count(e) > 0;
        const auto& rs = readers[static_cast<size_t>(e)];
        buffer.readers.insert(buffer.readers.end(), rs.begin(), rs.end());
      }
      if (escapes) {
        layout->slots[i].push_back(-1);
        ++stats_.escaped_buffers;
        continue;
      }
      const int id = static_cast<int>(layout->bytes.size());
      layout->slots[i].push_back(id);
      layout->bytes.push_back(r.bytes);
      layout->allocator_of.push_back(a);
      per_allocator[static_cast<size_t>(a)].push_back(std::move(buffer));
      ids[static_cast<size_t>(a)].push_back(id);
    }
  }
  const PlanOrder order(successors);
  layout->offsets.assign(layout->bytes.size(), 0);
  layout->overlaps.assign(layout->bytes.size(), {});
  for (size_t a = 0; a < per_allocator.size(); ++a) {
    const ArenaLayout planned = PlanArena(per_allocator[a], order);
    layout->block_bytes.push_back(planned.total_bytes);
    for (size_t k = 0; k < ids[a].size(); ++k) {
      const int id = ids[a][k];
      layout->offsets[static_cast<size_t>(id)] = planned.offsets[k];
      for (int other : planned.overlaps[k]) layout->overlaps[static_cast<size_t>(id)].push_back(ids[a][static_cast<size_t>(other)]);
    }
    stats_.arena_bytes += static_cast<int64_t>(planned.total_bytes);
  }
  stats_.planned_buffers = static_cast<int64_t>(layout->bytes.size());
  for (size_t b : layout->bytes) stats_.planned_bytes += static_cast<int64_t>(b);
  return layout;
}

// ---- StepArena

StepArena::StepArena(std::shared_ptr<ArenaPool> pool, std::shared_ptr<const ArenaPool::Layout> layout,
                     std::vector<ArenaPool::Block> blocks)
    : pool_(std::move(pool)), layout_(std::move(layout)), blocks_(std::move(blocks)) {
  const auto& items = pool_->plan_->items;
  views_.reset(new View[items.size()]);
  for (size_t i = 0; i < items.size(); ++i) views_[i].Init(this, static_cast<int>(i), items[i].device->allocator());
  if (layout_ != nullptr) {
    alive_.reset(new std::atomic<uint8_t>[layout_->bytes.size()]);
    for (size_t b = 0; b < layout_->bytes.size(); ++b) alive_[b].store(0, std::memory_order_relaxed);
  } else {
    records_.resize(items.size());
  }
}

StepArena::~StepArena() = default;

Allocator* StepArena::ItemAllocator(int item) {
  return pool_->served_[static_cast<size_t>(item)] ? &views_[static_cast<size_t>(item)] : nullptr;
}

void* StepArena::Allocate(int item, size_t bytes) {
  View& view = views_[static_cast<size_t>(item)];
  const int k = view.next.fetch_add(1, std::memory_order_relaxed);
  if (layout_ != nullptr) {
    const auto& slots = layout_->slots[static_cast<size_t>(item)];
    const int b = k < static_cast<int>(slots.size()) ? slots[static_cast<size_t>(k)] : -2;
    if (b == -1) {
      pool_->unplanned_.fetch_add(1, std::memory_order_relaxed);  // escapes the step: the allocator's
    } else if (b >= 0 && bytes <= layout_->bytes[static_cast<size_t>(b)]) {
      bool free = true;
      for (int other : layout_->overlaps[static_cast<size_t>(b)]) {
        if (alive_[static_cast<size_t>(other)].load(std::memory_order_acquire)) {
          free = false;  // kept past its planned end (a queue, a variable): not these bytes
          break;
        }
      }
      if (free && !alive_[static_cast<size_t>(b)].load(std::memory_order_acquire)) {
        alive_[static_cast<size_t>(b)].store(1, std::memory_order_release);
        refs_.fetch_add(1, std::memory_order_relaxed);
        pool_->arena_allocations_.fetch_add(1, std::memory_order_relaxed);
        const ArenaPool::Block& block = blocks_[static_cast<size_t>(layout_->allocator_of[static_cast<size_t>(b)])];
        return static_cast<char*>(block.data) + layout_->offsets[static_cast<size_t>(b)];
      }
    }
    if (b != -1) pool_->fallbacks_.fetch_add(1, std::memory_order_relaxed);
  }
  void* ptr = view.base()->Allocate(bytes);
  if (layout_ == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& records = records_[static_cast<size_t>(item)];
    if (records.size() <= static_cast<size_t>(k)) records.resize(static_cast<size_t>(k) + 1);
    records[static_cast<size_t>(k)] = ArenaRecord{bytes, ptr, ptr != nullptr, {}};
    if (ptr != nullptr) by_data_[ptr] = {item, k};
  }
  if (ptr != nullptr) refs_.fetch_add(1, std::memory_order_relaxed);
  return ptr;
}

void StepArena::Deallocate(int item, void* ptr, size_t bytes) {
  if (layout_ != nullptr) {
    const int a = layout_->item_allocator[static_cast<size_t>(item)];
    if (a >= 0) {
      char* base = static_cast<char*>(blocks_[static_cast<size_t>(a)].data);
      if (ptr >= base && ptr < base + blocks_[static_cast<size_t>(a)].bytes) {
        for (int b : layout_->slots[static_cast<size_t>(item)]) {
          if (b >= 0 && base + layout_->offsets[static_cast<size_t>(b)] == ptr &&
              alive_[static_cast<size_t>(b)].load(std::memory_order_relaxed)) {
            alive_[static_cast<size_t>(b)].store(0, std::memory_order_release);
            break;
          }
        }
        return Unref();
      }
    }
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_data_.find(ptr);
    if (it != by_data_.end()) {
      records_[static_cast<size_t>(it->second.first)][static_cast<size_t>(it->second.second)].alive = false;
      by_data_.erase(it);
    }
  }
  views_[static_cast<size_t>(item)].base()->Deallocate(ptr, bytes);
  Unref();
}

void StepArena::NoteEntry(int entry, const Tensor& value) {
  if (layout_ != nullptr || !value.buffer()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_data_.find(value.raw_data());
  if (it == by_data_.end()) return;
  records_[static_cast<size_t>(it->second.first)][static_cast<size_t>(it->second.second)].entries.push_back(entry);
}

void StepArena::RestartItem(int item) {
  views_[static_cast<size_t>(item)].next.store(0, std::memory_order_relaxed);
  if (layout_ != nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  records_[static_cast<size_t>(item)].clear();
}

void StepArena::End(bool ok) {
  ok_ = ok;
  if (layout_ == nullptr && ok) pool_->FinishRecording(this);
  Unref();
}

void StepArena::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (!blocks_.empty()) pool_->ReturnBlocks(std::move(blocks_));
  delete this;
}

}  // namespace tw
