// batch / shuffle_batch and batch sources: every record delivered exactly once
// per epoch through several threads, final smaller batches, one dequeue per
// tower, TF's validation messages, and fill statistics while running.
#include "towerflow/data/batching.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "towerflow/data/input_producers.h"
#include "towerflow/data/queue_runner.h"
#include "towerflow/data/queue_stats.h"
#include "towerflow/data/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"

namespace tw::train {
namespace {

// Default threading: blocking queue kernels run on the session's blocking
// pool while other steps use the inter-op threads.
SessionOptions Opts() { return SessionOptions{}; }

class BatchingTest : public ::testing::Test {
 protected:
  void SetUp() override { EnsureDataRegistered(); }

  // Runs the canonical TF1 loop: local init, runners, fetch until OutOfRange.
  // `each` sees every fetched step. Returns the Join status.
  template <typename Each>
  Status RunToEnd(const std::vector<Output>& fetches, Each each, Status* end = nullptr) {
    Session s(graph_, Opts());
    TW_RETURN_IF_ERROR(s.Run(LocalVariablesInitializer(graph_)));
    Coordinator coord;
    auto threads = StartQueueRunners(s, coord);
    Status last;
    while (!coord.ShouldStop()) {
      auto r = s.Run(fetches);
      if (!r.ok()) {
        last = r.status();
        break;
      }
      each(s, *r);
    }
    if (end != nullptr) *end = last;
    coord.RequestStop(last);
    return coord.Join(threads, std::chrono::seconds(5));
  }

  Graph graph_;
  Scope root_{graph_};
};

TEST_F(BatchingTest, BatchDeliversInOrderWithASmallerFinalBatch) {
  io::Queue range = RangeInputProducer(root_, 10, {.num_epochs = 1, .shuffle = false});
  Output x = range.Dequeue(root_)[0];
  tw::Batch b = Batch(root_, {x}, {.batch_size = 4, .allow_smaller_final_batch = true});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(b[0].shape(), PartialShape({-1}));
  EXPECT_EQ(b[0].node->name(), "batch/fifo_queue_DequeueUpTo");
  std::vector<std::vector<int32_t>> batches;
  Status end;
  Status joined = RunToEnd({b[0]}, [&](Session&, const std::vector<Tensor>& t) {
    batches.push_back(t[0].ToVector<int32_t>());
  }, &end);
  EXPECT_TRUE(joined.ok()) << joined.ToString();
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  EXPECT_EQ(batches, (std::vector<std::vector<int32_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
}

TEST_F(BatchingTest, BatchWithoutSmallerFinalBatchDropsTheRest) {
  io::Queue range = RangeInputProducer(root_, 10, {.num_epochs = 1, .shuffle = false});
  tw::Batch b = Batch(root_, {range.Dequeue(root_)[0]}, {.batch_size = 4});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(b[0].shape(), PartialShape({4}));
  int batches = 0;
  Status end;
  EXPECT_TRUE(RunToEnd({b[0]}, [&](Session&, const std::vector<Tensor>&) { ++batches; }, &end).ok());
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  EXPECT_NE(end.message().find("(requested 4, current size 2)"), std::string::npos) << end.ToString();
}

TEST_F(BatchingTest, ShuffleBatchWithThreeThreadsDeliversEveryRecordOncePerEpoch) {
  std::vector<int64_t> records(1000);
  std::iota(records.begin(), records.end(), 0);
  io::Queue source = InputProducer(root_, Const(root_, Tensor::Vec<int64_t>(records)),
                                   {.num_epochs = 3, .seed = 1, .capacity = 64});
  Output record = source.Dequeue(root_)[0];
  Output label = Cast(root_, record, kInt32);
  tw::Batch b = ShuffleBatch(root_, {record, label},
                             {.batch_size = 64, .capacity = 600, .min_after_dequeue = 300, .num_threads = 3,
                              .seed = 2, .allow_smaller_final_batch = true});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(QueueRunners(graph_).size(), 2u);
  EXPECT_EQ(QueueRunners(graph_)[1].enqueue_ops().size(), 3u);
  std::map<int64_t, int> seen;
  bool in_order = true;
  int64_t previous = -1;
  bool saw_fill = false;
  Status end;
  Status joined = RunToEnd({b[0], b[1]}, [&](Session& s, const std::vector<Tensor>& t) {
    const auto values = t[0].ToVector<int64_t>();
    const auto labels = t[1].ToVector<int32_t>();
    ASSERT_EQ(values.size(), labels.size());
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], labels[i]);  // components of one element stay together
      ++seen[values[i]];
      in_order &= values[i] > previous;
      previous = values[i];
    }
    for (const io::QueueFill& f : io::QueueFillStats(s)) {
      if (f.summary_name != "shuffle_batch/fraction_over_300_of_300_full") continue;
      saw_fill = true;
      EXPECT_GE(f.value, 0.0);
      EXPECT_LE(f.value, 1.0);
    }
  }, &end);
  EXPECT_TRUE(joined.ok()) << joined.ToString();
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  ASSERT_EQ(seen.size(), 1000u);
  for (const auto& [value, count] : seen) ASSERT_EQ(count, 3) << "record " << value;
  EXPECT_FALSE(in_order);
  EXPECT_TRUE(saw_fill);
}

TEST_F(BatchingTest, EnqueueManySplitsTheInputBatch) {
  auto rows = Tensor::FromVector<float>({0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, TensorShape{6, 2});
  BatchSource source(root_, {Const(root_, rows)}, {.batch_size = 3, .enqueue_many = true});
  tw::Batch b = source.Next(root_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(source.queue().shapes(), (std::vector<TensorShape>{TensorShape{2}}));
  EXPECT_EQ(b[0].shape(), PartialShape({3, 2}));
  Session s(graph_, Opts());
  Coordinator coord;
  auto threads = StartQueueRunners(s, coord);
  auto first = s.Run(b).ValueOrDie()[0];
  EXPECT_EQ(first.shape(), (TensorShape{3, 2}));
  EXPECT_EQ(first.ToVector<float>(), (std::vector<float>{0, 0, 1, 1, 2, 2}));
  coord.RequestStop();
  EXPECT_TRUE(coord.Join(threads, std::chrono::seconds(1)).ok());
}

TEST_F(BatchingTest, EachTowerDequeuesItsOwnBatch) {
  io::Queue range = RangeInputProducer(root_, 1000, {.shuffle = false});
  ShuffleBatchSource batches(root_, {range.Dequeue(root_)[0]},
                             {.batch_size = 10, .capacity = 100, .min_after_dequeue = 20, .num_threads = 2});
  tw::Batch tower0 = batches.Next(root_.NewSubScope("tower_0"));
  tw::Batch tower1 = batches(root_.NewSubScope("tower_1"));
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_NE(tower0[0].node, tower1[0].node);
  EXPECT_EQ(tower0[0].node->name(), "tower_0/random_shuffle_queue_DequeueMany");
  EXPECT_EQ(batches.queue().name(), "shuffle_batch/random_shuffle_queue");
  Session s(graph_, Opts());
  Coordinator coord;
  auto threads = StartQueueRunners(s, coord);
  auto out = s.Run({tower0[0], tower1[0]}).ValueOrDie();
  std::set<int32_t> union_of;
  for (const Tensor& t : out) {
    for (int32_t v : t.ToVector<int32_t>()) union_of.insert(v);
  }
  EXPECT_EQ(union_of.size(), 20u);  // two different batches, not one shared
  coord.RequestStop();
  EXPECT_TRUE(coord.Join(threads, std::chrono::seconds(1)).ok());
}

// shuffle_batch_join: one enqueue op and one runner thread per list, so each
// list's source (a reader, here a producer) feeds the queue on its own; every
// element of every list arrives once, whole.
TEST_F(BatchingTest, ShuffleBatchJoinRunsOneEnqueuePerList) {
  std::vector<std::vector<Output>> lists;
  for (int64_t k = 0; k < 3; ++k) {
    std::vector<int64_t> records(200);
    std::iota(records.begin(), records.end(), 1000 * k);
    io::Queue source = InputProducer(root_.NewSubScope("source"), Const(root_, Tensor::Vec<int64_t>(records)),
                                     {.num_epochs = 1, .shuffle = false, .capacity = 32});
    Output record = source.Dequeue(root_)[0];
    lists.push_back({record, Cast(root_, record, kInt32)});
  }
  ShuffleBatchSource source = ShuffleBatchSource::Join(
      root_, lists,
      {.batch_size = 50, .capacity = 300, .min_after_dequeue = 100, .num_threads = 7,
       .allow_smaller_final_batch = true});
  tw::Batch b = source.Next(root_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(source.queue().name(), "shuffle_batch_join/random_shuffle_queue");
  const std::vector<QueueRunner> runners = QueueRunners(graph_);
  ASSERT_EQ(runners.size(), 4u);  // three producers and the join
  const std::vector<Node*>& enqueues = runners.back().enqueue_ops();
  ASSERT_EQ(enqueues.size(), 3u);  // one per list, num_threads aside
  EXPECT_EQ(std::set<Node*>(enqueues.begin(), enqueues.end()).size(), 3u);
  std::map<int64_t, int> seen;
  Status end;
  Status joined = RunToEnd({b[0], b[1]}, [&](Session&, const std::vector<Tensor>& t) {
    const auto values = t[0].ToVector<int64_t>();
    const auto labels = t[1].ToVector<int32_t>();
    ASSERT_EQ(values.size(), labels.size());
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], labels[i]);
      ++seen[values[i]];
    }
  }, &end);
  EXPECT_TRUE(joined.ok()) << joined.ToString();
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  ASSERT_EQ(seen.size(), 600u);
  for (const auto& [value, count] : seen) ASSERT_EQ(count, 1) << "record " << value;
}

// batch_join with enqueue_many: lists of batches (here from two finite
// producers), every element once; element shapes from whichever list defines
// them.
TEST_F(BatchingTest, BatchJoinWithEnqueueMany) {
  io::Queue low = RangeInputProducer(root_.NewSubScope("low"), 30, {.num_epochs = 1, .shuffle = false});
  io::Queue high = RangeInputProducer(root_.NewSubScope("high"), 30, {.num_epochs = 1, .shuffle = false});
  Output from_high = Add(root_, high.DequeueUpTo(root_, 7)[0], Const(root_, 100));
  BatchSource source = BatchSource::Join(root_, {{low.DequeueUpTo(root_, 4)[0]}, {from_high}},
                                         {.batch_size = 5, .enqueue_many = true, .allow_smaller_final_batch = true});
  tw::Batch batch = source.Next(root_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(source.queue().name(), "batch_join/fifo_queue");
  EXPECT_EQ(source.queue().shapes(), (std::vector<TensorShape>{TensorShape{}}));
  std::multiset<int32_t> got;
  Status end;
  Status joined = RunToEnd({batch[0]}, [&](Session&, const std::vector<Tensor>& t) {
    for (int32_t v : t[0].ToVector<int32_t>()) got.insert(v);
  }, &end);
  EXPECT_TRUE(joined.ok()) << joined.ToString();
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  std::multiset<int32_t> want;
  for (int32_t v = 0; v < 30; ++v) want.insert({v, v + 100});
  EXPECT_EQ(got, want);
  // A list that leaves the shape open takes it from another.
  auto rows = Tensor::FromVector<float>({0, 0, 1, 1}, TensorShape{2, 2});
  Output unknown = Placeholder(root_, kFloat32, PartialShape({-1, -1}));
  BatchSource open = BatchSource::Join(root_, {{unknown}, {Const(root_, rows)}}, {.batch_size = 2, .enqueue_many = true});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(open.queue().shapes(), (std::vector<TensorShape>{TensorShape{2}}));
}

TEST_F(BatchingTest, JoinArgumentsAreValidatedAsTfDoes) {
  Output f = Const(root_, 1.0f);
  Output i = Const(root_, 1);
  BatchJoin(root_, {}, {.batch_size = 4});
  ASSERT_FALSE(root_.ok());
  EXPECT_EQ(root_.errors().back().message(), "Expected at least one input in batch_join().");
  ShuffleBatchJoin(root_, {{f, i}, {f, f}}, {.batch_size = 4, .capacity = 10, .min_after_dequeue = 1});
  EXPECT_EQ(root_.errors().back().message(), "Expected types to be consistent: [float, int32] vs. [float, float].");
  BatchJoin(root_, {{f}, {f, f}}, {.batch_size = 4});
  EXPECT_EQ(root_.errors().back().message(), "Expected types to be consistent: [float] vs. [float, float].");
  BatchJoin(root_, {{f}, {Const(root_, Tensor::Vec<float>({1, 2}))}}, {.batch_size = 4});
  EXPECT_EQ(root_.errors().back().message(),
            "batch_join: Expected shapes to be consistent: [] vs. [2] for tensor 0");
  ShuffleBatchJoin(root_, {{f}, {f}}, {.batch_size = 4, .capacity = 10, .min_after_dequeue = 10});
  EXPECT_EQ(root_.errors().back().message(), "capacity 10 must be bigger than min_after_dequeue 10.");
}

TEST_F(BatchingTest, ArgumentsAreValidatedAsTfDoes) {
  Output x = Const(root_, 1.0f);
  ShuffleBatch(root_, {x}, {.batch_size = 4, .capacity = 100, .min_after_dequeue = 100});
  ASSERT_FALSE(root_.ok());
  EXPECT_EQ(root_.errors().back().message(), "capacity 100 must be bigger than min_after_dequeue 100.");
  Batch(root_, {}, {.batch_size = 4});
  EXPECT_EQ(root_.errors().back().message(), "Expected at least one tensor in batch().");
  Batch(root_, {Placeholder(root_, kFloat32, PartialShape({-1, 3}))}, {.batch_size = 4});
  EXPECT_NE(root_.errors().back().message().find("All shapes must be fully specified: [[?,3]]"), std::string::npos)
      << root_.errors().back().ToString();
  tw::Batch nulls = Batch(root_, {x}, {.batch_size = 0});
  EXPECT_NE(root_.errors().back().message().find("batch_size must be in [1, 2^31), got 0"), std::string::npos);
  ASSERT_EQ(nulls.size(), 1u);
  EXPECT_FALSE(nulls[0].valid());
}

}  // namespace
}  // namespace tw::train
