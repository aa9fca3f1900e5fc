// CollectiveAllReduce on virtual CPU devices: sums and means of fused lists,
// the reduction order (device order, as AddN adds), shared outputs, and the
// ways a step can go wrong without hanging: mismatched participants, a plan
// that runs only some of them, and a step that fails while one waits; the
// mean against IEEE division, bit for bit (a power-of-two count multiplies).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

#include "towerflow/core/denormal.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/collective_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

SessionOptions Cpus(int n) {
  SessionOptions o;
  o.num_cpu_devices = n;
  o.inter_op_threads = n;
  o.intra_op_threads = n;
  return o;
}

std::string Cpu(int i) { return "/device:CPU:" + std::to_string(i); }

class CollectiveTest : public ::testing::Test {
 protected:
  // Participant i of group `name`: a CollectiveAllReduce on CPU:i over `inputs`.
  std::vector<Output> Participant(int i, const std::vector<Output>& inputs, int n, const std::string& reduction,
                                  const std::string& name = "g") {
    return CollectiveAllReduce(root_.WithDevice(Cpu(i)).WithOpName("p" + std::to_string(i)), inputs,
                               {.reduction = reduction, .num_devices = n, .shared_name = name});
  }

  Graph graph_;
  Scope root_{graph_};
};

TEST_F(CollectiveTest, SumsAndMeansAFusedListOnEveryDevice) {
  constexpr int n = 3;
  std::vector<Output> a, b;
  FeedList feeds;
  for (int i = 0; i < n; ++i) {
    Scope s = root_.WithDevice(Cpu(i));
    a.push_back(Placeholder(s, kFloat32, PartialShape({5})));
    b.push_back(Placeholder(s, kFloat32, PartialShape({2, 3})));
    const float f = static_cast<float>(i + 1);
    feeds.emplace_back(a.back(), Tensor::Vec<float>({f, 2 * f, 3 * f, 4 * f, 5 * f}));
    feeds.emplace_back(b.back(), Tensor::FromVector<float>({f, f, f, -f, -f, 10 * f}, TensorShape{2, 3}));
  }
  std::vector<Output> fetches;
  for (int i = 0; i < n; ++i) {
    for (const Output& o : Participant(i, {a[static_cast<size_t>(i)], b[static_cast<size_t>(i)]}, n, "mean")) {
      fetches.push_back(o);
    }
  }
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(fetches[1].shape().ToString(), "[2,3]");
  Session session(graph_, Cpus(n));
  for (int step = 0; step < 3; ++step) {
    auto r = session.Run(feeds, fetches);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (int i = 0; i < n; ++i) {
      // Means of 1, 2, 3 times each pattern: 2 times it.
      EXPECT_EQ((*r)[static_cast<size_t>(2 * i)].ToVector<float>(), (std::vector<float>{2, 4, 6, 8, 10}));
      EXPECT_EQ((*r)[static_cast<size_t>(2 * i + 1)].ToVector<float>(), (std::vector<float>{2, 2, 2, -2, -2, 20}));
      EXPECT_EQ((*r)[static_cast<size_t>(2 * i + 1)].shape(), (TensorShape{2, 3}));
    }
  }
}

TEST_F(CollectiveTest, SumsInDeviceOrderAsAddNDoes) {
  // Float addition is not associative: 1e8 + 1 - 1e8 depends on the order.
  // Built in reverse device order; the sum must still be x0 + x1 + x2.
  constexpr int n = 3;
  const std::vector<std::vector<float>> values = {{1e8f, 1.0f, 0.1f}, {1.0f, -1e8f, 0.2f}, {-1e8f, 1e8f, 0.3f}};
  std::vector<Output> x(n), out(n);
  FeedList feeds;
  for (int i = n - 1; i >= 0; --i) {
    x[static_cast<size_t>(i)] = Placeholder(root_.WithDevice(Cpu(i)), kFloat32, PartialShape({3}));
    feeds.emplace_back(x[static_cast<size_t>(i)], Tensor::Vec<float>(values[static_cast<size_t>(i)]));
  }
  for (int i = n - 1; i >= 0; --i) out[static_cast<size_t>(i)] = Participant(i, {x[static_cast<size_t>(i)]}, n, "sum")[0];
  Output add_n = AddN(root_.WithDevice(Cpu(0)), x);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session session(graph_, Cpus(n));
  for (int step = 0; step < 20; ++step) {
    auto r = session.Run(feeds, {out[0], out[1], out[2], add_n});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (int i = 0; i < n; ++i) EXPECT_EQ((*r)[static_cast<size_t>(i)].ToVector<float>(), (*r)[3].ToVector<float>());
  }
}

TEST_F(CollectiveTest, IntegersAndASingleDevice) {
  Output i0 = Const(root_.WithDevice(Cpu(0)), std::vector<int32_t>{1, 2});
  Output i1 = Const(root_.WithDevice(Cpu(1)), std::vector<int32_t>{10, 20});
  Output s0 = Participant(0, {i0}, 2, "sum", "ints")[0];
  Output s1 = Participant(1, {i1}, 2, "sum", "ints")[0];
  Output m0 = Participant(0, {i0}, 2, "mean", "int_means")[0];
  Output m1 = Participant(1, {i1}, 2, "mean", "int_means")[0];
  Output alone = CollectiveAllReduce(root_.WithDevice(Cpu(0)), {i1}, {.reduction = "mean", .num_devices = 1, .shared_name = "one"})[0];
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session session(graph_, Cpus(2));
  auto r = session.Run({s0, s1, m0, m1, alone});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<int32_t>(), (std::vector<int32_t>{11, 22}));
  EXPECT_EQ((*r)[1].ToVector<int32_t>(), (std::vector<int32_t>{11, 22}));
  EXPECT_EQ((*r)[2].ToVector<int32_t>(), (std::vector<int32_t>{5, 11}));  // truncated
  EXPECT_EQ((*r)[4].ToVector<int32_t>(), (std::vector<int32_t>{10, 20}));
}

TEST_F(CollectiveTest, MismatchedShapesFailEveryParticipantNamingBoth) {
  Output a = Placeholder(root_.WithDevice(Cpu(0)), kFloat32);
  Output b = Placeholder(root_.WithDevice(Cpu(1)), kFloat32);
  Output p0 = Participant(0, {a}, 2, "sum")[0];
  Output p1 = Participant(1, {b}, 2, "sum")[0];
  ASSERT_TRUE(root_.ok());
  Session session(graph_, Cpus(2));
  auto r = session.Run({{a, Tensor::Vec<float>({1, 2, 3})}, {b, Tensor::Vec<float>({1, 2})}}, {p0, p1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("'g'"), std::string::npos) << m;
  EXPECT_NE(m.find("'p0'"), std::string::npos) << m;
  EXPECT_NE(m.find("'p1'"), std::string::npos) << m;
  EXPECT_NE(m.find("[3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[2]"), std::string::npos) << m;
  // The group is usable again by the next step.
  auto ok = session.Run({{a, Tensor::Vec<float>({1, 2})}, {b, Tensor::Vec<float>({3, 4})}}, {p0, p1});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[1].ToVector<float>(), (std::vector<float>{4, 6}));
}

TEST_F(CollectiveTest, FakeGpusReduceWithTheCpuKernelAndAMixedGroupIsRefused) {
  // Fake GPUs borrow the CPU kernel: a group of them reduces as CPUs do.
  std::vector<Output> g;
  for (int i = 0; i < 2; ++i) {
    Scope s = root_.WithDevice("/device:GPU:" + std::to_string(i)).WithOpName("g" + std::to_string(i));
    g.push_back(CollectiveAllReduce(s, {Const(s.WithOpName("v" + std::to_string(i)), std::vector<float>{1.0f + i, 4},
                                              TensorShape{2})},
                                    {.reduction = "mean", .num_devices = 2, .shared_name = "gpus"})[0]);
  }
  // A group with one participant on a CPU and one on a GPU.
  Output c = Const(root_.WithDevice(Cpu(0)).WithOpName("c"), std::vector<float>{1}, TensorShape{1});
  Output d = Const(root_.WithDevice("/device:GPU:0").WithOpName("d"), std::vector<float>{2}, TensorShape{1});
  Output mixed_cpu = Participant(0, {c}, 2, "sum", "mixed")[0];
  Output mixed_gpu = CollectiveAllReduce(root_.WithDevice("/device:GPU:0").WithOpName("q"), {d},
                                         {.reduction = "sum", .num_devices = 2, .shared_name = "mixed"})[0];
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  SessionOptions o = Cpus(1);
  o.num_fake_gpus = 2;
  o.allow_soft_placement = false;
  Session session(graph_, o);
  auto r = session.Run(g);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{1.5f, 4}));
  EXPECT_EQ((*r)[1].ToVector<float>(), (std::vector<float>{1.5f, 4}));
  auto bad = session.Run({mixed_cpu, mixed_gpu});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << bad.status().ToString();
  const std::string& m = bad.status().message();
  EXPECT_NE(m.find("'mixed'"), std::string::npos) << m;
  EXPECT_NE(m.find("must all be on GPUs or all on CPUs"), std::string::npos) << m;
  EXPECT_NE(m.find("GPU:0"), std::string::npos) << m;
  EXPECT_NE(m.find("CPU:0"), std::string::npos) << m;
}

TEST_F(CollectiveTest, AStepWithoutEveryParticipantIsRejectedBeforeItRuns) {
  Output a = Const(root_.WithDevice(Cpu(0)), std::vector<float>{1}, TensorShape{1});
  Output p0 = Participant(0, {a}, 2, "sum")[0];
  Participant(1, {a}, 2, "sum");
  ASSERT_TRUE(root_.ok());
  Session session(graph_, Cpus(2));
  auto r = session.Run({p0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("group 'g' has 2 participants but this step runs 1 of them (p0)"),
            std::string::npos)
      << r.status().ToString();
}

TEST_F(CollectiveTest, AFailingPeerBranchCancelsTheWaitingParticipant) {
  // Participant 1's input fails (Reshape of 4 values to [3]) while participant
  // 0 waits for it: the step ends with the Reshape's error, not a hang.
  Output a = Const(root_.WithDevice(Cpu(0)), std::vector<float>{1, 2, 3}, TensorShape{3});
  Output fed = Placeholder(root_.WithDevice(Cpu(1)), kFloat32);
  Output bad = Reshape(root_.WithDevice(Cpu(1)).WithOpName("bad_reshape"), fed, std::vector<int32_t>{3});
  Output p0 = Participant(0, {a}, 2, "sum")[0];
  Output p1 = Participant(1, {bad}, 2, "sum")[0];
  ASSERT_TRUE(root_.ok());
  Session session(graph_, Cpus(2));
  for (int step = 0; step < 5; ++step) {
    const auto start = std::chrono::steady_clock::now();
    auto r = session.Run({{fed, Tensor::Vec<float>({1, 2, 3, 4})}}, {p0, p1});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find("bad_reshape"), std::string::npos) << r.status().ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
  auto ok = session.Run({{fed, Tensor::Vec<float>({1, 1, 1})}}, {p0, p1});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0].ToVector<float>(), (std::vector<float>{2, 3, 4}));
}

TEST_F(CollectiveTest, BuilderErrorsAreRecordedInTheScope) {
  Output a = Const(root_, std::vector<float>{1}, TensorShape{1});
  auto expect_error = [&](const CollectiveAllReduceAttrs& attrs, std::vector<Output> inputs,
                          const std::string& message) {
    Scope s(graph_);
    std::vector<Output> out = CollectiveAllReduce(s, inputs, attrs);
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find(message), std::string::npos) << s.status().ToString();
    for (const Output& o : out) EXPECT_FALSE(o.valid());
  };
  expect_error({.num_devices = 2, .shared_name = ""}, {a}, "shared_name is empty");
  expect_error({.num_devices = 0, .shared_name = "x"}, {a}, "num_devices must be at least 1, got 0");
  expect_error({.reduction = "max", .num_devices = 2, .shared_name = "x"}, {a}, "reduction 'max' is not one of sum, mean");
  expect_error({.num_devices = 2, .shared_name = "x"}, {}, "no inputs");
}

TEST_F(CollectiveTest, RunsWithFewerThreadsThanParticipants) {
  // One inter-op thread (the caller alone), then two for four participants:
  // a participant that waits must not hold the work its peers need.
  constexpr int n = 4;
  std::vector<Output> out;
  for (int i = 0; i < n; ++i) {
    Output x = Const(root_.WithDevice(Cpu(i)), std::vector<float>{1.0f * i, 2.0f}, TensorShape{2});
    // A chain before each participant, so that peers become ready one by one.
    Output y = Mul(root_.WithDevice(Cpu(i)), Add(root_.WithDevice(Cpu(i)), x, x), Const(root_, 0.5f));
    out.push_back(Participant(i, {y}, n, "sum")[0]);
  }
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  for (int inter : {1, 2}) {
    SessionOptions o = Cpus(n);
    o.inter_op_threads = inter;
    Session session(graph_, o);
    for (int step = 0; step < 20; ++step) {
      auto r = session.Run(out);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (const Tensor& t : *r) ASSERT_EQ(t.ToVector<float>(), (std::vector<float>{6, 8})) << inter;
    }
  }
}

// The mean of 2 and 4 devices multiplies by the exact reciprocal, of 3
// divides: each element is the sum in device order divided as IEEE divides,
// under the engine's flush-to-zero mode, tiny and huge values included.
TEST_F(CollectiveTest, MeanIsTheSumDividedBitForBit) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(::testing::Message() << n << " devices");
    Graph graph;
    Scope root(graph);
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-130, 127);
    std::vector<std::vector<float>> values(static_cast<size_t>(n), std::vector<float>(777));
    std::vector<Output> out;
    for (int i = 0; i < n; ++i) {
      for (float& v : values[static_cast<size_t>(i)]) v = std::ldexp(mantissa(rng), exponent(rng));
      Output x = Const(root.WithDevice(Cpu(i)), Tensor::Vec<float>(values[static_cast<size_t>(i)]));
      out.push_back(CollectiveAllReduce(root.WithDevice(Cpu(i)).WithOpName("p" + std::to_string(i)), {x},
                                        {.reduction = "mean", .num_devices = n, .shared_name = "m"})[0]);
    }
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    Session session(graph, Cpus(n));
    auto r = session.Run(out);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ScopedFlushDenormal flush;
    const volatile float divisor = static_cast<float>(n);
    for (size_t e = 0; e < 777; ++e) {
      float sum = values[0][e];
      for (int i = 1; i < n; ++i) sum += values[static_cast<size_t>(i)][e];
      const float want = sum / divisor;
      for (int i = 0; i < n; ++i) {
        const float got = (*r)[static_cast<size_t>(i)].flat<float>()[static_cast<int64_t>(e)];
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << e;
        } else {
          ASSERT_EQ(std::signbit(got), std::signbit(want)) << e;
          ASSERT_EQ(got, want) << "element " << e << " on device " << i;
        }
      }
    }
  }
}

TEST_F(CollectiveTest, ManyStepsBackToBack) {
  // Races between meetings of consecutive steps (and for TSan).
  constexpr int n = 2;
  std::vector<Output> out;
  for (int i = 0; i < n; ++i) {
    Tensor value(kFloat64, TensorShape{1000});
    for (double& v : value.flat<double>()) v = i + 1.0;
    Output x = Const(root_.WithDevice(Cpu(i)), value);
    out.push_back(Participant(i, {x}, n, "mean")[0]);
  }
  ASSERT_TRUE(root_.ok());
  Session session(graph_, Cpus(n));
  for (int step = 0; step < 300; ++step) {
    auto r = session.Run(out);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ((*r)[1].ToVector<double>(), std::vector<double>(1000, 1.5));
  }
}

}  // namespace
}  // namespace tw
