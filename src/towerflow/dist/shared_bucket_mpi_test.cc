// Gradient buckets that the ranks of one host sum through memory they share
// (World::SharedBucket, dist/internal/shared_bucket.h), over real OpenMPI
// processes on this machine: SharedBucketMpiTest runs this binary under
// mpirun with the DISABLED_ rank program below on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "towerflow/data/queue_ops.h"
#include "towerflow/dist/collective_ops.h"
#include "towerflow/dist/mpirun_test_util.h"
#include "towerflow/dist/world.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"

namespace tw::dist {
namespace {

std::string Bytes(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

// A bucket of 150 KB (over kMinSharedBucketBytes) reduced through shared
// memory: after the first round (MPI's, which makes the memory) every round
// is summed by the ranks' shares, in rank order, divided as MPI's mean is:
// the bits a rank computes by itself from every rank's gradients. A rank
// that still holds the last round's outputs, or whose gradients are not in
// the block (another reader), sends every rank through MPI for that round,
// and what it holds is never written over.
TEST(SharedBucketRanks, DISABLED_SumAndFallBack) {
  auto started = World::Start({.collective_timeout_seconds = 60});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  const int r = w.rank(), n = w.size();
  EXPECT_EQ(w.NewSharedBucket(kFloat32, 100), nullptr) << "too small to gain";
  EXPECT_EQ(w.NewSharedBucket(kInt32, 1 << 20), nullptr) << "sums floats only";

  Graph graph;
  Scope root(graph);
  auto x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({}));
  const std::vector<TensorShape> shapes = {TensorShape{3}, TensorShape{20001}, TensorShape{17, 5}, TensorShape{1000},
                                           TensorShape{16384}};
  // Rank q's gradient k: value(q, k, i) * x.
  auto value = [](int q, size_t k, size_t i) {
    return 0.1f * static_cast<float>(q + 1) + 0.013f * static_cast<float>(i % 89 + k);
  };
  std::vector<Output> grads;
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<float> v(static_cast<size_t>(shapes[k].num_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = value(r, k, i);
    grads.push_back(Mul(root, Const(root, Tensor::FromVector(v, shapes[k])), x));
  }
  std::vector<Output> means = CrossProcessMean(root.NewSubScope("a"), grads);
  // Two buckets ({4}, 64 KiB, then the rest), each a sum that its consumer
  // divides: the trainer's momentum path.
  std::vector<Output> split_means = CrossProcessMean(
      root.NewSubScope("b"), grads, {.first_bucket_bytes = 40000, .divide_in_consumer = true});
  Output other_reader = Identity(root, grads[1]);
  // A queue holds what it is given (the tensor, not a copy).
  io::Queue queue = io::FIFOQueue(root.WithOpName("hold"), 4, {kFloat32});
  Node* enqueue = queue.Enqueue(root.WithOpName("hold_mean"), {means[1]});
  std::vector<Output> dequeued = queue.Dequeue(root.WithOpName("take_mean"));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  // The mean as the shared round makes it: rank order, then the division's bits.
  auto expected = [&](size_t k, size_t i, float xv) {
    float sum = value(0, k, i) * xv + value(1, k, i) * xv;
    for (int q = 2; q < n; ++q) sum += value(q, k, i) * xv;
    if ((n & (n - 1)) == 0) return sum * (1.0f / static_cast<float>(n));
    return sum / static_cast<float>(n);
  };
  auto check = [&](const std::vector<Tensor>& got, float xv, const std::string& when) {
    std::string bits;
    for (size_t k = 0; k < shapes.size(); ++k) {
      ASSERT_EQ(got[k].shape(), shapes[k]) << when;
      const float* g = got[k].data<float>();
      size_t wrong = 0;
      for (size_t i = 0; i < static_cast<size_t>(shapes[k].num_elements()); ++i) {
        // MPI's own rounds may add in another order (3 ranks): to rounding.
        wrong += std::fabs(g[i] - expected(k, i, xv)) > 1e-6f * std::fabs(expected(k, i, xv));
      }
      EXPECT_EQ(wrong, 0u) << when << ", gradient " << k;
      bits += Bytes(got[k].raw_data(), got[k].TotalBytes());
    }
    auto all = w.AllGather({}, bits);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (int q = 1; q < n; ++q) EXPECT_TRUE((*all)[static_cast<size_t>(q)] == (*all)[0]) << when << ", rank " << q;
  };
  const World::GradientStats before = w.gradient_stats();
  constexpr int kSteps = 4;
  for (int step = 0; step < kSteps; ++step) {
    const float xv = 1.0f + 0.37f * static_cast<float>(step);
    auto a = session.Run({{x, Tensor::Scalar<float>(xv)}}, means, {});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    check(*a, xv, "step " + std::to_string(step));
    if (step == 0) continue;
    // The shared round's bits are the rank-order sum's, exactly.
    for (size_t i = 0; i < 20001; ++i) {
      ASSERT_EQ((*a)[1].data<float>()[i], expected(1, i, xv)) << "element " << i << ", step " << step;
    }
  }
  const World::GradientStats stats = w.gradient_stats();
  EXPECT_EQ(stats.shared_calls - before.shared_calls, kSteps - 1) << "every round after the first";

  // Fetched outputs are the caller's copies: later rounds leave them be.
  {
    auto fetched = session.Run({{x, Tensor::Scalar<float>(3.5f)}}, means, {});
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    const std::string was = Bytes((*fetched)[1].raw_data(), (*fetched)[1].TotalBytes());
    const World::GradientStats mid = w.gradient_stats();
    ASSERT_TRUE(session.Run({{x, Tensor::Scalar<float>(4.5f)}}, means, {}).ok());
    EXPECT_EQ(w.gradient_stats().shared_calls - mid.shared_calls, 1);
    EXPECT_TRUE(Bytes((*fetched)[1].raw_data(), (*fetched)[1].TotalBytes()) == was);
  }
  // Rank 0's queue keeps a round's output: the next round goes through MPI
  // on every rank, and what the queue holds stays as it was.
  {
    std::vector<Node*> hold;
    if (r == 0) hold.push_back(enqueue);
    auto held = session.Run({{x, Tensor::Scalar<float>(3.5f)}}, means, hold);
    ASSERT_TRUE(held.ok()) << held.status().ToString();
    const std::string was = Bytes((*held)[1].raw_data(), (*held)[1].TotalBytes());
    const World::GradientStats mid = w.gradient_stats();
    auto next = session.Run({{x, Tensor::Scalar<float>(5.0f)}}, means, {});
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    check(*next, 5.0f, "a round while rank 0's queue held the last one's output");
    EXPECT_EQ(w.gradient_stats().shared_calls - mid.shared_calls, 0) << "MPI's round, on every rank";
    if (r == 0) {
      auto taken = session.Run({}, dequeued, {});
      ASSERT_TRUE(taken.ok()) << taken.status().ToString();
      EXPECT_TRUE(Bytes((*taken)[0].raw_data(), (*taken)[0].TotalBytes()) == was) << "held output written over";
    }
  }
  // Another reader of rank 0's gradient: rank 0 packs, every rank takes MPI.
  {
    const World::GradientStats mid = w.gradient_stats();
    std::vector<Output> fetch = means;
    if (r == 0) fetch.push_back(other_reader);
    auto a = session.Run({{x, Tensor::Scalar<float>(2.0f)}}, fetch, {});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    check(*a, 2.0f, "a round where rank 0 packed");
    EXPECT_EQ(w.gradient_stats().shared_calls - mid.shared_calls, 0);
    if (r == 0) {
      EXPECT_EQ((*a)[shapes.size()].data<float>()[5], value(0, 1, 5) * 2.0f) << "its own gradient";
    }
  }
  // And back to shared rounds.
  {
    const World::GradientStats mid = w.gradient_stats();
    for (int step = 0; step < 3; ++step) {
      auto a = session.Run({{x, Tensor::Scalar<float>(1.5f)}}, means, {});
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      check(*a, 1.5f, "again");
    }
    EXPECT_EQ(w.gradient_stats().shared_calls - mid.shared_calls, 3);
  }
  // Two shared buckets, each after its own first round.
  {
    const World::GradientStats mid = w.gradient_stats();
    for (int step = 0; step < 3; ++step) {
      auto a = session.Run({{x, Tensor::Scalar<float>(1.25f)}}, split_means, {});
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      check(*a, 1.25f, "two buckets, step " + std::to_string(step));
    }
    EXPECT_EQ(w.gradient_stats().calls - mid.calls, 6);
    EXPECT_EQ(w.gradient_stats().shared_calls - mid.shared_calls, 4);
  }
  session.Close();
  w.Finalize();
}

TEST(SharedBucketMpiTest, BucketsOfOneHostAreSummedInSharedMemory) {
  for (const int np : {2, 3}) {
    auto r = testing::RunRankProgram(np, "SharedBucketRanks.DISABLED_SumAndFallBack");
    EXPECT_EQ(r.exit_code, 0) << np << " ranks: " << r.output;
    EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace tw::dist
