// Arena layouts (arena_layout.h): the order of a plan's items, and offsets
// that never let two buffers live in the same bytes at the same time, on
// hand-made plans and on random ones.
#include "towerflow/runtime/arena_layout.h"

#include <gtest/gtest.h>

#include <random>

#include "towerflow/core/allocator.h"

namespace tw {
namespace {

size_t End(const ArenaLayout& layout, const std::vector<ArenaBuffer>& buffers, size_t b) {
  return layout.offsets[b] + (buffers[b].bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

// Every pair of buffers that may be alive together has bytes of its own;
// offsets are aligned, inside the block, and `overlaps` lists exactly the
// pairs that share bytes.
void ExpectValid(const ArenaLayout& layout, const std::vector<ArenaBuffer>& buffers, const PlanOrder& order) {
  for (size_t a = 0; a < buffers.size(); ++a) {
    EXPECT_EQ(layout.offsets[a] % kTensorAlignment, 0u);
    EXPECT_LE(End(layout, buffers, a), layout.total_bytes);
    for (size_t b = a + 1; b < buffers.size(); ++b) {
      const bool share = layout.offsets[a] < End(layout, buffers, b) && layout.offsets[b] < End(layout, buffers, a);
      if (share) {
        EXPECT_TRUE(Disjoint(buffers[a], buffers[b], order)) << "buffers " << a << " and " << b;
      }
      const auto& listed = layout.overlaps[a];
      EXPECT_EQ(std::count(listed.begin(), listed.end(), static_cast<int>(b)), share ? 1 : 0)
          << "buffers " << a << " and " << b;
    }
  }
}

TEST(PlanOrderTest, PathsAreOrderedBranchesAreNot) {
  // 0 -> 1 -> 3, 0 -> 2 -> 3, 4 alone.
  PlanOrder order({{1, 2}, {3}, {3}, {}, {}});
  EXPECT_TRUE(order.Precedes(0, 3));
  EXPECT_TRUE(order.Precedes(1, 3));
  EXPECT_FALSE(order.Precedes(3, 0));
  EXPECT_FALSE(order.Precedes(1, 2));
  EXPECT_FALSE(order.Precedes(2, 1));
  EXPECT_FALSE(order.Precedes(0, 0));
  EXPECT_FALSE(order.Precedes(0, 4));
  EXPECT_FALSE(order.Precedes(4, 0));
}

TEST(PlanOrderTest, ManyItems) {
  // A chain of 200 (more than one 64-bit word per row).
  std::vector<std::vector<int>> succ(200);
  for (int i = 0; i + 1 < 200; ++i) succ[static_cast<size_t>(i)] = {i + 1};
  PlanOrder order(succ);
  EXPECT_TRUE(order.Precedes(0, 199));
  EXPECT_TRUE(order.Precedes(70, 130));
  EXPECT_FALSE(order.Precedes(130, 70));
  // The same chain without a table orders every pair alike.
  const PlanOrder chain = PlanOrder::Chain(200);
  EXPECT_EQ(chain.size(), 200);
  for (int a = 0; a < 200; a += 7) {
    for (int b = 0; b < 200; b += 3) EXPECT_EQ(chain.Precedes(a, b), order.Precedes(a, b)) << a << " " << b;
  }
}

TEST(ArenaLayoutTest, AChainReusesBytesOnceTheirReaderHasRun) {
  // Item i makes buffer i, read by item i + 1: buffers two links apart share.
  std::vector<std::vector<int>> succ = {{1}, {2}, {3}, {4}, {}};
  PlanOrder order(succ);
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < 4; ++i) buffers.push_back({1000, i, {i + 1}});
  ArenaLayout layout = PlanArena(buffers, order);
  ExpectValid(layout, buffers, order);
  EXPECT_EQ(layout.total_bytes, 2 * 1024u) << "two links alive at a time";
  EXPECT_EQ(layout.offsets[0], layout.offsets[2]);
  EXPECT_NE(layout.offsets[0], layout.offsets[1]);
}

TEST(ArenaLayoutTest, BuffersOfUnorderedItemsNeverShare) {
  // Two branches that may run at once on two threads: 0 -> {1, 2} -> 3.
  PlanOrder order({{1, 2}, {3}, {3}, {}});
  std::vector<ArenaBuffer> buffers = {{256, 1, {3}}, {256, 2, {3}}, {64, 1, {}}, {64, 2, {}}};
  ArenaLayout layout = PlanArena(buffers, order);
  ExpectValid(layout, buffers, order);
  EXPECT_EQ(layout.total_bytes, 256u + 256 + 64 + 64);
}

TEST(ArenaLayoutTest, ABufferLivesWhileItsProducerRuns) {
  // Item 1 reads buffer 0 while it writes buffer 1 and a temporary.
  PlanOrder order({{1}, {2}, {}});
  std::vector<ArenaBuffer> buffers = {{128, 0, {1}}, {128, 1, {2}}, {128, 1, {}}};
  ArenaLayout layout = PlanArena(buffers, order);
  ExpectValid(layout, buffers, order);
  EXPECT_EQ(layout.total_bytes, 3 * 128u);
}

TEST(ArenaLayoutTest, RandomPlansAreValid) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 40);
    std::vector<std::vector<int>> succ(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        if (rng() % 5 == 0) succ[static_cast<size_t>(i)].push_back(j);
      }
    }
    PlanOrder order(succ);
    std::vector<ArenaBuffer> buffers;
    const int m = 1 + static_cast<int>(rng() % 30);
    for (int b = 0; b < m; ++b) {
      ArenaBuffer buf;
      buf.bytes = rng() % 5000;
      buf.producer = static_cast<int>(rng() % static_cast<unsigned>(n));
      for (int r = 0; r < static_cast<int>(rng() % 3); ++r) {
        // Readers come after the producer in a real plan.
        const int reader = buf.producer + 1 + static_cast<int>(rng() % static_cast<unsigned>(n));
        if (reader < n) buf.readers.push_back(reader);
      }
      buffers.push_back(buf);
    }
    SCOPED_TRACE(trial);
    ArenaLayout layout = PlanArena(buffers, order);
    ExpectValid(layout, buffers, order);
    size_t sum = 0;
    for (const ArenaBuffer& b : buffers) sum += (std::max<size_t>(b.bytes, 1) + 63) / 64 * 64;
    EXPECT_LE(layout.total_bytes, sum);
  }
}

}  // namespace
}  // namespace tw
