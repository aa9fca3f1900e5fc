// The pitfall detector: towers fed by one dequeue built outside them are found
// (and a session warns, or fails with strict_tower_inputs); per-tower dequeues,
// a batch split into per-tower slices, and an average of the towers' losses are
// not findings.
#include "towerflow/runtime/pitfall_detector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "towerflow/data/queue_ops.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using ::testing::HasSubstr;

constexpr char kSharedMessage[] =
    "towers tower_0 (/device:GPU:0) and tower_1 (/device:GPU:1) both consume 'fifo_queue_DequeueMany' built once "
    "outside the towers: all towers will train on the same batch. Dequeue inside each tower: build the dequeue "
    "in the tower's scope (with tw::train::Replicate, the batch source is called once per tower with that tower's "
    "scope and must build a new dequeue there, not return one built before).";

class PitfallDetectorTest : public ::testing::Test {
 protected:
  io::Queue MakeQueue() {
    io::FIFOQueueOptions options;
    options.shapes = {TensorShape{4}};
    return io::FIFOQueue(root_, 100, {kFloat32}, options);
  }
  // One tower's model and loss: mean(x . w), a scalar.
  Output Tower(const Scope& s, const Output& x) {
    auto w = Const(s.WithOpName("w"), std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}, TensorShape{4, 1});
    return Mean(s.WithOpName("loss"), MatMul(s.WithOpName("logits"), x, w), {0, 1});
  }
  Scope TowerScope(int i, const std::string& device_type = "gpu") {
    return root_.NewSubScope("tower_" + std::to_string(i)).WithDevice("/" + device_type + ":" + std::to_string(i));
  }
  // The seed's pitfall: one dequeue, two towers.
  void BuildSharedBatch(const std::string& device_type = "gpu") {
    io::Queue q = MakeQueue();
    std::vector<Output> batch = q.DequeueMany(root_, 2);
    ASSERT_EQ(batch.size(), 1u);
    for (int i = 0; i < 2; ++i) losses_.push_back(Tower(TowerScope(i, device_type), batch[0]));
    ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  }

  Graph graph_;
  Scope root_{graph_};
  std::vector<Output> losses_;
};

TEST_F(PitfallDetectorTest, SharedDequeueIsFound) {
  BuildSharedBatch();
  std::vector<SharedBatchFinding> findings = FindSharedBatchesByRequest(graph_);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].dequeue->name(), "fifo_queue_DequeueMany");
  ASSERT_EQ(findings[0].towers.size(), 2u);
  EXPECT_EQ(findings[0].towers[1].name, "tower_1");
  EXPECT_EQ(findings[0].towers[1].device, "/device:GPU:1");
  EXPECT_EQ(findings[0].towers[1].loss, losses_[1].node);
  EXPECT_EQ(findings[0].Message(), kSharedMessage);
}

TEST_F(PitfallDetectorTest, SessionWarnsOnceAtCreation) {
  BuildSharedBatch();
  SessionOptions options;
  options.num_fake_gpus = 2;
  ::testing::internal::CaptureStderr();
  {
    Session session(graph_, options);
    EXPECT_EQ(FindSharedBatches(graph_, session.impl().placement()).size(), 1u);
    // A later placement (a new node, a new plan) does not warn again.
    auto extra = Const(root_.WithOpName("extra"), 1.0f);
    ASSERT_TRUE(session.Run({extra}).ok());
    EXPECT_EQ(session.impl().placement().num_nodes(), graph_.num_nodes());
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr(std::string("W towerflow: ") + kSharedMessage));
  EXPECT_EQ(err.find(kSharedMessage), err.rfind(kSharedMessage)) << "warned more than once:\n" << err;
}

TEST_F(PitfallDetectorTest, StrictTowerInputsMakesItAnError) {
  BuildSharedBatch();
  SessionOptions options;
  options.num_fake_gpus = 2;
  options.strict_tower_inputs = true;
  Session session(graph_, options);
  auto out = session.Run({losses_[0]});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr(kSharedMessage));
}

TEST_F(PitfallDetectorTest, VirtualCpuTowersToo) {
  BuildSharedBatch("cpu");
  SessionOptions options;
  options.num_cpu_devices = 2;
  ::testing::internal::CaptureStderr();
  Session session(graph_, options);
  std::vector<SharedBatchFinding> findings = FindSharedBatches(graph_, session.impl().placement());
  ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_THAT(findings[0].Message(), HasSubstr("towers tower_0 (/device:CPU:0) and tower_1 (/device:CPU:1) both"));
}

TEST_F(PitfallDetectorTest, PerTowerDequeuesAreFine) {
  io::Queue q = MakeQueue();
  std::vector<Output> losses;
  for (int i = 0; i < 3; ++i) {
    Scope s = TowerScope(i);
    losses.push_back(Tower(s, q.DequeueMany(s, 2)[0]));
  }
  // An average of the towers' losses, reported on the CPU, is no tower.
  auto avg = Mean(root_.WithOpName("avg_loss").WithDevice("/cpu:0"),
                  Reshape(root_.WithDevice("/cpu:0"), AddN(root_.WithDevice("/cpu:0"), losses), {1}), {0});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(avg.valid());
  EXPECT_TRUE(FindSharedBatchesByRequest(graph_).empty());
  SessionOptions options;
  options.num_fake_gpus = 3;
  options.strict_tower_inputs = true;
  Session session(graph_, options);
  EXPECT_TRUE(FindSharedBatches(graph_, session.impl().placement()).empty());
}

TEST_F(PitfallDetectorTest, ThreeTowersOnOneBatchAreAllNamed) {
  io::Queue q = MakeQueue();
  Output batch = q.DequeueMany(root_, 2)[0];
  for (int i = 0; i < 3; ++i) Tower(TowerScope(i), batch);
  ASSERT_TRUE(root_.ok());
  std::vector<SharedBatchFinding> findings = FindSharedBatchesByRequest(graph_);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_THAT(findings[0].Message(),
              HasSubstr("towers tower_0 (/device:GPU:0), tower_1 (/device:GPU:1) and tower_2 (/device:GPU:2) all "
                        "consume"));
}

TEST_F(PitfallDetectorTest, ABatchSplitIntoPerTowerSlicesIsFine) {
  io::Queue q = MakeQueue();
  Output batch = q.DequeueMany(root_, 4)[0];
  for (int i = 0; i < 2; ++i) {
    Scope s = TowerScope(i);
    Tower(s, Slice(s, batch, std::vector<int32_t>{2 * i, 0}, std::vector<int32_t>{2, 4}));
  }
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_TRUE(FindSharedBatchesByRequest(graph_).empty());
}

TEST_F(PitfallDetectorTest, OneTowerIsNoFinding) {
  io::Queue q = MakeQueue();
  Tower(TowerScope(0), q.DequeueMany(root_, 2)[0]);
  ASSERT_TRUE(root_.ok());
  EXPECT_TRUE(FindSharedBatchesByRequest(graph_).empty());
}

}  // namespace
}  // namespace tw

namespace tw {
namespace {

// Per-tower dequeues, towers trained (gradients of each loss), plus a metric
// over every tower's batch on the CPU: the metric is no tower, so no finding.
// The same metric over a shared batch still finds the shared batch.
TEST(PitfallDetectorMetricsTest, AMetricOverAllTowersIsNoTower) {
  for (bool shared : {false, true}) {
    Graph graph;
    Scope root(graph);
    io::FIFOQueueOptions options;
    options.shapes = {TensorShape{4}};
    io::Queue q = io::FIFOQueue(root, 100, {kFloat32}, options);
    Output once = shared ? q.DequeueMany(root, 2)[0] : Output();
    std::vector<Output> per_example;
    for (int i = 0; i < 2; ++i) {
      Scope s = root.NewSubScope("tower_" + std::to_string(i)).WithDevice("/cpu:" + std::to_string(i));
      Output x = shared ? once : q.DequeueMany(s, 2)[0];
      auto w = Const(s.WithOpName("w"), std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}, TensorShape{4, 1});
      Output logits = MatMul(s.WithOpName("logits"), x, w);
      Output loss = Mean(s.WithOpName("loss"), logits, {0, 1});
      ASSERT_TRUE(Gradients(s, {loss}, {w}).ok());
      per_example.push_back(Reshape(s, logits, {-1}));
    }
    Scope cpu = root.WithDevice("/cpu:0");
    Output accuracy = Mean(cpu.WithOpName("accuracy"), Concat(cpu, per_example, 0), {0});
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    ASSERT_TRUE(accuracy.valid());
    std::vector<SharedBatchFinding> findings = FindSharedBatchesByRequest(graph);
    if (!shared) {
      EXPECT_TRUE(findings.empty()) << findings[0].Message();
    } else {
      ASSERT_EQ(findings.size(), 1u);
      EXPECT_EQ(findings[0].towers[0].name, "tower_0");
      EXPECT_EQ(findings[0].towers[1].name, "tower_1");
    }
  }
}

}  // namespace
}  // namespace tw
