#include "towerflow/runtime/arena_layout.h"

#include <algorithm>
#include <numeric>

#include "towerflow/core/allocator.h"
#include "towerflow/core/logging.h"

namespace tw {

PlanOrder::PlanOrder(const std::vector<std::vector<int>>& successors)
    : n_(static_cast<int>(successors.size())), words_((successors.size() + 63) / 64) {
  reach_.assign(successors.size() * words_, 0);
  // Kahn's order, then rows filled from the last item back: a row is its
  // successors' rows plus the successors themselves.
  std::vector<int> indegree(successors.size(), 0);
  for (const auto& succ : successors) {
    for (int s : succ) ++indegree[static_cast<size_t>(s)];
  }
  std::vector<int> order;
  order.reserve(successors.size());
  for (int i = 0; i < n_; ++i) {
    if (indegree[static_cast<size_t>(i)] == 0) order.push_back(i);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (int s : successors[static_cast<size_t>(order[k])]) {
      if (--indegree[static_cast<size_t>(s)] == 0) order.push_back(s);
    }
  }
  TW_CHECK(order.size() == successors.size()) << "PlanOrder: the plan's items form a cycle";
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    uint64_t* row = &reach_[static_cast<size_t>(*it) * words_];
    for (int s : successors[static_cast<size_t>(*it)]) {
      row[static_cast<size_t>(s) / 64] |= uint64_t{1} << (s % 64);
      const uint64_t* srow = &reach_[static_cast<size_t>(s) * words_];
      for (size_t w = 0; w < words_; ++w) row[w] |= srow[w];
    }
  }
}

PlanOrder PlanOrder::Chain(int n) {
  PlanOrder order;
  order.chain_ = true;
  order.n_ = n;
  return order;
}

namespace {

// Every reader of `a`, and its producer, precede b's producer.
bool DeadBefore(const ArenaBuffer& a, const ArenaBuffer& b, const PlanOrder& order) {
  if (!order.Precedes(a.producer, b.producer)) return false;
  for (int r : a.readers) {
    if (!order.Precedes(r, b.producer)) return false;
  }
  return true;
}

size_t Aligned(size_t bytes) { return (std::max<size_t>(bytes, 1) + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment; }

}  // namespace

bool Disjoint(const ArenaBuffer& a, const ArenaBuffer& b, const PlanOrder& order) {
  return DeadBefore(a, b, order) || DeadBefore(b, a, order);
}

ArenaLayout PlanArena(const std::vector<ArenaBuffer>& buffers, const PlanOrder& order) {
  const size_t n = buffers.size();
  ArenaLayout layout;
  layout.offsets.assign(n, 0);
  layout.overlaps.assign(n, {});
  std::vector<int> by_size(n);
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](int a, int b) { return buffers[static_cast<size_t>(a)].bytes > buffers[static_cast<size_t>(b)].bytes; });
  std::vector<int> placed;
  std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of the conflicting buffers placed so far
  for (int b : by_size) {
    const ArenaBuffer& buf = buffers[static_cast<size_t>(b)];
    const size_t size = Aligned(buf.bytes);
    taken.clear();
    for (int p : placed) {
      if (Disjoint(buf, buffers[static_cast<size_t>(p)], order)) continue;
      const size_t begin = layout.offsets[static_cast<size_t>(p)];
      taken.emplace_back(begin, begin + Aligned(buffers[static_cast<size_t>(p)].bytes));
    }
    std::sort(taken.begin(), taken.end());
    // The lowest gap that fits.
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + size) break;
      offset = std::max(offset, end);
    }
    layout.offsets[static_cast<size_t>(b)] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + size);
    // The buffers already placed over these bytes (each disjoint in time).
    for (int p : placed) {
      const size_t begin = layout.offsets[static_cast<size_t>(p)];
      const size_t end = begin + Aligned(buffers[static_cast<size_t>(p)].bytes);
      if (begin < offset + size && offset < end) {
        layout.overlaps[static_cast<size_t>(b)].push_back(p);
        layout.overlaps[static_cast<size_t>(p)].push_back(b);
      }
    }
    placed.push_back(b);
  }
  return layout;
}

}  // namespace tw
