// Coordinator, QueueRunner and string_input_producer: clean ends, errors that
// reach Join and the training loop, stragglers, and prompt shutdown.
#include "towerflow/data/queue_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>

#include "towerflow/data/input_producers.h"
#include "towerflow/data/register.h"
#include "towerflow/graph/ops/array_ops.h"

namespace tw::train {
namespace {

using namespace std::chrono_literals;

// Default threading: blocking queue kernels run on the session's blocking
// pool while other steps use the inter-op threads.
SessionOptions Opts() { return SessionOptions{}; }

class QueueRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { EnsureDataRegistered(); }
  Graph graph_;
  Scope root_{graph_};
};

TEST(CoordinatorTest, FirstErrorWinsAndOutOfRangeIsClean) {
  Coordinator clean;
  EXPECT_FALSE(clean.ShouldStop());
  EXPECT_FALSE(clean.WaitForStop(10ms));
  clean.RequestStop(errors::OutOfRange("end of data"));
  EXPECT_TRUE(clean.ShouldStop());
  EXPECT_TRUE(clean.WaitForStop(10ms));
  std::vector<std::thread> none;
  EXPECT_TRUE(clean.Join(none).ok());

  Coordinator failed;
  failed.RequestStop(errors::DataLoss("corrupted record at 12"));
  failed.RequestStop(errors::Internal("later"));  // already stopping: ignored
  std::vector<std::thread> threads;
  Status s = failed.Join(threads);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_EQ(s.message(), "corrupted record at 12");
  failed.ClearStop();
  EXPECT_FALSE(failed.ShouldStop());
  EXPECT_TRUE(failed.error().ok());
}

TEST(CoordinatorTest, JoinReturnsWhenEveryThreadEndsWithoutAStop) {
  Coordinator coord;
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.push_back(coord.StartThread("worker" + std::to_string(i), [&] { ++ran; }));
  EXPECT_TRUE(coord.Join(threads).ok());
  EXPECT_EQ(ran.load(), 3);
  EXPECT_TRUE(threads.empty());
  EXPECT_FALSE(coord.ShouldStop());
}

TEST(CoordinatorTest, JoinNamesAStraggler) {
  Coordinator coord;
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto finished = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::thread> threads;
  threads.push_back(coord.StartThread("polite", [coord]() mutable { coord.WaitForStop(); }));
  threads.push_back(coord.StartThread("stubborn", [release, finished] {
    while (!*release) std::this_thread::sleep_for(1ms);
    *finished = true;
  }));
  coord.RequestStop();
  const auto start = std::chrono::steady_clock::now();
  Status s = coord.Join(threads, 50ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_EQ(s.message(), "Coordinator stopped with threads still running: stubborn");
  *release = true;  // the detached straggler owns what it uses
  while (!*finished) std::this_thread::sleep_for(1ms);
}

TEST_F(QueueRunnerTest, StringInputProducerDeliversEachNameNumEpochsTimes) {
  const std::vector<std::string> files = {"a.tfrecord", "b.tfrecord", "c.tfrecord", "d.tfrecord"};
  io::Queue q = StringInputProducer(root_, files, {.num_epochs = 3, .seed = 11});
  auto name = q.Dequeue(root_)[0];
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(q.name(), "input_producer");
  ASSERT_EQ(QueueRunners(graph_).size(), 1u);
  Session s(graph_, Opts());
  ASSERT_TRUE(s.Run(LocalVariablesInitializer(graph_)).ok());
  Coordinator coord;
  auto threads = StartQueueRunners(s, coord);
  EXPECT_EQ(threads.size(), 2u);  // one enqueue thread, one cancel thread
  std::vector<std::string> got;
  Status end;
  while (!coord.ShouldStop()) {
    auto r = s.Run({name});
    if (!r.ok()) {
      end = r.status();
      break;
    }
    got.push_back((*r)[0].scalar<std::string>());
  }
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  EXPECT_NE(end.message().find("FIFOQueue 'input_producer' is closed and has insufficient elements "
                               "(requested 1, current size 0)"),
            std::string::npos)
      << end.ToString();
  coord.RequestStop(end);
  EXPECT_TRUE(coord.Join(threads).ok());
  ASSERT_EQ(got.size(), 12u);
  // One thread enqueues whole epochs: every 4 names are a permutation.
  bool shuffled = false;
  for (size_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::string> e(got.begin() + static_cast<long>(4 * epoch), got.begin() + static_cast<long>(4 * epoch + 4));
    shuffled |= e != files;
    std::sort(e.begin(), e.end());
    EXPECT_EQ(e, files) << "epoch " << epoch;
  }
  EXPECT_TRUE(shuffled);
}

TEST_F(QueueRunnerTest, ProducerArgumentsAreValidatedAsTfDoes) {
  StringInputProducer(root_, {});
  ASSERT_FALSE(root_.ok());
  EXPECT_EQ(root_.errors().back().code(), Code::kInvalidArgument);
  EXPECT_EQ(root_.errors().back().message(), "string_input_producer requires a non-null input tensor");
  StringInputProducer(root_, {"x"}, {.num_epochs = 0});
  EXPECT_EQ(root_.errors().back().message(), "num_epochs must be > 0 not 0.");
}

TEST_F(QueueRunnerTest, AnErrorInARunnerReachesJoinAndTheTrainingLoop) {
  auto q = io::FIFOQueue(root_, 4, {kFloat32}, {.shapes = {TensorShape{}}});
  auto never_fed = Placeholder(root_.WithOpName("never_fed"), kFloat32, PartialShape({}));
  Node* enq = q.Enqueue(root_, {never_fed});
  auto deq = q.Dequeue(root_)[0];
  AddQueueRunner(graph_, QueueRunner(root_, q, {enq, enq}));
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session s(graph_, Opts());
  Coordinator coord;
  auto threads = StartQueueRunners(s, coord);
  int steps = 0;
  Status loop_error;
  while (!coord.ShouldStop()) {
    auto r = s.Run({deq});  // blocks until the failure stops everything and closes the queue
    if (!r.ok()) {
      loop_error = r.status();
      coord.RequestStop(loop_error);
      break;
    }
    ++steps;
  }
  EXPECT_EQ(steps, 0);
  EXPECT_TRUE(coord.ShouldStop());
  Status joined = coord.Join(threads, 1s);
  EXPECT_EQ(joined.code(), Code::kInvalidArgument) << joined.ToString();
  EXPECT_NE(joined.message().find("You must feed a value for placeholder tensor 'never_fed'"), std::string::npos)
      << joined.ToString();
}

TEST_F(QueueRunnerTest, StopEndsThreadsBlockedOnAFullQueueWithinASecond) {
  auto q = io::FIFOQueue(root_, 2, {kInt32}, {.shapes = {TensorShape{}}});
  Node* enq = q.Enqueue(root_, {Const(root_, 1)});
  QueueRunner runner(root_, q, {enq, enq, enq});
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  Coordinator coord;
  auto threads = runner.CreateThreads(s, &coord);
  ASSERT_EQ(threads.size(), 4u);
  EXPECT_TRUE(runner.CreateThreads(s, &coord).empty());  // still running for this session
  std::this_thread::sleep_for(100ms);                     // all three are blocked now
  const auto start = std::chrono::steady_clock::now();
  coord.RequestStop();
  EXPECT_TRUE(coord.Join(threads, 1s).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST_F(QueueRunnerTest, SessionCloseEndsBlockedRunners) {
  auto q = io::FIFOQueue(root_, 1, {kInt32}, {.shapes = {TensorShape{}}});
  Node* enq = q.Enqueue(root_, {Const(root_, 1)});
  AddQueueRunner(graph_, QueueRunner(root_, q, {enq, enq}));
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  Coordinator coord;
  auto threads = StartQueueRunners(s, coord);
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  s.Close();  // the blocked enqueue is cancelled; its thread stops the coordinator
  Status joined = coord.Join(threads, 1s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(joined.code(), Code::kCancelled) << joined.ToString();
}

TEST_F(QueueRunnerTest, RunnersWithoutACoordinatorKeepTheirErrors) {
  auto q = io::FIFOQueue(root_, 4, {kFloat32}, {.shapes = {TensorShape{}}});
  Node* enq = q.Enqueue(root_, {Placeholder(root_, kFloat32, PartialShape({}))});
  QueueRunner runner(root_, q, {enq});
  ASSERT_TRUE(root_.ok());
  Session s(graph_, Opts());
  auto threads = runner.CreateThreads(s);
  ASSERT_EQ(threads.size(), 1u);  // no cancel thread without a coordinator
  threads[0].join();
  ASSERT_EQ(runner.exceptions_raised().size(), 1u);
  EXPECT_EQ(runner.exceptions_raised()[0].code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tw::train
