// The multi-process world over real OpenMPI processes on this machine. Each
// WorldMpiTest runs this binary under mpirun (mpirun_test_util.h) with one of
// the DISABLED_ rank programs below selected by --gtest_filter: each rank runs
// the program, and mpirun's exit status says whether every rank passed.
#include "towerflow/dist/world.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>

#include "towerflow/data/iterator_ops.h"
#include "towerflow/dist/collective_ops.h"
#include "towerflow/dist/internal/collective_call.h"
#include "towerflow/dist/launch.h"
#include "towerflow/dist/mpirun_test_util.h"
#include "towerflow/dist/sharding.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/runtime/plan.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw::dist {
namespace {

testing::ShellResult RunRanks(int np, const std::string& program, int timeout_seconds = 120) {
  return testing::RunRankProgram(np, "WorldRanks.DISABLED_" + program, timeout_seconds);
}

Tensor Filled(const TensorShape& shape, float value) {
  return Tensor::FromVector(std::vector<float>(static_cast<size_t>(shape.num_elements()), value), shape);
}

std::string Bytes(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

// ---- rank programs (run by mpirun, one per process) ----

TEST(WorldRanks, DISABLED_Collectives) {
  auto started = World::Start({.collective_timeout_seconds = 60});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  const int r = w.rank(), n = w.size();
  ASSERT_EQ(n, 3);
  ASSERT_EQ(static_cast<int>(w.hosts().size()), n);
  EXPECT_EQ(w.local_size(), 3);  // one host

  // The mean of floats: within rounding of the exact mean, and the same bits
  // everywhere, for a small buffer and one large enough for MPI's ring
  // algorithms (not a multiple of the ranks either).
  for (const int count : {1001, 1 << 20 | 1}) {
    std::vector<float> x(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) x[static_cast<size_t>(i)] = static_cast<float>((r + 1) * 0.1 * (i % 977 + 1) / 7.0);
    ASSERT_TRUE(w.AllReduce({.what = "mean"}, kFloat32, x.data(), count, ReduceOp::kMean).ok());
    for (int i = 0; i < count; ++i) {
      double exact = 0;
      for (int k = 0; k < n; ++k) exact += (k + 1) * 0.1 * (i % 977 + 1) / 7.0;
      exact /= n;
      ASSERT_NEAR(x[static_cast<size_t>(i)], exact, 1e-6 * std::abs(exact)) << "element " << i << " of " << count;
    }
    auto all = w.AllGather({}, Bytes(x.data(), x.size() * sizeof(float)));
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (int k = 1; k < n; ++k) {
      EXPECT_TRUE((*all)[static_cast<size_t>(k)] == (*all)[0]) << "rank " << k << "'s bits differ, " << count;
    }
  }

  // Pieces: one all-reduce of several tensors end to end, each read from
  // its input and written to its output (the same memory or another), the
  // mean divided as it is written; an empty piece takes no room.
  {
    std::vector<float> a(300), b_in(70001), b_out(70001, -1.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(r * 3 + static_cast<int>(i % 5));
    for (size_t i = 0; i < b_in.size(); ++i) b_in[i] = static_cast<float>((r + 1) * static_cast<int>(i % 11));
    const std::vector<float> b_before = b_in;
    const std::vector<World::Piece> pieces = {{a.data(), a.data(), 300}, {nullptr, nullptr, 0},
                                              {b_in.data(), b_out.data(), 70001}};
    ASSERT_TRUE(w.AllReduce({.what = "pieces"}, kFloat32, pieces, ReduceOp::kMean).ok());
    // Small integers: the sums are exact, and so is their division.
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i], static_cast<float>(9 + 3 * static_cast<int>(i % 5)) / 3.0f) << i;
    }
    for (size_t i = 0; i < b_out.size(); ++i) ASSERT_EQ(b_out[i], static_cast<float>(6 * (i % 11)) / 3.0f) << i;
    EXPECT_EQ(b_in, b_before) << "a separate input is only read";
    std::vector<int32_t> counts = {r, 2 * r};
    ASSERT_TRUE(w.AllReduce({}, kInt32, {{counts.data(), counts.data(), 2}}, ReduceOp::kSum).ok());
    EXPECT_EQ(counts, (std::vector<int32_t>{3, 6}));
  }

  int64_t sum = r + 1, max = 10 * r;
  ASSERT_TRUE(w.AllReduce({}, kInt64, &sum, 1, ReduceOp::kSum).ok());
  ASSERT_TRUE(w.AllReduce({}, kInt64, &max, 1, ReduceOp::kMax).ok());
  EXPECT_EQ(sum, 6);
  EXPECT_EQ(max, 20);

  std::vector<int32_t> b(5, r);
  ASSERT_TRUE(w.Broadcast({}, b.data(), static_cast<int64_t>(b.size() * sizeof(int32_t)), 2).ok());
  EXPECT_EQ(b, std::vector<int32_t>(5, 2));

  auto names = w.AllGather({}, std::string(static_cast<size_t>(r), 'x'));  // rank 0 sends nothing
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"", "x", "xx"}));

  // An all-reduce issued without waiting: the caller's buffer is copied (it
  // may change at once), a gradients call completes meanwhile, and the
  // result comes with Wait; one never waited for finishes on its own, and
  // the channel's next call still pairs with the other ranks'.
  for (int round = 0; round < 3; ++round) {
    double m[2] = {static_cast<double>(r), 1.0};
    auto pending = w.StartAllReduce({.what = "late"}, kFloat64, m, 2, ReduceOp::kSum);
    ASSERT_TRUE(pending.ok()) << pending.status().ToString();
    m[0] = -100;
    double grad = r;
    ASSERT_TRUE(w.AllReduce({.channel = Channel::kGradients, .what = "meanwhile"}, kFloat64, &grad, 1,
                            ReduceOp::kSum).ok());
    EXPECT_EQ(grad, 3.0);
    if (round == 1) continue;  // dropped unwaited
    double out[2] = {};
    ASSERT_TRUE((*pending)->Wait(out).ok());
    EXPECT_EQ(out[0], 3.0);
    EXPECT_EQ(out[1], 3.0);
    EXPECT_EQ((*pending)->Wait(out).code(), Code::kFailedPrecondition) << "waited for once";
  }

  // Buckets submitted from several threads in a different order on every
  // rank are issued in bucket order everywhere.
  std::mt19937 rng(static_cast<unsigned>(r) * 7919u + 1u);
  for (int round = 0; round < 20; ++round) {
    constexpr int kBuckets = 4;
    std::vector<std::vector<double>> data(kBuckets);
    std::vector<Status> status(kBuckets);
    std::vector<int> order = {0, 1, 2, 3};
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::thread> threads;
    for (int k : order) {
      data[static_cast<size_t>(k)].assign(static_cast<size_t>(10 + k), (r + 1) * (k + 1));
      threads.emplace_back([&, k] {
        status[static_cast<size_t>(k)] =
            w.AllReduce({.channel = Channel::kGradients, .bucket = k, .num_buckets = kBuckets, .what = ""}, kFloat64,
                        data[static_cast<size_t>(k)].data(), 10 + k, ReduceOp::kSum);
      });
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    }
    for (auto& t : threads) t.join();
    for (int k = 0; k < kBuckets; ++k) {
      ASSERT_TRUE(status[static_cast<size_t>(k)].ok()) << status[static_cast<size_t>(k)].ToString();
      EXPECT_EQ(data[static_cast<size_t>(k)], std::vector<double>(static_cast<size_t>(10 + k), 6.0 * (k + 1)));
    }
  }

  // Channels are independent: rank 0 makes its control call first, the others
  // their gradients call first; each blocks until the others make the same call.
  double g = r, c = r;
  std::thread grads([&] {
    if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(w.AllReduce({.channel = Channel::kGradients, .bucket = 0, .num_buckets = 1, .what = ""}, kFloat64, &g, 1, ReduceOp::kSum).ok());
  });
  if (r != 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(w.AllReduce({.channel = Channel::kControl, .bucket = 0, .num_buckets = 1, .what = ""}, kFloat64, &c, 1, ReduceOp::kSum).ok());
  grads.join();
  EXPECT_EQ(g, 3.0);
  EXPECT_EQ(c, 3.0);
  w.Finalize();
  EXPECT_EQ(World::Current(), nullptr);
}

// The graph ops: a bucketed mean of gradients and the broadcast of variables.
TEST(WorldRanks, DISABLED_GraphOps) {
  auto started = World::Start({.collective_timeout_seconds = 60});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  const float r = static_cast<float>(w.rank());
  Graph graph;
  Scope root(graph);
  std::vector<Output> grads;
  for (int k = 0; k < 5; ++k) {
    // 300 KiB each: buckets of 1 MiB, then 25 MiB, split them 4 + 1.
    grads.push_back(Const(root, Filled(TensorShape{300, 256}, r * 10 + static_cast<float>(k))));
  }
  grads.insert(grads.begin() + 2, Output());  // a variable without a gradient
  grads.push_back(Const(root, Tensor::Scalar<double>(r)));
  std::vector<Output> mean = CrossProcessMean(root, grads);
  Variable v = GetVariable(root, "v", TensorShape{3}, {.initializer = nullptr});
  Variable step = GetVariable(root, "step", TensorShape{}, {.dtype = kInt64});
  Node* set_v = Assign(root, v, Const(root, Filled(TensorShape{3}, r))).node;
  Node* set_step = Assign(root, step, Const(root, Tensor::Scalar<int64_t>(static_cast<int64_t>(r) + 100))).node;
  Node* broadcast = BroadcastVariables(root, {v, step}, /*root=*/1);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_FALSE(mean[2].valid());
  Session session(graph);
  std::vector<Output> fetch;
  for (const Output& m : mean) {
    if (m.valid()) fetch.push_back(m);
  }
  for (int round = 0; round < 3; ++round) {
    auto out = session.Run(fetch);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    for (int k = 0; k < 5; ++k) {
      const Tensor& t = (*out)[static_cast<size_t>(k)];
      EXPECT_FLOAT_EQ(t.data<float>()[0], 10.0f + static_cast<float>(k)) << "gradient " << k;  // mean of 0,10,20 + k
      EXPECT_FLOAT_EQ(t.data<float>()[t.NumElements() - 1], 10.0f + static_cast<float>(k));
    }
    EXPECT_DOUBLE_EQ((*out)[5].scalar<double>(), 1.0);
  }
  auto sizes = session.Run({ProcessSize(root, kFloat32), ProcessSize(root, kInt64)});
  ASSERT_TRUE(sizes.ok()) << sizes.status().ToString();
  EXPECT_EQ((*sizes)[0].scalar<float>(), 3.0f);
  EXPECT_EQ((*sizes)[1].scalar<int64_t>(), 3);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  ASSERT_TRUE(session.Run(set_v).ok());
  ASSERT_TRUE(session.Run(set_step).ok());
  ASSERT_TRUE(session.Run(broadcast).ok());
  auto values = session.Run({v.value, step.value});
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  EXPECT_EQ((*values)[0].data<float>()[2], 1.0f);
  EXPECT_EQ((*values)[1].scalar<int64_t>(), 101);
  session.Close();
  w.Finalize();
}

// A gradient bucket made by kernels every step: from the second step its
// producers make the gradients end to end in the bucket's block, reduced in
// place (internal/bucket_buffer.h). The same bits on every rank, and as the
// packed path (the same gradients with another reader, which keeps the
// kernel from writing over them: packed with the layout's gaps, the same
// call); ranks that disagree on in place or packed still make one call.
// World::AllReduceInPlace on its own.
TEST(WorldRanks, DISABLED_InPlaceBuckets) {
  auto started = World::Start({.collective_timeout_seconds = 60});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  const int r = w.rank(), n = w.size();

  {
    auto block = std::make_shared<std::vector<double>>(1000, r + 0.25);
    ASSERT_TRUE(w.AllReduceInPlace({.what = "direct"}, kFloat64, block->data(), 1000, ReduceOp::kMean, block).ok());
    const double expected = (n * (n - 1) / 2.0 + 0.25 * n) / n;
    EXPECT_DOUBLE_EQ((*block)[999], expected);
  }

  Graph graph;
  Scope root(graph);
  auto x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({}));
  // Sizes that leave gaps between the 64-byte aligned slots.
  const std::vector<TensorShape> shapes = {TensorShape{3}, TensorShape{1001}, TensorShape{17, 5}, TensorShape{16}};
  std::vector<Output> grads, packed_grads, other_readers;
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<float> v(static_cast<size_t>(shapes[k].num_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(r + 1) + 0.01f * static_cast<float>(i % 97 + k);
    Output c = Const(root, Tensor::FromVector(v, shapes[k]));
    grads.push_back(Mul(root, c, x));
    packed_grads.push_back(Mul(root, c, x));
    other_readers.push_back(Identity(root, packed_grads.back()));
  }
  std::vector<Output> in_place = CrossProcessMean(root.NewSubScope("a"), grads);
  std::vector<Output> packed = CrossProcessMean(root.NewSubScope("b"), packed_grads);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  const int64_t calls_before = w.gradient_stats().calls, in_place_before = w.gradient_stats().in_place_calls;
  constexpr int kSteps = 4;
  for (int step = 0; step < kSteps; ++step) {
    const FeedList feed = {{x, Tensor::Scalar<float>(1.0f + 0.37f * static_cast<float>(step))}};
    // One bucket per run: the two means are two calls of bucket 0.
    auto a = session.Run(feed, in_place, {});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    std::vector<Output> fetch_b = packed;
    fetch_b.insert(fetch_b.end(), other_readers.begin(), other_readers.end());
    auto b = session.Run(feed, fetch_b, {});
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    std::string bits;
    for (size_t k = 0; k < shapes.size(); ++k) {
      const Tensor& ta = (*a)[k];
      const Tensor& tb = (*b)[k];
      ASSERT_EQ(ta.shape(), shapes[k]);
      // The packed call has the layout's gaps too: the same call, the same bits.
      ASSERT_EQ(std::memcmp(ta.raw_data(), tb.raw_data(), ta.TotalBytes()), 0) << "gradient " << k << ", step " << step;
      bits += Bytes(ta.raw_data(), ta.TotalBytes());
      // The other reader saw this rank's own gradient, not the mean.
      const Tensor& own = (*b)[shapes.size() + k];
      EXPECT_NEAR(own.data<float>()[0], (0.1f * static_cast<float>(r + 1) + 0.01f * static_cast<float>(k)) *
                                            (1.0f + 0.37f * static_cast<float>(step)), 1e-5);
    }
    auto all = w.AllGather({}, bits);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (int k = 1; k < n; ++k) EXPECT_TRUE((*all)[static_cast<size_t>(k)] == (*all)[0]) << "rank " << k;
  }
  const World::GradientStats stats = w.gradient_stats();
  EXPECT_EQ(stats.calls - calls_before, 2 * kSteps);
  EXPECT_EQ(stats.in_place_calls - in_place_before, kSteps - 1) << "every step of the first bucket after its first";

  // Ranks that disagree: rank 0 also fetches a gradient (another reader: it
  // packs), the others reduce in place. Every call still has the layout's
  // length and places: the same means everywhere.
  for (int step = 0; step < 3; ++step) {
    const FeedList feed = {{x, Tensor::Scalar<float>(2.0f + static_cast<float>(step))}};
    std::vector<Output> fetch = in_place;
    if (r == 0) fetch.push_back(grads[1]);
    auto a = session.Run(feed, fetch, {});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    std::string bits;
    for (size_t k = 0; k < shapes.size(); ++k) bits += Bytes((*a)[k].raw_data(), (*a)[k].TotalBytes());
    auto all = w.AllGather({}, bits);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (int k = 1; k < n; ++k) EXPECT_TRUE((*all)[static_cast<size_t>(k)] == (*all)[0]) << "rank " << k;
    if (r == 0) {  // its own gradient, not the mean
      EXPECT_NEAR((*a)[shapes.size()].data<float>()[0], (0.1f + 0.01f) * (2.0f + static_cast<float>(step)), 1e-5);
    }
  }
  const World::GradientStats later = w.gradient_stats();
  EXPECT_EQ(later.in_place_calls - stats.in_place_calls, r == 0 ? 0 : 3);
  session.Close();
  w.Finalize();
}

// DistributeDataset: each rank reads its part of a dataset through a graph
// iterator with two GetNext (two towers), each rank shuffling with a seed of
// its own; every element is read once in the job.
TEST(WorldRanks, DISABLED_DistributedDatasets) {
  auto started = World::Start({.collective_timeout_seconds = 60});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  constexpr int kElements = 40;
  const data::Dataset mine =
      DistributeDataset(data::Dataset::Range(kElements).Shuffle(kElements, {.seed = 5 + w.rank()}).Batch(2));
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  Graph graph;
  Scope root(graph);
  data::GraphIterator it = data::MakeIterator(root, mine);
  std::vector<Output> towers = {it.GetNext(root.NewSubScope("tower_0"))[0],
                                it.GetNext(root.NewSubScope("tower_1"))[0]};
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  std::vector<float> counts(kElements, 0.0f);
  int read = 0;
  while (true) {
    auto out = session.Run(towers);
    if (!out.ok()) {
      EXPECT_EQ(out.status().code(), Code::kOutOfRange) << out.status().ToString();
      break;
    }
    for (const Tensor& batch : *out) {
      for (int64_t x : batch.ToVector<int64_t>()) {
        counts[static_cast<size_t>(x)] += 1;
        ++read;
      }
    }
  }
  EXPECT_GE(read, 12) << "a third of 40, less what the last step could not pair";
  ASSERT_TRUE(w.AllReduce({.what = "counts"}, kFloat32, counts.data(), kElements, ReduceOp::kSum).ok());
  float total = 0;
  for (int x = 0; x < kElements; ++x) {
    EXPECT_LE(counts[static_cast<size_t>(x)], 1.0f) << "element " << x;
    total += counts[static_cast<size_t>(x)];
  }
  EXPECT_GE(total, kElements - 3 * 2) << "each rank may leave one batch of 2 unpaired";
  session.Close();
  w.Finalize();
}

// Rank 1 never joins a call: rank 0 names it and ends the job.
TEST(WorldRanks, DISABLED_Timeout) {
  static std::atomic<int> timeouts{0};
  auto started = World::Start({.collective_timeout_seconds = 1, .on_timeout = [](const Status& s) {
                                 std::printf("on_timeout %d: %s\n", timeouts.fetch_add(1) + 1, s.ToString().c_str());
                                 std::fflush(stdout);
                               }});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  w.set_step(17);
  double x = 1;
  if (w.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // "hangs"; the job ends before
  }
  Status s = w.AllReduce({.channel = Channel::kGradients, .bucket = 0, .num_buckets = 2, .what = "bucket_0"}, kFloat64,
                         &x, 1, ReduceOp::kSum);
  // A second call fails at once, and the hook is not called again.
  Status again = w.AllReduce({.channel = Channel::kGradients, .bucket = 1, .num_buckets = 2, .what = "bucket_1"},
                             kFloat64, &x, 1, ReduceOp::kSum);
  std::printf("rank %d: %s; again the same: %d; hook calls: %d\n", w.rank(), s.ToString().c_str(),
              again.ToString() == s.ToString(), timeouts.load());
  std::fflush(stdout);
  w.Abort(3);
}

// ---- the tests (run by ctest) ----

TEST(WorldMpiTest, CollectivesAreExactOrderedAndIdenticalOnEveryRank) {
  auto r = RunRanks(3, "Collectives");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
}

TEST(WorldMpiTest, GraphOpsReduceBucketsAndBroadcastVariables) {
  auto r = RunRanks(3, "GraphOps");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(WorldMpiTest, RanksReadDisjointPartsOfADistributedDataset) {
  auto r = RunRanks(3, "DistributedDatasets");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
}

TEST(WorldMpiTest, BucketsMadeEndToEndAreReducedInPlaceAsWhenPacked) {
  for (const int np : {2, 3}) {
    auto r = RunRanks(np, "InPlaceBuckets");
    EXPECT_EQ(r.exit_code, 0) << np << " ranks: " << r.output;
    EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
  }
}

TEST(WorldMpiTest, AHungRankIsNamedAndTheJobEndsWithinTheTimeout) {
  auto r = RunRanks(3, "Timeout", 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job did not end by itself: " << r.output;
  EXPECT_LT(r.seconds, 40) << r.output;
  EXPECT_NE(r.output.find("rank 0 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("never joined it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 17"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DeadlineExceeded"), std::string::npos) << r.output;
  // Rank 0's hook said it before the call returned, once.
  const size_t hook = r.output.find("on_timeout 1: DeadlineExceeded: rank 0 (");
  const size_t returned = r.output.find("rank 0: DeadlineExceeded");
  ASSERT_NE(hook, std::string::npos) << r.output;
  ASSERT_NE(returned, std::string::npos) << r.output;
  EXPECT_LT(hook, returned) << r.output;
  EXPECT_NE(r.output.find("again the same: 1; hook calls: 1", returned), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("on_timeout 2"), std::string::npos) << r.output;
}

// The mean's division as the result is copied out: for a power of two ranks a
// multiplication by the exact inverse, bit for bit the division, across the
// whole range (subnormal results included); for any other count the division.
template <typename T, typename Bits>
void ExpectTheDivisionsBits(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> sums;
  for (int i = 0; i < 20000; ++i) {
    Bits bits = static_cast<Bits>(rng());
    T x;
    std::memcpy(&x, &bits, sizeof(x));
    sums.push_back(x);
  }
  for (T x : {T(0), -T(0), std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::min(),
              std::numeric_limits<T>::max(), -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN(),
              T(3) * std::numeric_limits<T>::denorm_min(), T(1) / T(3)}) {
    sums.push_back(x);
  }
  for (const int ranks : {1, 2, 3, 4, 6, 8, 1024}) {
    internal::Call c;
    c.dtype = std::is_same_v<T, float> ? kFloat32 : kFloat64;
    c.op = ReduceOp::kMean;
    c.bytes = sums.size() * sizeof(T);
    c.buffer.reset(new char[c.bytes]);
    std::memcpy(c.buffer.get(), sums.data(), c.bytes);
    std::vector<T> out(sums.size());
    internal::CopyResult(c, ranks, {World::Piece{nullptr, out.data(), static_cast<int64_t>(out.size())}});
    // In place (a bucket reduced in its own block): the same bits.
    std::vector<T> in_place = sums;
    internal::DivideInPlace(c.dtype, in_place.data(), static_cast<int64_t>(in_place.size()), ranks);
    // Read back through a volatile: the compiler may not turn the expected
    // division by a known power of two into the multiplication under test.
    volatile T opaque = static_cast<T>(ranks);
    const T divisor = opaque;
    for (size_t i = 0; i < sums.size(); ++i) {
      const T expected = sums[i] / divisor;
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(out[i])) << i;
        ASSERT_TRUE(std::isnan(in_place[i])) << i;
        continue;
      }
      ASSERT_EQ(std::memcmp(&out[i], &expected, sizeof(T)), 0)
          << sums[i] << " / " << ranks << ": " << out[i] << " != " << expected;
      ASSERT_EQ(std::memcmp(&in_place[i], &expected, sizeof(T)), 0)
          << sums[i] << " / " << ranks << " in place: " << in_place[i] << " != " << expected;
    }
  }
}

TEST(WorldMpiTest, TheMeanIsTheDivisionsBits) {
  ExpectTheDivisionsBits<float, uint32_t>(1);
  ExpectTheDivisionsBits<double, uint64_t>(2);
}

// Without a launcher there is no world, and the ops pass their inputs through.
TEST(WorldMpiTest, OneProcessHasNoWorldAndTheOpsAreTheIdentity) {
  EXPECT_FALSE(DetectLaunch().multi_process);
  EXPECT_EQ(World::Current(), nullptr);
  EXPECT_FALSE(World::Start({}).ok());
  Graph graph;
  Scope root(graph);
  auto mean = CrossProcessMean(root, {Const(root, 2.0f), Const(root, 3.0f)});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  auto out = session.Run(mean);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].scalar<float>(), 2.0f);
  EXPECT_EQ((*out)[1].scalar<float>(), 3.0f);
  auto size = session.Run({ProcessSize(root, kInt32)});
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ((*size)[0].scalar<int32_t>(), 1);
  ProcessSize(root, kUInt8);
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
}

// On a CPU the mean is the bucket's sum divided by ProcessSize, and a
// momentum update that alone reads it divides in its own loop: one fused
// item per variable, no Div of its own.
TEST(WorldMpiTest, TheMeanIsDividedInTheMomentumUpdate) {
  Graph graph;
  Scope root(graph);
  auto x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({4}));
  std::vector<Output> grads = {Mul(root, x, Const(root, 2.0f)), Mul(root, x, Const(root, 3.0f))};
  std::vector<Output> mean = CrossProcessMean(root, grads, {.divide_in_consumer = true});
  std::vector<Output> updates;
  for (int k = 0; k < 2; ++k) {
    Variable v = GetVariable(root, "v" + std::to_string(k), TensorShape{4}, {.initializer = ZerosInitializer()});
    Variable a = GetVariable(root, "a" + std::to_string(k), TensorShape{4},
                             {.initializer = ZerosInitializer(), .trainable = false});
    updates.push_back(ApplyMomentum(root, v.ref, a.ref, Const(root, 0.5f), mean[static_cast<size_t>(k)],
                                    Const(root, 0.9f)));
  }
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  const FeedList feed = {{x, Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape{4})}};
  auto out = session.Run(feed, updates, {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{-1, -2, -3, -4}));  // -0.5 * 2x
  EXPECT_EQ((*out)[1].ToVector<float>(), (std::vector<float>{-1.5f, -3, -4.5f, -6}));
  auto plan = session.impl().GetPlan(feed, updates, {});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  int divs = 0, fused_updates = 0;
  for (const ExecutorPlan::Item& item : (*plan)->items) {
    if (item.kernel == nullptr || item.resolved) continue;
    divs += item.node->op() == "Div";
    fused_updates += item.node->op() == "ApplyMomentum" && item.fused != nullptr;
  }
  EXPECT_EQ(divs, 0);
  EXPECT_EQ(fused_updates, 2);
}

}  // namespace
}  // namespace tw::dist
