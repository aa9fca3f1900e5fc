// Step graphs (step_graph.h) on fake GPUs, which record a step's GPU kernels
// and replay them by running them again over the same buffers: the capture
// and replay logic a CUDA GPU runs with a CUDA graph. A session with step
// graphs trains bit for bit as one without; the graph warms up twice,
// records once and replays after; a step with other shapes runs one by one,
// three in a row turn the graph off; a variable whose buffer moved makes it
// record again; an output held past its step is never written over; random
// kernels draw new numbers at every replay, the ones they draw without a
// graph; a kernel placed on the CPU in the middle of the GPU's work stays
// out, with what depends on it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/capture_memory.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/runtime/step_graph.h"
#include "towerflow/runtime/training_test_util.h"

namespace tw {
namespace {

using fusion_test::Random;
using Mode = SessionOptions::StepGraphMode;

SessionOptions FakeGpuOptions(Mode graphs, bool device_memory) {
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1, .num_fake_gpus = 1};
  options.fake_gpu_device_memory = device_memory;
  options.allow_soft_placement = true;  // Placeholders have no GPU kernel
  options.cuda_graphs = graphs;
  return options;
}

// The stats of the plan's one step graph (none: members == 0).
StepGraphStats GraphStats(const ExecutorPlan& plan) {
  return plan.step_graphs.empty() ? StepGraphStats() : plan.step_graphs[0]->stats();
}

struct Trained {
  std::vector<std::vector<float>> fetched;  // per step: the loss; then each variable
  PlanCounts counts;
  StepGraphStats stats;
};

// The momentum MLP of training_test_util.h on GPU:0, `steps` steps.
Trained TrainMlp(Mode graphs, bool device_memory, int steps, const std::vector<int64_t>& widths = {20, 16, 12, 4},
                 int64_t batch = 8) {
  training_test::Mlp m(widths, batch, "/device:GPU:0", {.learning_rate = 0.1, .momentum = 0.9});
  Session session(m.graph, FakeGpuOptions(graphs, device_memory));
  EXPECT_TRUE(session.Run(m.init).ok());
  const std::vector<Output> fetches = {m.loss};
  Trained out;
  for (int step = 0; step < steps; ++step) {
    auto r = session.Run(m.Batch(static_cast<uint64_t>(step)), fetches, {m.train});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    out.fetched.push_back({(*r)[0].scalar<float>()});
  }
  // The variables after training, every element.
  for (const Variable& v : m.vars) {
    auto r = session.Run({}, {v.value}, {});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    auto f = (*r)[0].flat<float>();
    out.fetched.emplace_back(f.begin(), f.end());
  }
  auto plan = session.impl().GetPlan(m.Batch(0), fetches, {m.train});
  EXPECT_TRUE(plan.ok());
  if (plan.ok()) {
    out.counts = CountItems(**plan);
    out.stats = GraphStats(**plan);
  }
  return out;
}

// The recorder notes each request's size and how many requests had been
// made when it was freed; what outlives the run stays live.
TEST(CaptureMemoryTest, TheRecorderNotesSizesAndWhenEachWasFreed) {
  AllocationRecorder* recorder = AllocationRecorder::Create(CpuAllocator());
  void* a = recorder->Allocate(64);
  void* b = recorder->Allocate(128);
  recorder->Deallocate(a, 64);
  void* c = recorder->Allocate(32);
  recorder->Deallocate(c, 32);
  const std::vector<CaptureRequest> requests = recorder->TakeRequests();
  recorder->Deallocate(b, 128);  // after the run: b stays live in it
  recorder->Release();
  const std::vector<CaptureRequest> expected = {
      {.bytes = 64, .freed_after = 2}, {.bytes = 128}, {.bytes = 32, .freed_after = 3}};
  EXPECT_EQ(requests, expected);
}

// Buffers outliving their allocator's owner (a step's outputs, freed by
// their readers on other threads) may be freed at once: the last one deletes
// the allocator, once (ASan and TSan run this test).
TEST(CaptureMemoryTest, TheLastBuffersFreedAtOnceOnSeveralThreadsDeleteItOnce) {
  constexpr int kBuffers = 4;
  for (int round = 0; round < 300; ++round) {
    AllocationRecorder* recorder = AllocationRecorder::Create(CpuAllocator());
    std::vector<void*> recorded;
    for (int i = 0; i < kBuffers; ++i) recorded.push_back(recorder->Allocate(64));
    const std::vector<CaptureRequest> requests = recorder->TakeRequests();
    recorder->Release();
    CaptureMemory* memory = CaptureMemory::Create(CpuAllocator(), requests);
    ASSERT_NE(memory, nullptr);
    std::vector<void*> captured;
    for (int i = 0; i < kBuffers; ++i) captured.push_back(memory->Allocate(64));
    memory->Release();
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kBuffers; ++i) {
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < kBuffers) {
        }
        recorder->Deallocate(recorded[static_cast<size_t>(i)], 64);
        memory->Deallocate(captured[static_cast<size_t>(i)], 64);
      });
    }
    for (std::thread& t : threads) t.join();
  }
}

// The graph's buffers hand out the recorded sequence; a request off it goes
// to the base allocator, except while strict (a CUDA capture), where it fails.
TEST(CaptureMemoryTest, OffTheSequenceGoesToTheBaseUnlessStrict) {
  CaptureMemory* memory = CaptureMemory::Create(CpuAllocator(), {{.bytes = 64}, {.bytes = 128}});
  ASSERT_NE(memory, nullptr);
  void* a = memory->Allocate(64);
  EXPECT_TRUE(memory->Owns(a));
  memory->set_strict(true);
  EXPECT_EQ(memory->Allocate(100), nullptr);
  EXPECT_TRUE(memory->mismatch());
  memory->set_strict(false);
  memory->Deallocate(a, 64);
  memory->Rewind();
  EXPECT_EQ(memory->Allocate(64), a);
  void* off = memory->Allocate(100);
  ASSERT_NE(off, nullptr);
  EXPECT_FALSE(memory->Owns(off));
  EXPECT_TRUE(memory->mismatch());
  memory->Deallocate(off, 100);
  memory->Deallocate(a, 64);
  memory->Release();
}

// Requests never live at once share bytes: the block is the recorded run's
// peak, not the sum. One whose bytes are still held when it comes (the
// kernels freed later than recorded) is off the sequence: it never gets
// memory in use.
TEST(CaptureMemoryTest, RequestsNeverLiveAtOnceShareBytes) {
  // a (1 KB) freed before c (1 KB) is made; b (4 KB) lives through both and
  // past the run.
  const std::vector<CaptureRequest> requests = {
      {.bytes = 1024, .freed_after = 2}, {.bytes = 4096}, {.bytes = 1024, .freed_after = 3}};
  CaptureMemory* memory = CaptureMemory::Create(CpuAllocator(), requests);
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->requested_bytes(), 6144u);
  EXPECT_EQ(memory->bytes(), 5120u);
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run);
    memory->Rewind();
    char* a = static_cast<char*>(memory->Allocate(1024));
    char* b = static_cast<char*>(memory->Allocate(4096));
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(a + 1024 <= b || b + 4096 <= a) << "b is live with a";
    memory->Deallocate(a, 1024);
    char* c = static_cast<char*>(memory->Allocate(1024));
    EXPECT_EQ(c, a) << "c takes a's bytes";
    memory->Deallocate(c, 1024);
    EXPECT_TRUE(memory->exact());
    memory->Deallocate(b, 4096);
  }
  // a still held when c comes: c is off the sequence, never over a.
  memory->Rewind();
  void* a = memory->Allocate(1024);
  void* b = memory->Allocate(4096);
  memory->set_strict(true);
  EXPECT_EQ(memory->Allocate(1024), nullptr);
  EXPECT_TRUE(memory->mismatch());
  memory->set_strict(false);
  void* c = memory->Allocate(1024);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(memory->Owns(c));
  EXPECT_FALSE(memory->exact());
  for (auto [p, n] : {std::pair{a, 1024}, {b, 4096}, {c, 1024}}) memory->Deallocate(p, static_cast<size_t>(n));
  // A buffer still out from the run before is not handed out again.
  memory->Rewind();
  void* a1 = memory->Allocate(1024);
  memory->Rewind();
  memory->set_strict(true);
  EXPECT_EQ(memory->Allocate(1024), nullptr);
  memory->set_strict(false);
  memory->Deallocate(a1, 1024);
  memory->Release();
}

TEST(StepGraphTest, TrainingWithAStepGraphMatchesTrainingWithout) {
  for (bool device_memory : {false, true}) {
    SCOPED_TRACE(device_memory ? "device memory" : "host memory");
    const Trained plain = TrainMlp(Mode::kOff, device_memory, 8);
    const Trained graph = TrainMlp(Mode::kOn, device_memory, 8);
    EXPECT_EQ(plain.fetched, graph.fetched) << "bit for bit";
    EXPECT_LT(graph.fetched[7][0], graph.fetched[0][0]) << "the model learns";
    EXPECT_EQ(plain.counts.step_graphs, 0);
    EXPECT_EQ(graph.counts.step_graphs, 1) << graph.counts.ToString();
    // Every GPU kernel of the step is in it: the plan runs far fewer items.
    EXPECT_EQ(graph.counts.captured, graph.stats.members);
    EXPECT_GE(graph.stats.members, 20) << graph.counts.ToString();
    EXPECT_EQ(graph.counts.kernels + graph.counts.captured - 1, plain.counts.kernels);
    EXPECT_LT(graph.counts.items, plain.counts.items / 3) << plain.counts.ToString() << " | " << graph.counts.ToString();
  }
}

TEST(StepGraphTest, WarmsUpTwiceRecordsOnceAndReplays) {
  const Trained t = TrainMlp(Mode::kOn, true, 8);
  EXPECT_FALSE(t.stats.off) << t.stats.off_reason;
  EXPECT_FALSE(t.stats.device_graph) << "a fake GPU re-runs what it recorded";
  EXPECT_EQ(t.stats.eager_runs, 2);
  EXPECT_EQ(t.stats.captures, 1);
  EXPECT_EQ(t.stats.recaptures, 0);
  EXPECT_EQ(t.stats.replays, 5);
  EXPECT_GT(t.stats.graph_bytes, 0);
  EXPECT_LT(t.stats.graph_bytes, t.stats.requested_bytes);
}

// A step graph's memory is what its kernels hold at once, not the sum of
// what they ask for: buffers whose lifetimes do not meet share bytes (the
// MNIST MLP at batch 100: 1.50 MB against 2.23 MB, its input included).
TEST(StepGraphTest, BuffersNeverLiveAtOnceShareTheGraphsMemory) {
  const Trained t = TrainMlp(Mode::kOn, true, 4, {784, 256, 256, 10}, 100);
  EXPECT_EQ(t.stats.captures, 1);
  EXPECT_EQ(t.stats.replays, 1);
  EXPECT_FALSE(t.stats.off) << t.stats.off_reason;
  EXPECT_LT(t.stats.graph_bytes, t.stats.requested_bytes * 3 / 4)
      << t.stats.graph_bytes << " of " << t.stats.requested_bytes << " bytes";
  EXPECT_EQ(t.fetched, TrainMlp(Mode::kOff, true, 4, {784, 256, 256, 10}, 100).fetched) << "bit for bit";
}

TEST(StepGraphTest, AutoLeavesFakeGpusAlone) {
  const Trained t = TrainMlp(Mode::kAuto, true, 3);
  EXPECT_EQ(t.counts.step_graphs, 0) << "kAuto: only GPUs that record their work (CUDA)";
}

// x [batch, 6] on the CPU; on GPU:0: y = sum(relu(x * w + 0.5)) over both axes.
struct Small {
  Graph graph;
  Output x, y, w_value;
  Node* init = nullptr;
  explicit Small(int64_t rows = -1) {
    Scope root(graph);
    Scope g = root.WithDevice("/device:GPU:0");
    x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({rows, 6}));
    Variable w = GetVariable(g, "w", {6}, {.initializer = training_test::FixedValues()});
    w_value = w.value;
    y = Sum(g, Relu(g, Add(g, Mul(g, x, w.value), Const(g, 0.5f))), {0, 1});
    init = GlobalVariablesInitializer(graph);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
  }
};

TEST(StepGraphTest, OtherShapesRunOneByOneAndThreeInARowTurnItOff) {
  Small m;
  Session plain(m.graph, FakeGpuOptions(Mode::kOff, true));
  Session graph(m.graph, FakeGpuOptions(Mode::kOn, true));
  ASSERT_TRUE(plain.Run(m.init).ok());
  ASSERT_TRUE(graph.Run(m.init).ok());
  // Rows per step: settled at 8 (captured at the third step), one smaller
  // last batch, 8 again (replayed), then three changes in a row.
  const std::vector<int64_t> rows = {8, 8, 8, 8, 5, 8, 8, 3, 4, 3, 8, 8};
  for (size_t step = 0; step < rows.size(); ++step) {
    const FeedList feed = {{m.x, Random<float>({rows[step], 6}, 40 + step)}};
    auto a = plain.Run(feed, {m.y}, {});
    auto b = graph.Run(feed, {m.y}, {});
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
    EXPECT_EQ((*a)[0].scalar<float>(), (*b)[0].scalar<float>()) << "step " << step;
  }
  auto plan = graph.impl().GetPlan({{m.x, Random<float>({8, 6}, 1)}}, {m.y}, {});
  ASSERT_TRUE(plan.ok());
  const StepGraphStats s = GraphStats(**plan);
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.replays, 3) << "steps 3, 5 and 6";
  EXPECT_EQ(s.shape_changes, 4) << "steps 4, 7, 8, 9";
  EXPECT_TRUE(s.off);
  EXPECT_NE(s.off_reason.find("change shape"), std::string::npos) << s.off_reason;
  EXPECT_NE(s.off_reason.find("[3,6]"), std::string::npos) << s.off_reason;
  EXPECT_EQ(s.eager_runs, 2 + 4 + 2) << "warm-up, the changes, and every step after it went off";
}

TEST(StepGraphTest, AVariableWhoseBufferMovedIsRecordedAgain) {
  Small m(8);
  Session graph(m.graph, FakeGpuOptions(Mode::kOn, true));
  Session plain(m.graph, FakeGpuOptions(Mode::kOff, true));
  ASSERT_TRUE(graph.Run(m.init).ok());
  ASSERT_TRUE(plain.Run(m.init).ok());
  const FeedList feed = {{m.x, Random<float>({8, 6}, 3)}};
  for (int step = 0; step < 4; ++step) ASSERT_TRUE(graph.Run(feed, {m.y}, {}).ok());
  auto plan = graph.impl().GetPlan(feed, {m.y}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(GraphStats(**plan).captures, 1);
  // A restore's way: the variable gets a new buffer, with new values.
  const Tensor restored = Random<float>({6}, 99);
  for (Session* s : {&graph, &plain}) {
    auto p = s->impl().GetPlan(feed, {m.y}, {});
    ASSERT_TRUE(p.ok());
    int found = 0;
    for (const TensorValue& c : (*p)->constants) {
      if (!c.is_ref()) continue;
      std::lock_guard<std::mutex> lock(*c.ref_mu);
      *c.ref = restored.DeepCopy();
      ++found;
    }
    ASSERT_EQ(found, 1);
  }
  auto a = plain.Run(feed, {m.y}, {});
  auto b = graph.Run(feed, {m.y}, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0].scalar<float>(), (*b)[0].scalar<float>()) << "the new values, not the recorded buffer's";
  ASSERT_TRUE(graph.Run(feed, {m.y}, {}).ok());
  const StepGraphStats s = GraphStats(**plan);
  EXPECT_EQ(s.captures, 2);
  EXPECT_EQ(s.recaptures, 1);
  EXPECT_EQ(s.replays, 2) << "step 3 and the last";
  EXPECT_FALSE(s.off);
}

// Two threads run `steps` steps each, feeding x = v (thread * 1000 + step) in
// every element of [256]: the number of fetched elements that are not
// expected(o, v) for fetch o, plus failed steps.
int WrongValuesFromTwoThreads(Session& session, const Output& x, const std::vector<Output>& fetches, int steps,
                              const std::function<float(size_t, float)>& expected) {
  std::atomic<int> wrong{0};
  auto run = [&](int thread) {
    for (int step = 0; step < steps; ++step) {
      const float v = static_cast<float>(thread * 1000 + step);
      Tensor in(kFloat32, TensorShape{256});
      for (float& e : in.flat<float>()) e = v;
      auto r = session.Run({{x, in}}, fetches, {});
      if (!r.ok()) {
        ++wrong;
        continue;
      }
      for (size_t o = 0; o < fetches.size(); ++o) {
        for (float e : (*r)[o].flat<float>()) wrong += e != expected(o, v);
      }
    }
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  return wrong.load();
}

TEST(StepGraphTest, AnOutputHeldPastItsStepIsNeverWrittenOver) {
  // y = x * 2 + 1 on GPU:0, run by two threads at once: a step's fetch holds
  // the graph's output buffer (a host-memory GPU's fetch is that buffer until
  // the step copies it for the caller) while the other thread's step runs
  // the graph. That step runs one by one instead of writing over it.
  Graph graph;
  Scope root(graph);
  Scope g = root.WithDevice("/device:GPU:0");
  Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({256}));
  Output y = Add(g, Mul(g, x, Const(g, 2.0f)), Const(g, 1.0f));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph, FakeGpuOptions(Mode::kOn, false));
  constexpr int kSteps = 60;
  EXPECT_EQ(WrongValuesFromTwoThreads(session, x, {y}, kSteps, [](size_t, float v) { return 2 * v + 1; }), 0)
      << "every step's output as its own input makes it";
  auto plan = session.impl().GetPlan({{x, Tensor(kFloat32, TensorShape{256})}}, {y}, {});
  ASSERT_TRUE(plan.ok());
  const StepGraphStats s = GraphStats(**plan);
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.eager_runs + s.captures + s.replays, 2 * kSteps);
  EXPECT_EQ(s.eager_runs, 2 + s.held_outputs);
  EXPECT_GT(s.replays, 0);
}

TEST(StepGraphTest, AHeldOutputThatIsAnInputBufferIsNeverWrittenOver) {
  // As above, on a GPU with memory of its own, with an output that passes a
  // graph input through (Identity): its buffer is the graph's input buffer,
  // which each replay copies the step's input into, held until the fetch's
  // copy to the host has read it. (The window between the graph's item and
  // that copy is short: a run here rarely catches a missed hold, but any
  // catch is a wrong value.)
  Graph graph;
  Scope root(graph);
  Scope g = root.WithDevice("/device:GPU:0");
  Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({256}));
  Output same = Identity(g.WithOpName("same"), x);
  Output y = Mul(g, x, Const(g, 2.0f));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph, FakeGpuOptions(Mode::kOn, true));
  constexpr int kSteps = 60;
  EXPECT_EQ(WrongValuesFromTwoThreads(session, x, {same, y}, kSteps,
                                      [](size_t o, float v) { return o == 0 ? v : 2 * v; }),
            0)
      << "every step's outputs as its own input makes them";
  auto plan = session.impl().GetPlan({{x, Tensor(kFloat32, TensorShape{256})}}, {same, y}, {});
  ASSERT_TRUE(plan.ok());
  const StepGraphStats s = GraphStats(**plan);
  EXPECT_EQ(s.eager_runs + s.captures + s.replays, 2 * kSteps);
  EXPECT_GT(s.replays, 0);
}

TEST(StepGraphTest, RandomKernelsDrawTheirNextNumbersAtEachReplay) {
  auto draws = [](Mode mode) {
    Graph graph;
    Scope root(graph);
    Scope g = root.WithDevice("/device:GPU:0");
    Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({5}));
    Output r = RandomUniform(g, Const(g, Tensor::Vec<int32_t>({5})), kFloat32, /*seed=*/7);
    Output y = Mul(g, Add(g, r, x), Const(g, 3.0f));
    EXPECT_TRUE(root.ok());
    Session session(graph, FakeGpuOptions(mode, true));
    std::vector<std::vector<float>> out;
    for (int step = 0; step < 7; ++step) {
      auto v = session.Run({{x, Tensor::Vec<float>({0, 0, 0, 0, 0})}}, {y}, {});
      EXPECT_TRUE(v.ok()) << v.status().ToString();
      if (!v.ok()) break;
      auto f = (*v)[0].flat<float>();
      out.emplace_back(f.begin(), f.end());
    }
    auto plan = session.impl().GetPlan({{x, Tensor::Vec<float>({0, 0, 0, 0, 0})}}, {y}, {});
    EXPECT_TRUE(plan.ok());
    return std::make_pair(out, plan.ok() ? GraphStats(**plan) : StepGraphStats());
  };
  const auto [plain, plain_stats] = draws(Mode::kOff);
  const auto [graph, graph_stats] = draws(Mode::kOn);
  EXPECT_EQ(plain, graph) << "the same stream, step after step";
  EXPECT_NE(graph[5], graph[6]) << "each replay draws new numbers";
  EXPECT_EQ(graph_stats.replays, 4);
}

TEST(StepGraphTest, AKernelOnTheCpuSplitsTheGpusWork) {
  // a -> (CPU) b -> c on GPU:0, and d from a: the region is {a, d}; c,
  // reachable from it through the CPU, runs outside.
  Graph graph;
  Scope root(graph);
  Scope g = root.WithDevice("/device:GPU:0");
  Scope cpu = root.WithDevice("/device:CPU:0");
  Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({3}));
  Output a = Mul(g.WithOpName("a"), x, Const(g, 2.0f));
  Output b = Square(cpu.WithOpName("b"), a);
  Output c = Add(g.WithOpName("c"), b, a);
  Output d = Neg(g.WithOpName("d"), a);
  ASSERT_TRUE(root.ok());
  const FeedList feed = {{x, Tensor::Vec<float>({1, 2, 3})}};
  for (Mode mode : {Mode::kOff, Mode::kOn}) {
    Session session(graph, FakeGpuOptions(mode, true));
    for (int step = 0; step < 4; ++step) {
      auto r = session.Run(feed, {c, d}, {});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ((*r)[0].flat<float>()[2], 36.f + 6.f);
      EXPECT_EQ((*r)[1].flat<float>()[1], -4.f);
    }
    auto plan = session.impl().GetPlan(feed, {c, d}, {});
    ASSERT_TRUE(plan.ok());
    const PlanCounts counts = CountItems(**plan);
    if (mode == Mode::kOn) {
      EXPECT_EQ(counts.step_graphs, 1) << counts.ToString();
      EXPECT_EQ(counts.captured, 2) << "a and d (and a's constant is the plan's)";
      EXPECT_EQ(GraphStats(**plan).replays, 1);
    } else {
      EXPECT_EQ(counts.step_graphs, 0);
    }
  }
}

}  // namespace
}  // namespace tw
