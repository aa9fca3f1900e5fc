// ArenaLayout: where each of a step's buffers lives inside one block of memory
// per allocator, computed once from the buffers' sizes and lifetimes (the
// offline planning that TFLite's arena planner and XLA's heap simulator do).
//
// A buffer is live from the start of the item that allocates it until every
// item that reads it has run. Two buffers may share bytes only when one is
// dead before the other is born in every order the step may run its items:
// each reader of the first (and its producer) precedes the producer of the
// second in the plan's dependency graph (PlanOrder). Placement is greedy by
// size, largest first, each at the lowest offset that overlaps no buffer it
// conflicts with; offsets are multiples of kTensorAlignment.
//
// Pure computation over plain values; thread-compatible.
#ifndef TOWERFLOW_RUNTIME_ARENA_LAYOUT_H_
#define TOWERFLOW_RUNTIME_ARENA_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tw {

// Which items of a plan precede which: item a precedes b when a path of
// successor edges leads from a to b (so b starts only after a has finished).
class PlanOrder {
 public:
  // successors[i]: the items that wait for item i (one entry per edge, as
  // ExecutorPlan::Item::successors). The graph must be acyclic.
  explicit PlanOrder(const std::vector<std::vector<int>>& successors);
  // Items 0..n-1 in one chain (a precedes b when a < b), without a table: a
  // sequence of events, such as a step graph's requests (capture_memory.h).
  static PlanOrder Chain(int n);
  // True when a path leads from `a` to `b` (a != b).
  bool Precedes(int a, int b) const {
    if (chain_) return a < b;
    return (reach_[static_cast<size_t>(a) * words_ + static_cast<size_t>(b) / 64] >> (b % 64)) & 1;
  }
  int size() const { return n_; }

 private:
  PlanOrder() = default;
  bool chain_ = false;
  int n_ = 0;
  size_t words_ = 0;
  std::vector<uint64_t> reach_;  // row a: the items a precedes
};

struct ArenaBuffer {
  size_t bytes = 0;
  int producer = 0;           // the item that allocates it
  std::vector<int> readers;   // the items that read it (possibly none: a temp)
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // per buffer
  size_t total_bytes = 0;       // the block's size
  // For each buffer, the buffers placed over some of its bytes (never live
  // at the same time as it in a correct run).
  std::vector<std::vector<int>> overlaps;
};

// True when `a` is dead before `b` is born, or `b` before `a`, in every run.
bool Disjoint(const ArenaBuffer& a, const ArenaBuffer& b, const PlanOrder& order);

ArenaLayout PlanArena(const std::vector<ArenaBuffer>& buffers, const PlanOrder& order);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_ARENA_LAYOUT_H_
