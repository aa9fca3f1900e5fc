// Queue semantics through graphs and sessions: order, shuffling, blocking,
// closing, cancelling, shapes, and the ops CountUpTo and RandomShuffle.
#include "towerflow/data/queue_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <numeric>
#include <mutex>
#include <set>
#include <thread>

#include "towerflow/data/input_producers.h"
#include "towerflow/data/queue.h"
#include "towerflow/data/queue_stats.h"
#include "towerflow/data/register.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using namespace std::chrono_literals;

// Default threading: blocking queue kernels run on the session's blocking
// pool while other steps use the inter-op threads.
SessionOptions Opts() { return SessionOptions{}; }

Tensor I32(std::vector<int32_t> v) { return Tensor::Vec<int32_t>(v); }

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override { EnsureDataRegistered(); }

  // Runs `fn` on another thread; the future tells whether it is still blocked.
  template <typename Fn>
  static auto Async(Fn fn) {
    return std::async(std::launch::async, std::move(fn));
  }
  // Long enough for the other thread to reach the queue on a loaded machine.
  static bool Blocked(const std::future<Status>& f) { return f.wait_for(250ms) == std::future_status::timeout; }

  Graph graph_;
  Scope root_{graph_};
};

TEST_F(QueueTest, FifoKeepsOrder) {
  auto q = io::FIFOQueue(root_.WithOpName("q"), 10, {kInt32}, {.shapes = {TensorShape{}}});
  Node* enq = q.EnqueueMany(root_, {Const(root_, I32({1, 2, 3, 4, 5}))});
  auto deq = q.Dequeue(root_);
  auto size = q.Size(root_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(q.name(), "q");
  EXPECT_EQ(enq->name(), "q_EnqueueMany");
  EXPECT_EQ(deq[0].node->name(), "q_Dequeue");
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq).ok());
  EXPECT_EQ(s.Run({size}).ValueOrDie()[0].scalar<int32_t>(), 5);
  for (int32_t want = 1; want <= 5; ++want) {
    EXPECT_EQ(s.Run({deq[0]}).ValueOrDie()[0].scalar<int32_t>(), want);
  }
  EXPECT_EQ(s.Run({size}).ValueOrDie()[0].scalar<int32_t>(), 0);
}

TEST_F(QueueTest, MixedComponentTypesKeepTupleOrder) {
  // Types out of DataType order exercise the per-dtype argument lists.
  auto q = io::FIFOQueue(root_, 10, {kString, kFloat32, kInt64},
                         {.shapes = {TensorShape{}, TensorShape{2}, TensorShape{}}});
  Node* enq = q.EnqueueMany(root_, {Const(root_, Tensor::Vec<std::string>({"a", "b", "c"})),
                                    Const(root_, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape{3, 2})),
                                    Const(root_, Tensor::Vec<int64_t>({7, 8, 9}))});
  auto one = q.Dequeue(root_);
  auto two = q.DequeueMany(root_, 2);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(one[1].shape(), PartialShape({2}));
  EXPECT_EQ(two[1].shape(), PartialShape({2, 2}));
  EXPECT_EQ(two[0].dtype(), kString);
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq).ok());
  auto a = s.Run(one).ValueOrDie();
  EXPECT_EQ(a[0].scalar<std::string>(), "a");
  EXPECT_EQ(a[1].ToVector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(a[2].scalar<int64_t>(), 7);
  auto b = s.Run(two).ValueOrDie();
  EXPECT_EQ(b[0].ToVector<std::string>(), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(b[1].shape(), (TensorShape{2, 2}));
  EXPECT_EQ(b[1].ToVector<float>(), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(b[2].ToVector<int64_t>(), (std::vector<int64_t>{8, 9}));
}

// The order 100 elements come out of a seeded shuffle queue in a fresh session.
std::vector<int32_t> ShuffledOrder(int64_t seed) {
  Graph g;
  Scope root(g);
  auto q = io::RandomShuffleQueue(root, 100, 0, {kInt32}, {.shapes = {TensorShape{}}, .seed = seed});
  std::vector<int32_t> values(100);
  std::iota(values.begin(), values.end(), 0);
  Node* enq = q.EnqueueMany(root, {Const(root, values)});
  auto deq = q.DequeueMany(root, 100);
  root.status().Check();
  Session s(g, Opts());
  s.Run(enq).Check();
  return s.Run(deq).ValueOrDie()[0].ToVector<int32_t>();
}

TEST_F(QueueTest, ShuffleIsRandomAndReproducibleWithASeed) {
  const auto first = ShuffledOrder(42);
  std::vector<int32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> all(100);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);  // every element exactly once
  EXPECT_NE(first, all);   // and not in order
  EXPECT_EQ(ShuffledOrder(42), first);
  EXPECT_NE(ShuffledOrder(43), first);
}

TEST_F(QueueTest, MinAfterDequeueBlocksUntilClosed) {
  auto q = io::RandomShuffleQueue(root_, 10, 3, {kInt32}, {.shapes = {TensorShape{}}, .seed = 7});
  Node* enq4 = q.EnqueueMany(root_, {Const(root_, I32({1, 2, 3, 4}))});
  Node* enq1 = q.Enqueue(root_, {Const(root_, 5)});
  auto deq = q.Dequeue(root_);
  Node* close = q.Close(root_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq4).ok());
  ASSERT_TRUE(s.Run({deq[0]}).ok());  // 4 - 1 >= 3
  auto blocked = Async([&] { return s.Run({deq[0]}).status(); });
  EXPECT_TRUE(Blocked(blocked));  // 3 left: taking one would leave 2 < 3
  ASSERT_TRUE(s.Run(enq1).ok());
  EXPECT_TRUE(blocked.get().ok());
  ASSERT_TRUE(s.Run(close).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.Run({deq[0]}).ok()) << i;  // drained below min_after_dequeue
  Status end = s.Run({deq[0]}).status();
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  EXPECT_NE(end.message().find("RandomShuffleQueue '" + q.name() +
                               "' is closed and has insufficient elements (requested 1, current size 0)"),
            std::string::npos)
      << end.ToString();
}

TEST_F(QueueTest, CloseWakesABlockedDequeueWithOutOfRange) {
  auto q = io::FIFOQueue(root_.WithOpName("q"), 10, {kFloat32});
  auto deq = q.Dequeue(root_);
  Node* close = q.Close(root_);
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  auto blocked = Async([&] {
    Status st = s.Run({deq[0]}).status();
    return std::make_pair(st, std::chrono::steady_clock::now());
  });
  EXPECT_EQ(blocked.wait_for(250ms), std::future_status::timeout);
  const auto closed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(s.Run(close).ok());
  auto [st, returned_at] = blocked.get();
  EXPECT_LT(returned_at - closed_at, 1s);  // woken by the close, not a timer (sanitizers are slow)
  EXPECT_EQ(st.code(), Code::kOutOfRange);
  EXPECT_NE(st.message().find("FIFOQueue 'q' is closed and has insufficient elements (requested 1, current size 0)"),
            std::string::npos)
      << st.ToString();
}

TEST_F(QueueTest, CloseWithCancelFailsBlockedEnqueues) {
  auto q = io::FIFOQueue(root_, 2, {kInt32}, {.shapes = {TensorShape{}}});
  Node* fill = q.EnqueueMany(root_, {Const(root_, I32({1, 2}))});
  Node* enq = q.Enqueue(root_, {Const(root_, 3)});
  Node* cancel = q.Close(root_, true);
  auto deq = q.Dequeue(root_);
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(fill).ok());
  auto blocked = Async([&] { return s.Run(enq); });
  EXPECT_TRUE(Blocked(blocked));
  ASSERT_TRUE(s.Run(cancel).ok());
  Status st = blocked.get();
  EXPECT_EQ(st.code(), Code::kCancelled);
  EXPECT_NE(st.message().find("Enqueue operation was cancelled"), std::string::npos) << st.ToString();
  EXPECT_TRUE(s.Run(cancel).ok());  // cancelling twice is fine
  // What was stored before still drains.
  EXPECT_EQ(s.Run({deq[0]}).ValueOrDie()[0].scalar<int32_t>(), 1);
  EXPECT_EQ(s.Run({deq[0]}).ValueOrDie()[0].scalar<int32_t>(), 2);
  EXPECT_EQ(s.Run({deq[0]}).status().code(), Code::kOutOfRange);
}

TEST_F(QueueTest, CloseWaitsForPendingEnqueuesThenRefusesNewOnes) {
  auto q = io::FIFOQueue(root_.WithOpName("q"), 2, {kInt32}, {.shapes = {TensorShape{}}});
  Node* fill = q.EnqueueMany(root_, {Const(root_, I32({1, 2}))});
  Node* enq = q.Enqueue(root_, {Const(root_, 3)});
  Node* close = q.Close(root_);
  auto deq = q.Dequeue(root_);
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(fill).ok());
  auto pending = Async([&] { return s.Run(enq); });
  EXPECT_TRUE(Blocked(pending));
  auto closing = Async([&] { return s.Run(close); });
  EXPECT_TRUE(Blocked(closing));  // behind the pending enqueue, as in TF
  EXPECT_EQ(s.Run({deq[0]}).ValueOrDie()[0].scalar<int32_t>(), 1);
  EXPECT_TRUE(pending.get().ok());
  EXPECT_TRUE(closing.get().ok());
  Status again = s.Run(enq);
  EXPECT_EQ(again.code(), Code::kAborted);
  EXPECT_NE(again.message().find("FIFOQueue 'q' is closed."), std::string::npos) << again.ToString();
  Status twice = s.Run(close);
  EXPECT_EQ(twice.code(), Code::kAborted);
  EXPECT_NE(twice.message().find("Queue 'q' is already closed."), std::string::npos) << twice.ToString();
  EXPECT_EQ(s.Run({deq[0]}).ValueOrDie()[0].scalar<int32_t>(), 2);
  EXPECT_EQ(s.Run({deq[0]}).ValueOrDie()[0].scalar<int32_t>(), 3);
  EXPECT_EQ(s.Run({deq[0]}).status().code(), Code::kOutOfRange);
}

TEST_F(QueueTest, DequeueUpToReturnsTheRemainderOfAClosedQueue) {
  auto q = io::FIFOQueue(root_, 10, {kInt32}, {.shapes = {TensorShape{}}});
  Node* enq = q.EnqueueMany(root_, {Const(root_, I32({1, 2, 3, 4, 5}))});
  auto upto = q.DequeueUpTo(root_, 3);
  auto many = q.DequeueMany(root_, 3);
  Node* close = q.Close(root_);
  ASSERT_TRUE(root_.ok());
  EXPECT_EQ(upto[0].shape(), PartialShape({-1}));
  EXPECT_EQ(many[0].shape(), PartialShape({3}));
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq).ok());
  ASSERT_TRUE(s.Run(close).ok());
  EXPECT_EQ(s.Run(upto).ValueOrDie()[0].ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));
  Status short_many = s.Run(many).status();  // 2 left: a DequeueMany fails and keeps them
  EXPECT_EQ(short_many.code(), Code::kOutOfRange);
  EXPECT_NE(short_many.message().find("(requested 3, current size 2)"), std::string::npos);
  EXPECT_EQ(s.Run(upto).ValueOrDie()[0].ToVector<int32_t>(), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(s.Run(upto).status().code(), Code::kOutOfRange);
}

TEST_F(QueueTest, BlockedDequeueManyPutsItsPartialBatchBackOnClose) {
  auto q = io::FIFOQueue(root_, 4, {kInt32, kFloat32}, {.shapes = {TensorShape{}, TensorShape{}}});
  Node* enq = q.EnqueueMany(root_, {Const(root_, I32({1, 2, 3})),
                                    Const(root_, std::vector<float>{10, 20, 30}, TensorShape{3})});
  auto many = q.DequeueMany(root_, 4);
  auto one = q.Dequeue(root_);
  Node* close = q.Close(root_);
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq).ok());
  auto blocked = Async([&] { return s.Run(many).status(); });
  EXPECT_TRUE(Blocked(blocked));
  ASSERT_TRUE(s.Run(close).ok());
  EXPECT_EQ(blocked.get().code(), Code::kOutOfRange);
  for (int32_t want = 1; want <= 3; ++want) {
    auto got = s.Run(one).ValueOrDie();
    EXPECT_EQ(got[0].scalar<int32_t>(), want);
    EXPECT_EQ(got[1].scalar<float>(), 10.0f * static_cast<float>(want));
  }
}

TEST_F(QueueTest, EnqueueManyAndDequeueManyLargerThanCapacity) {
  auto q = io::FIFOQueue(root_, 3, {kInt32}, {.shapes = {TensorShape{}}});
  std::vector<int32_t> ten(10);
  std::iota(ten.begin(), ten.end(), 0);
  Node* enq = q.EnqueueMany(root_, {Const(root_, ten)});
  auto many = q.DequeueMany(root_, 10);
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  auto producer = Async([&] { return s.Run(enq); });
  EXPECT_EQ(s.Run(many).ValueOrDie()[0].ToVector<int32_t>(), ten);
  EXPECT_TRUE(producer.get().ok());
}

TEST_F(QueueTest, DequeueManyNeedsShapes) {
  auto q = io::FIFOQueue(root_, 10, {kFloat32});
  Node* enq = q.Enqueue(root_, {Const(root_, 1.0f)});
  auto many = q.DequeueMany(root_, 1);
  ASSERT_TRUE(root_.ok());
  EXPECT_FALSE(many[0].shape().known_rank());
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq).ok());
  Status st = s.Run(many).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("FIFOQueue's DequeueMany requires the components to have specified shapes."),
            std::string::npos)
      << st.ToString();
}

TEST_F(QueueTest, ComponentMismatchesAreInvalidArgument) {
  auto q = io::FIFOQueue(root_.WithOpName("q"), 10, {kFloat32}, {.shapes = {TensorShape{2}}});
  {
    Graph g;
    Scope bad(g);
    auto q2 = io::FIFOQueue(bad.WithOpName("q"), 10, {kFloat32}, {.shapes = {TensorShape{2}}});
    q2.Enqueue(bad, {Const(bad, std::vector<float>{1, 2, 3}, TensorShape{3})});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("component 0 has shape [3], the queue expects [2]"), std::string::npos)
        << bad.status().ToString();
    q2.Enqueue(bad, {Const(bad, I32({1, 2}))});
    EXPECT_NE(bad.errors().back().message().find("component 0 has dtype int32, the queue expects float"),
              std::string::npos);
  }
  // A shape only known at run time is checked by the kernel.
  auto x = Placeholder(root_, kFloat32);
  Node* enq = q.Enqueue(root_, {x});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session s(graph_, Opts());
  Status st = s.Run({{x, Tensor::FromVector<float>({1, 2, 3}, TensorShape{3})}}, {}, {enq}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("Shape mismatch in tuple component 0 of FIFOQueue 'q'. Expected [2], got [3]"),
            std::string::npos)
      << st.ToString();
}

TEST_F(QueueTest, SessionCloseCancelsBlockedOperations) {
  auto full = io::FIFOQueue(root_, 1, {kInt32}, {.shapes = {TensorShape{}}});
  auto empty = io::FIFOQueue(root_, 1, {kInt32}, {.shapes = {TensorShape{}}});
  Node* enq = full.Enqueue(root_, {Const(root_, 1)});
  auto deq = empty.DequeueMany(root_, 2);
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq).ok());
  auto blocked_enqueue = Async([&] { return s.Run(enq); });
  auto blocked_dequeue = Async([&] { return s.Run(deq).status(); });
  EXPECT_TRUE(Blocked(blocked_enqueue));
  EXPECT_TRUE(Blocked(blocked_dequeue));
  const auto start = std::chrono::steady_clock::now();
  s.Close();
  Status e = blocked_enqueue.get(), d = blocked_dequeue.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);  // woken by the close, not a timer
  EXPECT_EQ(e.code(), Code::kCancelled) << e.ToString();
  EXPECT_NE(e.message().find("Enqueue operation was cancelled"), std::string::npos) << e.ToString();
  EXPECT_EQ(d.code(), Code::kCancelled) << d.ToString();
  EXPECT_NE(d.message().find("Dequeue operation was cancelled"), std::string::npos) << d.ToString();
  EXPECT_EQ(s.Run(enq).code(), Code::kCancelled);  // a closed session runs nothing
}

TEST_F(QueueTest, SharedNameSharesOneQueueAndChecksCompatibility) {
  auto a = io::FIFOQueue(root_, 10, {kInt32}, {.shapes = {TensorShape{}}, .shared_name = "shared"});
  auto b = io::FIFOQueue(root_, 10, {kInt32}, {.shapes = {TensorShape{}}, .shared_name = "shared"});
  auto c = io::FIFOQueue(root_, 15, {kInt32}, {.shapes = {TensorShape{}}, .shared_name = "shared"});
  Node* enq = a.Enqueue(root_, {Const(root_, 5)});
  auto deq = b.Dequeue(root_);
  auto size_c = c.Size(root_);
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(enq).ok());
  EXPECT_EQ(s.Run(deq).ValueOrDie()[0].scalar<int32_t>(), 5);
  Status st = s.Run({size_c}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("Shared queue 'shared' has capacity 10 but requested capacity was 15"),
            std::string::npos)
      << st.ToString();
}

TEST_F(QueueTest, BadQueueAttrsAreRecordedInTheScope) {
  io::RandomShuffleQueue(root_, 10, 10, {kInt32});
  ASSERT_FALSE(root_.ok());
  EXPECT_NE(root_.status().message().find("min_after_dequeue 10 must be smaller than capacity 10"),
            std::string::npos)
      << root_.status().ToString();
  io::FIFOQueue(root_, 10, {kInt32, kFloat32}, {.shapes = {TensorShape{}}});
  EXPECT_NE(root_.errors().back().message().find("2 component types but 1 shapes"), std::string::npos);
  io::FIFOQueue(root_, 10, {});
  EXPECT_NE(root_.errors().back().message().find("at least one component type"), std::string::npos);
}

TEST_F(QueueTest, CountUpToStopsAtItsLimit) {
  Variable v = GetVariable(root_, "counter", TensorShape{}, {.dtype = kInt64});
  Output count = CountUpTo(root_, v, 2);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session s(graph_, Opts());
  EXPECT_EQ(s.Run({count}).status().code(), Code::kFailedPrecondition);
  ASSERT_TRUE(s.Run(v.initializer).ok());
  EXPECT_EQ(s.Run({count}).ValueOrDie()[0].scalar<int64_t>(), 0);
  EXPECT_EQ(s.Run({count}).ValueOrDie()[0].scalar<int64_t>(), 1);
  Status st = s.Run({count}).status();
  EXPECT_EQ(st.code(), Code::kOutOfRange);
  EXPECT_NE(st.message().find("Reached limit of 2"), std::string::npos) << st.ToString();
  EXPECT_EQ(s.Run({v.value}).ValueOrDie()[0].scalar<int64_t>(), 2);
}

TEST_F(QueueTest, RandomShuffleKeepsRowsAndFollowsItsSeed) {
  auto rows = Tensor::FromVector<float>({0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}, TensorShape{8, 2});
  Output a = RandomShuffle(root_, Const(root_, rows), 5);
  Output b = RandomShuffle(root_, Const(root_, rows), 5);
  Output strings = RandomShuffle(root_, Const(root_, Tensor::Vec<std::string>({"x", "y", "z"})), 9);
  ASSERT_TRUE(root_.ok());
  EXPECT_EQ(a.shape(), PartialShape({8, 2}));
  Session s(graph_, Opts());
  auto out = s.Run({a, b, strings}).ValueOrDie();
  std::vector<float> va = out[0].ToVector<float>();
  std::multiset<float> seen;
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(va[2 * i], va[2 * i + 1]);  // rows move whole
    seen.insert(va[2 * i]);
  }
  EXPECT_EQ(seen, (std::multiset<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(va, out[1].ToVector<float>());  // same (graph-less) seeds, same first draw
  auto st = out[2].ToVector<std::string>();
  EXPECT_EQ(std::multiset<std::string>(st.begin(), st.end()), (std::multiset<std::string>{"x", "y", "z"}));
  // Each run draws a new order: over a few runs some differ.
  bool changed = false;
  for (int i = 0; i < 5 && !changed; ++i) changed = s.Run({a}).ValueOrDie()[0].ToVector<float>() != va;
  EXPECT_TRUE(changed);
}

TEST_F(QueueTest, FillStatsUseTfSummaryNames) {
  auto fifo = io::FIFOQueue(root_.WithOpName("fifo"), 10, {kInt32}, {.shapes = {TensorShape{}}});
  auto shuffle = io::RandomShuffleQueue(root_.WithOpName("shuf"), 10, 4, {kInt32}, {.shapes = {TensorShape{}}});
  Node* a = fifo.EnqueueMany(root_, {Const(root_, I32({1, 2, 3, 4}))});
  Node* b = shuffle.EnqueueMany(root_, {Const(root_, I32({1, 2, 3, 4, 5, 6, 7}))});
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  EXPECT_TRUE(io::QueueFillStats(s).empty());  // no queue op has run yet
  ASSERT_TRUE(s.Run(a).ok());
  ASSERT_TRUE(s.Run(b).ok());
  auto stats = io::QueueFillStats(s);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].summary_name, "fifo/fraction_of_10_full");
  EXPECT_DOUBLE_EQ(stats[0].value, 0.4);
  EXPECT_EQ(stats[0].size, 4);
  EXPECT_EQ(stats[1].summary_name, "shuf/fraction_over_4_of_6_full");
  EXPECT_DOUBLE_EQ(stats[1].value, 3.0 / 6.0);
  EXPECT_EQ(stats[1].capacity, 10);
}

TEST_F(QueueTest, KernelsReachTheQueueThroughItsHandle) {
  // What a reader kernel does with its RefInput("queue_handle", "string").
  auto q = io::FIFOQueue(root_.WithOpName("filenames"), 4, {kString}, {.shapes = {TensorShape{}}});
  Node* enq = q.EnqueueMany(root_, {Const(root_, Tensor::Vec<std::string>({"a", "b"}))});
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  EXPECT_EQ(QueueResource::Find(s.impl().resource_mgr(), "filenames").status().code(), Code::kNotFound);
  ASSERT_TRUE(s.Run(enq).ok());
  Tensor handle = s.Run({q.handle()}).ValueOrDie()[0];
  EXPECT_EQ(handle.scalar<std::string>(), "filenames");
  auto queue = QueueResource::FromHandle(s.impl().resource_mgr(), handle);
  ASSERT_TRUE(queue.ok()) << queue.status().ToString();
  QueueResource::Tuple t;
  ASSERT_TRUE((*queue)->Dequeue(&t).ok());
  EXPECT_EQ(t[0].scalar<std::string>(), "a");
  EXPECT_EQ((*queue)->Size(), 1);
  EXPECT_EQ(QueueResource::FromHandle(s.impl().resource_mgr(), Tensor::Scalar<int32_t>(1)).status().code(),
            Code::kInvalidArgument);
}

// Queues whose components are all shaped numbers keep elements as rows in
// reused slabs: the values of every dtype (a component of no bytes too) come
// back intact through EnqueueMany / Enqueue and DequeueBatch / DequeueMany,
// and storage stays at the most elements held at once, whatever went through.
TEST(QueueRowsTest, RowsRoundTripAndStorageIsReused) {
  for (auto kind : {QueueResource::Kind::kFIFO, QueueResource::Kind::kRandomShuffle}) {
    SCOPED_TRACE(QueueResource::KindName(kind));
    QueueResource q({.kind = kind,
                     .name = "rows",
                     .dtypes = {kFloat32, kUInt8, kInt64, kBool, kFloat64},
                     .shapes = {TensorShape{3}, TensorShape{2, 2}, TensorShape{}, TensorShape{1}, TensorShape{0}},
                     .capacity = 100,
                     .seed = 1,
                     .seed2 = 2});
    int64_t next = 0;  // element i holds i in every component
    auto batch_of = [&](int64_t n) {
      QueueResource::Tuple b = {Tensor(kFloat32, TensorShape{n, 3}), Tensor(kUInt8, TensorShape{n, 2, 2}),
                                Tensor(kInt64, TensorShape{n}), Tensor(kBool, TensorShape{n, 1}),
                                Tensor(kFloat64, TensorShape{n, 0})};
      for (int64_t i = 0; i < n; ++i, ++next) {
        for (int j = 0; j < 3; ++j) b[0].data<float>()[3 * i + j] = static_cast<float>(next) + 0.25f * j;
        for (int j = 0; j < 4; ++j) b[1].data<uint8_t>()[4 * i + j] = static_cast<uint8_t>(next + j);
        b[2].data<int64_t>()[i] = (int64_t{1} << 40) + next;
        b[3].data<bool>()[i] = next % 3 == 0;
      }
      return b;
    };
    std::vector<int64_t> seen;
    auto check = [&](const QueueResource::Tuple& b) {
      ASSERT_EQ(b.size(), 5u);
      const int64_t k = b[0].dim(0);
      EXPECT_EQ(b[4].shape(), (TensorShape{k, 0}));
      for (int64_t i = 0; i < k; ++i) {
        const int64_t e = b[2].data<int64_t>()[i] - (int64_t{1} << 40);
        seen.push_back(e);
        for (int j = 0; j < 3; ++j) EXPECT_EQ(b[0].data<float>()[3 * i + j], static_cast<float>(e) + 0.25f * j);
        for (int j = 0; j < 4; ++j) EXPECT_EQ(b[1].data<uint8_t>()[4 * i + j], static_cast<uint8_t>(e + j));
        EXPECT_EQ(b[3].data<bool>()[i], e % 3 == 0);
      }
    };
    for (int round = 0; round < 50; ++round) {
      ASSERT_TRUE(q.EnqueueMany(batch_of(60)).ok());
      QueueResource::Tuple one = batch_of(1);
      for (Tensor& t : one) {
        TensorShape shape = t.shape();
        shape.RemoveDim(0);
        t = t.Reshaped(shape).value();
      }
      ASSERT_TRUE(q.Enqueue(one).ok());
      QueueResource::Tuple b;
      ASSERT_TRUE(q.DequeueBatch(40, false, &b).ok());
      check(b);
      std::vector<QueueResource::Tuple> elements;
      ASSERT_TRUE(q.DequeueMany(21, false, &elements).ok());
      for (const auto& e : elements) {
        QueueResource::Tuple row;
        for (const Tensor& t : e) {
          TensorShape shape = t.shape();
          shape.InsertDim(0, 1);
          row.push_back(t.Reshaped(shape).value());
        }
        check(row);
      }
    }
    EXPECT_EQ(q.Size(), 0);
    EXPECT_EQ(q.StorageSlots(), 64) << "61 elements held at most: one slab";
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(static_cast<size_t>(next));
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all) << "every element exactly once";
  }
}

// Producers enqueue one element at a time while consumers wait in DequeueMany
// for more than one (more than the capacity, for the FIFO queue): a dequeue is
// woken only once it can take all it still needs or the queue is full, and
// still every element arrives exactly once, nothing hangs, and the close
// hands the waiting dequeues their short batch or OutOfRange.
TEST(QueueWakeupTest, SingleEnqueuesFeedLargeDequeuesToTheEnd) {
  for (auto kind : {QueueResource::Kind::kFIFO, QueueResource::Kind::kRandomShuffle}) {
    SCOPED_TRACE(QueueResource::KindName(kind));
    const bool fifo = kind == QueueResource::Kind::kFIFO;
    QueueResource q({.kind = kind,
                     .name = "wakeups",
                     .dtypes = {kInt64},
                     .shapes = {TensorShape{}},
                     .capacity = fifo ? 16 : 60,
                     .min_after_dequeue = fifo ? 0 : 20,
                     .seed = 1,
                     .seed2 = 2});
    constexpr int kProducers = 3, kPerProducer = 2000;
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&q, p] {
        for (int64_t i = 0; i < kPerProducer; ++i) {
          ASSERT_TRUE(q.Enqueue({Tensor::Scalar<int64_t>(p * kPerProducer + i)}).ok());
        }
      });
    }
    std::mutex seen_mu;
    std::vector<int64_t> seen;
    std::vector<std::future<void>> consumers;
    for (int c = 0; c < 2; ++c) {
      // FIFO: 25 > capacity 16; shuffle: 30 at most above min_after_dequeue.
      const int64_t n = fifo ? 25 : 7 + 23 * c;
      consumers.push_back(std::async(std::launch::async, [&, n, c] {
        while (true) {
          QueueResource::Tuple batch;
          const Status s = q.DequeueBatch(n, /*allow_small_batch=*/c == 1, &batch);
          if (!s.ok()) {
            EXPECT_EQ(Code::kOutOfRange, s.code()) << s.ToString();
            return;
          }
          if (c == 0) {
            EXPECT_EQ(n, batch[0].dim(0));
          }
          std::lock_guard<std::mutex> lock(seen_mu);
          for (int64_t i = 0; i < batch[0].dim(0); ++i) seen.push_back(batch[0].data<int64_t>()[i]);
        }
      }));
    }
    for (std::thread& t : producers) t.join();
    ASSERT_TRUE(q.CloseQueue(false).ok());
    for (auto& c : consumers) ASSERT_EQ(std::future_status::ready, c.wait_for(30s)) << "a dequeue hangs";
    // What no full batch could take stays queued (the first consumer needs
    // whole batches; the second took its short one).
    std::vector<QueueResource::Tuple> rest;
    ASSERT_TRUE(q.DequeueMany(q.Size(), false, &rest).ok() || q.Size() == 0);
    for (const auto& e : rest) seen.push_back(e[0].scalar<int64_t>());
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(kProducers * kPerProducer);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(all, seen) << "every element exactly once";
  }
}

// A dequeue asked not to wait (what an inter-op thread asks) takes its
// elements when they are all there beyond what a shuffle queue keeps, and
// otherwise takes nothing and says it would wait; behind another dequeue in
// line it would wait too; a closed queue answers at once (its short batch or
// OutOfRange).
// The order a shuffle queue of 100 elements (min_after_dequeue 10) gives when
// the enqueuer is `ahead` elements in front of the dequeues: a deterministic
// queue gives one order whatever `ahead` is; TF's draw (from everything the
// queue holds) depends on it.
std::vector<int64_t> OrderWithEnqueuerAhead(bool deterministic, int64_t ahead) {
  const int64_t n = 100, keep = 10;
  QueueResource q({.kind = QueueResource::Kind::kRandomShuffle,
                   .name = "window",
                   .dtypes = {kInt64},
                   .shapes = {TensorShape{}},
                   .capacity = n,
                   .min_after_dequeue = keep,
                   .seed = 5,
                   .seed2 = 6,
                   .deterministic = deterministic});
  int64_t enqueued = 0;
  auto enqueue_to = [&](int64_t total) {
    for (; enqueued < std::min(total, n); ++enqueued) {
      EXPECT_TRUE(q.Enqueue({Tensor::Scalar<int64_t>(enqueued)}).ok());
    }
  };
  std::vector<int64_t> order;
  bool closed = false;
  enqueue_to(keep + ahead);
  while (static_cast<int64_t>(order.size()) < n) {
    if (enqueued == n && !closed) {
      EXPECT_TRUE(q.CloseQueue(false).ok());
      closed = true;
    }
    QueueResource::Tuple one;
    EXPECT_TRUE(q.Dequeue(&one).ok());
    order.push_back(one[0].scalar<int64_t>());
    enqueue_to(enqueued + 1);
  }
  return order;
}

TEST(QueueDeterministicTest, TheOrderDependsOnTheEnqueuesAloneNotOnHowFarAheadTheyAre) {
  const std::vector<int64_t> reference = OrderWithEnqueuerAhead(true, 1);
  std::vector<int64_t> sorted = reference;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(100);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);     // every element once
  EXPECT_NE(reference, all);  // shuffled
  for (int64_t ahead : {2, 7, 30, 90}) {
    EXPECT_EQ(OrderWithEnqueuerAhead(true, ahead), reference) << "enqueuer " << ahead << " ahead";
  }
  // The window holds min_after_dequeue + 1: no element leaves before 10 later ones arrived.
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_LE(reference[i], static_cast<int64_t>(i) + 10) << i;
  // TF's draw from the whole queue changes with the timing.
  EXPECT_NE(OrderWithEnqueuerAhead(false, 1), OrderWithEnqueuerAhead(false, 90));
}

TEST(QueueWouldWaitTest, DequeuesThatNeedNotWaitCompleteAndOthersTakeNothing) {
  for (auto kind : {QueueResource::Kind::kFIFO, QueueResource::Kind::kRandomShuffle}) {
    SCOPED_TRACE(QueueResource::KindName(kind));
    const int64_t keep = kind == QueueResource::Kind::kFIFO ? 0 : 3;
    QueueResource q({.kind = kind,
                     .name = "try",
                     .dtypes = {kInt64},
                     .shapes = {TensorShape{}},
                     .capacity = 20,
                     .min_after_dequeue = keep,
                     .seed = 1,
                     .seed2 = 2});
    auto enqueue = [&](int64_t n) {
      Tensor b(kInt64, TensorShape{n});
      for (int64_t i = 0; i < n; ++i) b.data<int64_t>()[i] = i;
      ASSERT_TRUE(q.EnqueueMany({b}).ok());
    };
    bool would_wait = false;
    QueueResource::Tuple batch;
    ASSERT_TRUE(q.DequeueBatch(4, false, &batch, &would_wait).ok());
    EXPECT_TRUE(would_wait) << "empty queue";
    EXPECT_TRUE(batch.empty());
    enqueue(keep + 3);
    ASSERT_TRUE(q.DequeueBatch(4, false, &batch, &would_wait).ok());
    EXPECT_TRUE(would_wait) << "one element short";
    EXPECT_EQ(q.Size(), keep + 3) << "nothing taken";
    std::vector<QueueResource::Tuple> elements;
    ASSERT_TRUE(q.DequeueMany(4, false, &elements, &would_wait).ok());
    EXPECT_TRUE(would_wait);
    EXPECT_TRUE(elements.empty());
    QueueResource::Tuple one;
    ASSERT_TRUE(q.Dequeue(&one, &would_wait).ok());
    EXPECT_FALSE(would_wait) << "one element is there";
    ASSERT_EQ(one.size(), 1u);
    enqueue(1);
    ASSERT_TRUE(q.DequeueBatch(3, false, &batch, &would_wait).ok());
    EXPECT_FALSE(would_wait);
    ASSERT_EQ(batch.size(), 1u);
    EXPECT_EQ(batch[0].dim(0), 3);
    EXPECT_EQ(q.Size(), keep);

    // A waiting dequeue is ahead in line (it took the 2 elements there and
    // waits for 3 more): a second one would wait behind it even for
    // elements that are there.
    enqueue(2);
    auto first = std::async(std::launch::async, [&] {
      QueueResource::Tuple b;
      return q.DequeueBatch(5, false, &b);
    });
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (q.Size() != keep && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(q.Size(), keep) << "the first dequeue never took its first elements";
    enqueue(2);
    ASSERT_TRUE(q.DequeueBatch(1, false, &batch, &would_wait).ok());
    EXPECT_TRUE(would_wait) << "behind a dequeue in line";
    enqueue(3);
    ASSERT_EQ(std::future_status::ready, first.wait_for(30s));
    EXPECT_TRUE(first.get().ok());
    ASSERT_EQ(q.Size(), keep + 2);

    // Closed: a short batch or OutOfRange at once.
    ASSERT_TRUE(q.CloseQueue(false).ok());
    ASSERT_TRUE(q.DequeueBatch(keep + 5, true, &batch, &would_wait).ok());
    EXPECT_FALSE(would_wait);
    EXPECT_EQ(batch[0].dim(0), keep + 2);
    const Status s = q.DequeueBatch(1, false, &batch, &would_wait);
    EXPECT_FALSE(would_wait);
    EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
  }
}

TEST_F(QueueTest, EveryQueueOpIsRegisteredCompletely) {
  for (const char* op : {"FIFOQueue", "RandomShuffleQueue", "QueueEnqueue", "QueueEnqueueMany", "QueueDequeue",
                         "QueueDequeueMany", "QueueDequeueUpTo", "QueueClose", "QueueSize", "CountUpTo",
                         "RandomShuffle"}) {
    const OpDef* def = OpRegistry::Global().Find(op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->outputs.empty() || def->shape_fn) << op;
    const auto kernels = KernelRegistry::Global().KernelsFor(op);
    EXPECT_TRUE(std::any_of(kernels.begin(), kernels.end(),
                            [](const KernelDef* k) { return k->device_type == kDeviceCpu; }))
        << op << " has no CPU kernel";
    EXPECT_TRUE(GradientRegistry::Global().IsNoGradient(op)) << op;
  }
}

}  // namespace
}  // namespace tw
