#include "towerflow/runtime/session.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/shape_inference.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

std::atomic<int> g_counter_runs{0};

// A stateful op that counts its runs, and one that always fails: test-only ops.
class CounterOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ++g_counter_runs;
    ctx->set_output(0, Tensor::Scalar<int32_t>(g_counter_runs.load()));
  }
};
class FailOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(errors::InvalidArgument("input value ", ctx->input(0).DebugString(), " rejected"));
  }
};

// y = x, and `bytes`: the bytes the device's allocator holds while it runs.
class BytesInUseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, ctx->input(0));
    ctx->set_output(1, Tensor::Scalar<int64_t>(static_cast<int64_t>(ctx->device()->allocator()->BytesInUse())));
  }
};

// The names of the threads that ran each node of the two ops below.
std::mutex g_threads_mu;
std::map<std::string, std::vector<std::string>> g_threads;  // guarded by g_threads_mu

// Records the calling thread's name under `node`.
void RecordThread(const std::string& node) {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  std::lock_guard<std::mutex> lock(g_threads_mu);
  g_threads[node].push_back(name);
}

// y = 1 from a kernel that declares it may block (as a queue's dequeue): the
// executor runs it on the blocking pool when an inter-op thread gets it.
class MayBlockOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool MayBlock() const override { return true; }
  void Compute(OpKernelContext* ctx) override {
    RecordThread(ctx->node().name());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // stays expensive: a root the pool gets
    ctx->set_output(0, Tensor::Scalar<float>(1));
  }
};

// y = x, recording the name of the thread that ran it under the node's name.
class ThreadNameOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    RecordThread(ctx->node().name());
    ctx->set_output(0, ctx->input(0));
  }
};

// y = x from a kernel that may block but can tell when it will not (as a
// queue's dequeue): it declines every call without waiting while
// g_try_declines is set. Records each call's thread and may_wait().
std::atomic<bool> g_try_declines{false};
struct TryCall {
  std::string thread;
  bool may_wait;
};
std::map<std::string, std::vector<TryCall>> g_try_calls;  // guarded by g_threads_mu
class TryOrWaitOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool MayBlock() const override { return true; }
  bool CanTryWithoutWaiting() const override { return true; }
  void Compute(OpKernelContext* ctx) override {
    char name[32] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    {
      std::lock_guard<std::mutex> lock(g_threads_mu);
      g_try_calls[ctx->node().name()].push_back({name, ctx->may_wait()});
    }
    if (!ctx->may_wait() && g_try_declines.load()) return ctx->SetWouldWait();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // stays expensive
    ctx->set_output(0, ctx->input(0));
  }
};

void RegisterTestOps() {
  static bool done = [] {
    EnsureKernelsRegistered();
    OpRegistry::Global().Register(OpDefBuilder("TestCounter").Output("count", "int32").Stateful().Build()).Check();
    OpRegistry::Global().Register(OpDefBuilder("TestFail").Input("x", "T").Output("y", "T").TypeAttr("T", {})
                                      .Shape(shape_fns::Unchanged).Build()).Check();
    OpRegistry::Global().Register(OpDefBuilder("TestBytesInUse").Input("x", "float").Output("y", "float")
                                      .Output("bytes", "int64").Build()).Check();
    KernelRegistry::Global().RegisterUntyped<CounterOp>("TestCounter", kDeviceCpu);
    KernelRegistry::Global().RegisterUntyped<BytesInUseOp>("TestBytesInUse", kDeviceCpu);
    KernelRegistry::Global().RegisterUntyped<FailOp>("TestFail", kDeviceCpu);
    OpRegistry::Global().Register(OpDefBuilder("TestMayBlock").Output("y", "float").Stateful().Build()).Check();
    OpRegistry::Global().Register(OpDefBuilder("TestThreadName").Input("x", "float").Output("y", "float").Build()).Check();
    KernelRegistry::Global().RegisterUntyped<MayBlockOp>("TestMayBlock", kDeviceCpu);
    KernelRegistry::Global().RegisterUntyped<ThreadNameOp>("TestThreadName", kDeviceCpu);
    OpRegistry::Global().Register(OpDefBuilder("TestTryOrWait").Input("x", "float").Output("y", "float")
                                      .Stateful().Build()).Check();
    KernelRegistry::Global().RegisterUntyped<TryOrWaitOp>("TestTryOrWait", kDeviceCpu);
    return true;
  }();
  (void)done;
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterTestOps(); }
  Graph graph_;
  Scope root_{graph_};
};

TEST_F(SessionTest, FetchesConstantThroughIdentity) {
  auto c = Const(root_, Tensor::FromVector<float>({1, 2, 3}, TensorShape{3}));
  auto y = Identity(root_, c);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session session(graph_);
  auto out = session.Run({y});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST_F(SessionTest, RunComputesOnlyWhatFetchesNeed) {
  g_counter_runs = 0;
  Node* counter = NodeBuilder(root_, "TestCounter").Finalize();
  auto c = Const(root_, 1.0f);
  ASSERT_TRUE(root_.ok());
  Session session(graph_);
  ASSERT_TRUE(session.Run({c}).ok());
  EXPECT_EQ(g_counter_runs.load(), 0) << "an unfetched stateful op ran";
  ASSERT_TRUE(session.Run(counter).ok());
  EXPECT_EQ(g_counter_runs.load(), 1);
  auto out = session.Run({Output(counter)});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 2);
}

// A value is freed once its last reader has run: along a chain of 4 MB
// tensors the allocator never holds the whole chain, only the few links in
// flight (TF's executor does the same; holding every value to the end of the
// step made a step's memory the sum of all its tensors).
TEST_F(SessionTest, ValuesAreFreedAfterTheirLastReader) {
  const int64_t n = 1 << 20;  // floats: 4 MB per link
  Output x = Fill(root_, Const(root_, Tensor::FromVector<int32_t>({static_cast<int32_t>(n)}, TensorShape{1})),
                  Const(root_, 1.0f));
  for (int i = 0; i < 12; ++i) x = Neg(root_, Add(root_, x, Const(root_, 1.0f)));
  Node* probe = NodeBuilder(root_, "TestBytesInUse").Input(x).Finalize();
  Output y = Neg(root_, Output(probe, 0));
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session sess(graph_, {.inter_op_threads = 1, .intra_op_threads = 1});
  auto r = sess.Run({y, Output(probe, 1)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The chain made 25 links of 4 MB; at the probe, its input is alive, and at
  // most one more link waits for the allocator's reuse.
  EXPECT_LE((*r)[1].scalar<int64_t>(), 3 * n * 4) << "bytes in use at the end of the chain";
  EXPECT_EQ((*r)[0].dim(0), n);
}

// Element-wise kernels whose input is a value no one else reads write their
// output over it (forward_input_or_allocate_output); the results are those of
// separate buffers. Each input below is a fresh Neg with one reader.
TEST_F(SessionTest, KernelsWritingOverTheirInputGiveTheSameValues) {
  Output a = Const(root_, Tensor::FromVector<float>({-2, -1, 0.5f, 3}, TensorShape{2, 2}));
  auto fresh = [&] { return Neg(root_, a); };  // {2, 1, -0.5, -3}
  const std::vector<Output> outs = {
      Add(root_, fresh(), Const(root_, 10.0f)),
      Mul(root_, Const(root_, 3.0f), fresh()),  // over input 1
      AddN(root_, {fresh(), fresh()}),
      BiasAddRelu(root_, fresh(), Const(root_, Tensor::FromVector<float>({1, 1}, TensorShape{2}))),
      Relu(root_, fresh()),
      NodeBuilder(root_, "ReluGrad").Input(fresh()).Input(a).Finalize(),
  };
  const std::vector<std::vector<float>> want = {
      {12, 11, 9.5f, 7}, {6, 3, -1.5f, -9}, {4, 2, -1, -6}, {3, 2, 0.5f, 0}, {2, 1, 0, 0}, {0, 0, -0.5f, -3},
  };
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  for (int threads : {1, 2}) {
    Session sess(graph_, {.inter_op_threads = threads, .intra_op_threads = 1});
    for (int step = 0; step < 3; ++step) {
      auto r = sess.Run(outs);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (size_t i = 0; i < outs.size(); ++i) EXPECT_EQ((*r)[i].ToVector<float>(), want[i]) << outs[i].name();
    }
  }
  // The constant itself (shared with its kernel) is never written.
  Session sess(graph_);
  auto r = sess.Run({a});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{-2, -1, 0.5f, 3}));
}

TEST_F(SessionTest, ControlDependenciesRunFirst) {
  g_counter_runs = 0;
  Node* counter = NodeBuilder(root_, "TestCounter").Finalize();
  Node* group = Group(root_, {Output(counter)});
  auto c = Const(root_.WithControlDependencies({Output(group)}), 2.0f);
  ASSERT_TRUE(root_.ok());
  Session session(graph_);
  ASSERT_TRUE(session.Run({c}).ok());
  EXPECT_EQ(g_counter_runs.load(), 1);
}

// TF's rule: a fed placeholder does not run, and what waits on it waits on
// the feed; unfed, the wait is the placeholder's own error.
TEST_F(SessionTest, ControlDependencyOnAFedPlaceholderWaitsOnTheFeed) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32, PartialShape({2}));
  auto c = Const(root_.WithControlDependencies({x}), 2.0f);
  auto y = Mul(root_, x, c);
  ASSERT_TRUE(root_.ok());
  Session session(graph_);
  auto r = session.Run({{x, Tensor::Vec<float>({1, 3})}}, {y, c});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{2, 6}));
  auto unfed = session.Run({c});
  EXPECT_EQ(unfed.status().code(), Code::kInvalidArgument);
}

TEST_F(SessionTest, UnfedPlaceholderNamesItself) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32, PartialShape({-1, 2}));
  auto y = Identity(root_, x);
  Session session(graph_);
  auto out = session.Run({y});
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("placeholder tensor 'x'"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().message().find("[?,2]"), std::string::npos);
}

TEST_F(SessionTest, FeedsAreCheckedForDtypeAndShape) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32, PartialShape({-1, 2}));
  auto y = Identity(root_, x);
  Session session(graph_);
  auto ok = session.Run({{x, Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape{2, 2})}}, {y});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0].shape(), TensorShape({2, 2}));
  auto bad_type = session.Run({{x, Tensor::Vec<int32_t>({1, 2})}}, {y});
  EXPECT_EQ(bad_type.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad_type.status().message().find("x:0"), std::string::npos);
  EXPECT_NE(bad_type.status().message().find("int32"), std::string::npos);
  auto bad_shape = session.Run({{x, Tensor::FromVector<float>({1, 2, 3}, TensorShape{1, 3})}}, {y});
  EXPECT_EQ(bad_shape.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad_shape.status().message().find("[1,3]"), std::string::npos);
}

TEST_F(SessionTest, FailingKernelAbortsStepAndSessionStaysUsable) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto bad = NodeBuilder(root_.WithOpName("checker"), "TestFail").Input(x).Finalize();
  auto good = Identity(root_, x);
  ASSERT_TRUE(root_.ok());
  Session session(graph_);
  auto out = session.Run({{x, Tensor::Scalar<float>(1)}}, {Output(bad)});
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("'checker' (TestFail)"), std::string::npos) << out.status().ToString();
  auto again = session.Run({{x, Tensor::Scalar<float>(5)}}, {good});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].scalar<float>(), 5);
}

TEST_F(SessionTest, FeedingAnOutputCutsTheGraphAboveIt) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto bad = Output(NodeBuilder(root_, "TestFail").Input(x).Finalize());
  auto y = Identity(root_, bad);
  Session session(graph_);
  auto out = session.Run({{bad, Tensor::Scalar<float>(3)}}, {y});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].scalar<float>(), 3);
}

TEST_F(SessionTest, NullFetchAndClosedSessionAreErrors) {
  Session session(graph_);
  EXPECT_EQ(session.Run({Output()}).status().code(), Code::kInvalidArgument);
  auto c = Const(root_, 1.0f);
  session.Close();
  EXPECT_EQ(session.Run({c}).status().code(), Code::kCancelled);
}

TEST_F(SessionTest, ConcurrentRunsShareOneSession) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  std::vector<Output> chain{x};
  for (int i = 0; i < 20; ++i) chain.push_back(Identity(root_, chain.back()));
  Session session(graph_, {.inter_op_threads = 2});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        float v = static_cast<float>(t * 1000 + i);
        auto out = session.Run({{x, Tensor::Scalar<float>(v)}}, {chain.back()});
        if (!out.ok() || (*out)[0].scalar<float>() != v) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace tw

namespace tw {
namespace {

// A kernel that may block, handed by an inter-op thread to the blocking pool
// (a tower's dequeue), hands what it makes ready back to the inter-op pool:
// the rest of the tower does not run on an extra thread beside the step's own.
TEST_F(SessionTest, NodesAfterABlockingKernelRunOnTheStepsThreads) {
  std::vector<Output> fetches;
  for (int i = 0; i < 2; ++i) {
    Output block(NodeBuilder(root_.WithOpName("block" + std::to_string(i)), "TestMayBlock").Finalize());
    fetches.push_back(
        Output(NodeBuilder(root_.WithOpName("after" + std::to_string(i)), "TestThreadName").Input(block).Finalize()));
  }
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  {
    std::lock_guard<std::mutex> lock(g_threads_mu);
    g_threads.clear();  // a repeated run starts afresh
  }
  SessionOptions options;
  options.inter_op_threads = 2;  // the caller and one pool thread
  Session session(graph_, options);
  for (int step = 0; step < 20; ++step) ASSERT_TRUE(session.Run(fetches).ok());
  std::lock_guard<std::mutex> lock(g_threads_mu);
  int blocked = 0;
  for (const char* node : {"block0", "block1"}) {
    for (const std::string& t : g_threads[node]) blocked += t.rfind("tw_blocking", 0) == 0;
  }
  EXPECT_GT(blocked, 0) << "no dequeue-like kernel went to the blocking pool: the test tests nothing";
  for (const char* node : {"after0", "after1"}) {
    ASSERT_EQ(g_threads[node].size(), 20u);
    for (const std::string& t : g_threads[node]) EXPECT_NE(t.rfind("tw_blocking", 0), 0u) << node << " ran on " << t;
  }
}

// A kernel that may block but can tell when it will not (a dequeue from a
// queue that holds enough) runs first without waiting on whatever step thread
// has it, inter-op threads included: no hand-off to the blocking pool. When
// it would wait, it runs again, with waiting allowed, on the caller or (from
// an inter-op thread) on the blocking pool, its inputs intact.
TEST_F(SessionTest, KernelsThatNeedNotWaitRunInPlaceAndOthersMove) {
  std::vector<Output> fetches;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    // x: a value computed in the step, read once (its reader may take it).
    Output x = Add(root_.WithOpName("x" + n), Const(root_, static_cast<float>(i)), Const(root_, 10.0f));
    fetches.push_back(Output(NodeBuilder(root_.WithOpName("try" + n), "TestTryOrWait").Input(x).Finalize()));
  }
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  SessionOptions options;
  options.inter_op_threads = 2;  // the caller and one pool thread
  Session session(graph_, options);
  for (bool declines : {false, true}) {
    SCOPED_TRACE(declines ? "declining" : "completing");
    g_try_declines = declines;
    {
      std::lock_guard<std::mutex> lock(g_threads_mu);
      g_try_calls.clear();
    }
    constexpr int kSteps = 20;
    for (int step = 0; step < kSteps; ++step) {
      auto out = session.Run(fetches);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ((*out)[0].scalar<float>(), 10.0f);
      EXPECT_EQ((*out)[1].scalar<float>(), 11.0f);
    }
    std::lock_guard<std::mutex> lock(g_threads_mu);
    int on_inter_op = 0, on_blocking = 0;
    for (const char* node : {"try0", "try1"}) {
      const std::vector<TryCall>& calls = g_try_calls[node];
      ASSERT_EQ(calls.size(), static_cast<size_t>(declines ? 2 * kSteps : kSteps)) << node;
      for (size_t c = 0; c < calls.size(); ++c) {
        const bool retry = declines && c % 2 == 1;
        EXPECT_EQ(calls[c].may_wait, retry) << node << " call " << c << " on " << calls[c].thread;
        on_inter_op += calls[c].thread.rfind("tw_inter_op", 0) == 0 && !retry;
        on_blocking += calls[c].thread.rfind("tw_blocking", 0) == 0;
        if (retry) {
          EXPECT_NE(calls[c].thread.rfind("tw_inter_op", 0), 0u) << "an inter-op thread waited";
        }
      }
    }
    EXPECT_GT(on_inter_op, 0) << "no try ran on an inter-op thread: the test tests nothing";
    if (declines) {
      EXPECT_GT(on_blocking, 0) << "a declined try on an inter-op thread moves to the blocking pool";
    } else {
      EXPECT_EQ(on_blocking, 0) << "a kernel that need not wait went to the blocking pool";
    }
  }
  g_try_declines = false;
}

// check_numerics: the op that first produces a NaN or Inf fails the run, named
// with its op, output, shape and device; its consumers never run, and finite
// values pass. Without the option the NaN flows through.
TEST(SessionCheckNumericsTest, NamesTheFirstOpProducingNaNOrInf) {
  Graph graph;
  Scope root(graph);
  Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({3}));
  Output logx = Log(root.WithOpName("logx"), x);           // log(-1) = NaN, log(0) = -Inf
  Output doubled = Mul(root.WithOpName("doubled"), logx, Const(root, 2.0f));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session checked(graph, {.check_numerics = true});
  auto nan = checked.Run({{x, Tensor::FromVector<float>({1.0f, -1.0f, 2.0f}, {3})}}, {doubled});
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(nan.status().code(), Code::kInvalidArgument);
  const std::string& m = nan.status().message();
  EXPECT_NE(m.find("'logx' (Log)"), std::string::npos) << m;
  EXPECT_NE(m.find("output 0 (float [3])"), std::string::npos) << m;
  EXPECT_NE(m.find("has NaN values (first at flat index 1)"), std::string::npos) << m;
  EXPECT_NE(m.find("CPU:0"), std::string::npos) << m;
  auto inf = checked.Run({{x, Tensor::FromVector<float>({1.0f, 0.0f, 2.0f}, {3})}}, {doubled});
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.status().message().find("has Inf values"), std::string::npos) << inf.status().message();
  auto fine = checked.Run({{x, Tensor::FromVector<float>({1.0f, 1.0f, 1.0f}, {3})}}, {doubled});
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  Session unchecked(graph);
  auto flows = unchecked.Run({{x, Tensor::FromVector<float>({1.0f, -1.0f, 2.0f}, {3})}}, {doubled});
  ASSERT_TRUE(flows.ok());
  EXPECT_TRUE(std::isnan((*flows)[0].flat<float>()[1]));
}

}  // namespace
}  // namespace tw
