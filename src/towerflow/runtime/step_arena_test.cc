// Step arenas (step_arena.h) through a Session: a training step whose tensors
// come from the arena gives bit for bit the values of one that allocates each
// tensor; two recordings fix the layout and later steps take their buffers
// from it; a buffer a kernel keeps past its planned end is never written over;
// steps of one plan run at once on several threads; sizes that change keep
// the allocator; kAuto serves devices with memory of their own only.
#include "towerflow/runtime/step_arena.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/shape_inference.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/runtime/training_test_util.h"

namespace tw {
namespace {

using fusion_test::Random;

using training_test::Mlp;

// A 784-64-10 MLP trained with momentum, its variables from fixed values.
Mlp MakeMlp(const std::string& device = "") {
  return Mlp({784, 64, 10}, 32, device, {.learning_rate = 0.05, .momentum = 0.9});
}

struct Trained {
  std::vector<float> losses;
  std::vector<Tensor> vars;
  ArenaStats stats;
  bool has_arena = false;
};

Trained Train(Mlp& mlp, SessionOptions options, int steps) {
  Session session(mlp.graph, options);
  EXPECT_TRUE(session.Run(mlp.init).ok());
  Trained out;
  for (int step = 0; step < steps; ++step) {
    auto r = session.Run(mlp.Batch(static_cast<uint64_t>(step)), {mlp.loss}, {mlp.train});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) out.losses.push_back((*r)[0].scalar<float>());
  }
  auto plan = session.impl().GetPlan(mlp.Batch(0), {mlp.loss}, {mlp.train});
  EXPECT_TRUE(plan.ok());
  if (plan.ok() && (*plan)->arena != nullptr) {
    out.has_arena = true;
    out.stats = (*plan)->arena->stats();
  }
  std::vector<Output> values;
  for (const Variable& v : mlp.vars) values.push_back(v.value);
  auto r = session.Run(values);
  EXPECT_TRUE(r.ok());
  if (r.ok()) out.vars = *r;
  return out;
}

void ExpectSameBits(const Trained& a, const Trained& b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_EQ(a.losses[i], b.losses[i]) << "step " << i;
  ASSERT_EQ(a.vars.size(), b.vars.size());
  for (size_t v = 0; v < a.vars.size(); ++v) {
    EXPECT_EQ(a.vars[v].ToVector<float>(), b.vars[v].ToVector<float>()) << "variable " << v;
  }
}

TEST(StepArenaTest, TrainingStepsMatchTheAllocatorBitForBit) {
  Mlp mlp = MakeMlp();
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 2};
  options.step_arena = SessionOptions::ArenaMode::kOff;
  const Trained plain = Train(mlp, options, 8);
  options.step_arena = SessionOptions::ArenaMode::kOn;
  const Trained arena = Train(mlp, options, 8);
  ExpectSameBits(plain, arena);
  EXPECT_LT(plain.losses.back(), plain.losses.front()) << "the model learns";
  EXPECT_FALSE(plain.has_arena);
  ASSERT_TRUE(arena.has_arena);
  const ArenaStats& s = arena.stats;
  EXPECT_EQ(s.recordings, 2) << "two recordings with the same sizes fix the layout";
  EXPECT_EQ(s.served_steps, 6);
  EXPECT_GT(s.planned_buffers, 10);
  EXPECT_EQ(s.arena_allocations, 6 * s.planned_buffers) << "every planned buffer served in every step";
  EXPECT_EQ(s.fallbacks, 0);
  EXPECT_EQ(s.unplanned_allocations, 6 * s.escaped_buffers) << "the fetched loss";
  EXPECT_GE(s.escaped_buffers, 1);
  EXPECT_LT(s.arena_bytes, s.planned_bytes) << "buffers share bytes";
  EXPECT_FALSE(s.gave_up);
}

TEST(StepArenaTest, AutoServesDevicesWithMemoryOfTheirOwnOnly) {
  // CPUs and fake GPUs have host memory: kAuto leaves them to their allocators.
  Mlp mlp = MakeMlp("/device:GPU:0");
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 2, .num_fake_gpus = 1};
  const Trained automatic = Train(mlp, options, 4);
  EXPECT_FALSE(automatic.has_arena);
  options.step_arena = SessionOptions::ArenaMode::kOn;
  const Trained on = Train(mlp, options, 4);
  ASSERT_TRUE(on.has_arena);
  EXPECT_EQ(on.stats.served_steps, 2);
  EXPECT_EQ(on.stats.fallbacks, 0);
  ExpectSameBits(automatic, on);
}

// y = x; with keep != 0 also keeps x's tensor (sharing its buffer) in
// g_kept, as a queue's enqueue or a variable's Assign keeps a value past the
// step that made it.
std::mutex g_kept_mu;
std::vector<Tensor> g_kept;  // guarded by g_kept_mu
class KeepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    if (ctx->input(1).scalar<int32_t>() != 0) {
      std::lock_guard<std::mutex> lock(g_kept_mu);
      g_kept.push_back(ctx->input(0));
    }
    ctx->set_output(0, Tensor::Scalar<int32_t>(0));
  }
};

void RegisterKeepOp() {
  static bool done = [] {
    EnsureKernelsRegistered();
    OpRegistry::Global()
        .Register(OpDefBuilder("TestArenaKeep").Input("x", "float").Input("keep", "int32").Output("y", "int32")
                      .Stateful().Build())
        .Check();
    KernelRegistry::Global().RegisterUntyped<KeepOp>("TestArenaKeep", kDeviceCpu);
    return true;
  }();
  (void)done;
}

TEST(StepArenaTest, ABufferKeptPastItsPlannedEndIsNeverWrittenOver) {
  RegisterKeepOp();
  // doubled = 2 f is read by `keep` only; tripled = 3 f is made after it, so
  // the layout puts tripled in doubled's bytes. Steps that keep `doubled` (not
  // the two recordings) must give tripled other bytes.
  Graph graph;
  Scope s(graph);
  Output f = Placeholder(s.WithOpName("f"), kFloat32, PartialShape({4096}));
  Output keep_flag = Placeholder(s.WithOpName("keep_flag"), kInt32, PartialShape({}));
  Output doubled = Mul(s.WithOpName("doubled"), f, Const(s, 2.0f));
  Node* keep = NodeBuilder(s.WithOpName("keep"), "TestArenaKeep").Input(doubled).Input(keep_flag).Finalize();
  Output tripled = Mul(s.WithOpName("tripled").WithControlDependencies({Output(keep, 0)}), f, Const(s, 3.0f));
  Output total = Sum(s.WithOpName("total"), Neg(s, tripled), {0});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  SessionOptions options{.inter_op_threads = 1, .intra_op_threads = 1};
  options.step_arena = SessionOptions::ArenaMode::kOn;
  Session session(graph, options);
  {
    std::lock_guard<std::mutex> lock(g_kept_mu);
    g_kept.clear();
  }
  for (int step = 0; step < 6; ++step) {
    Tensor value(kFloat32, TensorShape{4096});
    for (int64_t i = 0; i < 4096; ++i) value.flat<float>()[i] = static_cast<float>(step * 10000 + i);
    auto r = session.Run({{f, value}, {keep_flag, Tensor::Scalar<int32_t>(step >= 2)}}, {total});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  auto plan = session.impl().GetPlan({{f, Tensor()}, {keep_flag, Tensor()}}, {total}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_NE((*plan)->arena, nullptr);
  const ArenaStats stats = (*plan)->arena->stats();
  EXPECT_EQ(stats.served_steps, 4);
  EXPECT_GE(stats.fallbacks, 4) << "tripled found doubled's bytes taken in every step that kept them";
  std::lock_guard<std::mutex> lock(g_kept_mu);
  ASSERT_EQ(g_kept.size(), 4u);
  for (size_t k = 0; k < g_kept.size(); ++k) {
    const int step = static_cast<int>(k) + 2;
    const auto v = g_kept[k].flat<float>();
    for (int64_t i = 0; i < 4096; i += 511) {
      ASSERT_EQ(v[static_cast<size_t>(i)], 2.0f * static_cast<float>(step * 10000 + i)) << "kept value of step " << step;
    }
  }
  g_kept.clear();
}

TEST(StepArenaTest, StepsOfOnePlanRunAtOnce) {
  // y = ((x + 1) * 2 - 3) summed, from four threads at once, each its own x.
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, PartialShape({1000}));
  Output y = Sub(s, Mul(s, Add(s, x, Const(s, 1.0f)), Const(s, 2.0f)), Const(s, 3.0f));
  Output total = Sum(s, Neg(s, y), {0});
  ASSERT_TRUE(s.ok());
  SessionOptions options{.inter_op_threads = 2, .intra_op_threads = 1};
  options.step_arena = SessionOptions::ArenaMode::kOn;
  Session session(graph, options);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < 50; ++step) {
        const float v = static_cast<float>(t * 100 + step);
        Tensor value(kFloat32, TensorShape{1000});
        for (float& e : value.flat<float>()) e = v;
        auto r = session.Run({{x, value}}, {total, y});
        if (!r.ok() || (*r)[0].scalar<float>() != -1000.0f * ((v + 1) * 2 - 3) ||
            (*r)[1].flat<float>()[999] != (v + 1) * 2 - 3) {
          ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  auto plan = session.impl().GetPlan({{x, Tensor()}}, {total, y}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_NE((*plan)->arena, nullptr);
  EXPECT_GT((*plan)->arena->stats().served_steps, 150);
}

TEST(StepArenaTest, SizesThatChangeKeepTheAllocator) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, PartialShape({-1}));
  Output total = Sum(s, Neg(s, Mul(s, x, x)), {0});
  ASSERT_TRUE(s.ok());
  SessionOptions options{.inter_op_threads = 1, .intra_op_threads = 1};
  options.step_arena = SessionOptions::ArenaMode::kOn;
  Session session(graph, options);
  for (int step = 0; step < 8; ++step) {
    Tensor value(kFloat32, TensorShape{10 + step});
    for (float& e : value.flat<float>()) e = 1;
    auto r = session.Run({{x, value}}, {total});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)[0].scalar<float>(), -static_cast<float>(10 + step));
  }
  auto plan = session.impl().GetPlan({{x, Tensor()}}, {total}, {});
  ASSERT_TRUE(plan.ok());
  const ArenaStats stats = (*plan)->arena->stats();
  EXPECT_TRUE(stats.gave_up);
  EXPECT_EQ(stats.recordings, ArenaPool::kMaxRecordings);
  EXPECT_EQ(stats.served_steps, 0);
}

}  // namespace
}  // namespace tw
