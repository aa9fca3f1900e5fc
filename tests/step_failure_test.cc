// Faults inside a step (issue 8, item 4): a kernel that fails mid-step aborts
// that step only, and running out of memory is ResourceExhausted naming the
// node and its device, after which the session keeps working.
//
// What a failed step leaves behind, as checked here: an update that depends on
// the failing node (through data or a control edge) never runs; an update on an
// independent branch of the same step runs entirely or not at all (which one
// depends on scheduling: the executor starts no node after the failure, but
// one already running finishes), never partly, since it holds the variable's
// lock for the whole update.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/core/allocator.h"
#include "towerflow/towerflow.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;

bool Contains(const Status& s, const std::string& part) {
  return s.message().find(part) != std::string::npos;
}

struct StepGraph {
  Graph graph;
  Output bytes, decoded_sum, x, reshaped;
  Variable counter, acc, after;
  Node* bump = nullptr;          // counter += 1 (every element): independent of the decode
  Node* accumulate = nullptr;    // acc += sum(decode(bytes)): needs the decode's output
  Node* after_decode = nullptr;  // after += 1, with a control edge from the decode
  Node* init = nullptr;
};

std::unique_ptr<StepGraph> Build() {
  auto g = std::make_unique<StepGraph>();
  Scope root(g->graph);
  g->bytes = Placeholder(root.WithOpName("bytes"), kString);
  Output decoded = io::DecodeRaw(root.WithOpName("decode"), g->bytes, kFloat32);
  g->decoded_sum = Sum(root.WithOpName("decoded_sum"), decoded, {});
  g->x = Placeholder(root.WithOpName("x"), kFloat32);
  g->reshaped = Reshape(root.WithOpName("reshape"), g->x, {2, 3});
  g->counter = GetVariable(root, "counter", TensorShape{4096}, {.initializer = ZerosInitializer()});
  g->acc = GetVariable(root, "acc", TensorShape{}, {.initializer = ZerosInitializer()});
  g->after = GetVariable(root, "after", TensorShape{}, {.initializer = ZerosInitializer()});
  g->bump = AssignAdd(root.WithOpName("bump"), g->counter, OnesLike(root, g->counter.value)).node;
  g->accumulate = AssignAdd(root.WithOpName("accumulate"), g->acc, g->decoded_sum).node;
  g->after_decode = AssignAdd(root.WithOpName("after_decode").WithControlDependencies({decoded}), g->after,
                              Const(root, 1.0f))
                        .node;
  g->init = GlobalVariablesInitializer(g->graph);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  return g;
}

std::string Floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

class StepFailureTest : public ::testing::TestWithParam<int> {};

// 300 steps, one in three fed a string of 5 bytes (not a multiple of 4): the
// bad ones fail naming 'decode' (DecodeRaw) and change nothing that depends on
// it; the good ones succeed in the same session, before and after.
TEST_P(StepFailureTest, AKernelFailingMidStepAbortsOnlyThatStep) {
  auto g = Build();
  Session session(g->graph, {.inter_op_threads = GetParam(), .intra_op_threads = 1});
  ASSERT_TRUE(session.Run(g->init).ok());
  std::mt19937 rng(GetParam());
  float expected_acc = 0, expected_after = 0;
  int failed = 0, bump_ran_in_failed = 0;
  float counter = 0;
  for (int step = 0; step < 300; ++step) {
    SCOPED_TRACE(step);
    const bool bad = step % 3 == 1;
    const float v = static_cast<float>(rng() % 100);
    const std::string input = bad ? std::string(5, 'x') : Floats({v, 1.0f});
    auto out =
        session.Run({{g->bytes, Tensor::String(input)}}, {}, {g->bump, g->accumulate, g->after_decode});
    if (bad) {
      ASSERT_FALSE(out.ok());
      EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
      EXPECT_TRUE(Contains(out.status(), "'decode' (DecodeRaw)")) << out.status().ToString();
      EXPECT_TRUE(Contains(out.status(), "length 5 that is not a multiple of 4")) << out.status().ToString();
      ++failed;
    } else {
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      expected_acc += v + 1;
      expected_after += 1;
    }
    auto values = session.Run({g->counter.value, g->acc.value, g->after.value});
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    const auto c = (*values)[0].flat<float>();
    // The independent update ran entirely or not at all.
    const float now = c[0];
    int64_t partial = 0;
    for (float e : c) partial += e != now;
    EXPECT_EQ(partial, 0) << "counter updated partly";
    if (bad) {
      EXPECT_TRUE(now == counter || now == counter + 1) << now << " after " << counter;
      bump_ran_in_failed += now == counter + 1;
    } else {
      EXPECT_EQ(now, counter + 1);
    }
    counter = now;
    // The dependent updates ran exactly in the good steps.
    EXPECT_EQ((*values)[1].scalar<float>(), expected_acc);
    EXPECT_EQ((*values)[2].scalar<float>(), expected_after);
  }
  EXPECT_EQ(failed, 100);
  std::printf(
      "[ step failure ] inter_op_threads=%d: 100 of 300 steps failed; the independent update ran in %d of "
      "them\n",
      GetParam(), bump_ran_in_failed);
}

// Failing steps and good ones from several threads at once: each good step
// gets its own answer, each bad one its own error.
TEST_P(StepFailureTest, FailingStepsDoNotDisturbConcurrentOnes) {
  auto g = Build();
  Session session(g->graph, {.inter_op_threads = GetParam(), .intra_op_threads = 1});
  ASSERT_TRUE(session.Run(g->init).ok());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        const bool bad = (i + t) % 2 == 0;
        const float v = static_cast<float>(t * 1000 + i);
        // A Reshape of a fed tensor of the wrong size, or a good one.
        Tensor x = bad ? Tensor::Vec<float>({v, v, v, v, v}) : Tensor::Vec<float>({v, v, v, v, v, v});
        auto out = session.Run({{g->x, x}}, {g->reshaped});
        if (bad) {
          if (out.ok() || out.status().code() != Code::kInvalidArgument ||
              !Contains(out.status(), "'reshape' (Reshape)") || !Contains(out.status(), "[5]") ||
              !Contains(out.status(), "[2,3]")) {
            ++wrong;
          }
        } else if (!out.ok() || (*out)[0].shape() != TensorShape({2, 3}) || (*out)[0].flat<float>()[5] != v) {
          ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(InterOpThreads, StepFailureTest, ::testing::Values(1, 4));

// Out of memory: a Fill of 2^40 floats (4 TiB: a valid shape, more memory than
// the machine has) is ResourceExhausted naming the node, its op, its device and
// the shape, at once; then the session runs other steps. On a fake GPU the
// same names the GPU. A request above the machine's RAM + swap is refused by
// the host allocator itself, so the outcome does not depend on the kernel's
// overcommit policy (with vm.overcommit_memory=1 malloc would grant it and the
// first write would bring the OOM killer).
TEST(OutOfMemoryTest, ResourceExhaustedNamesTheNodeAndTheSessionGoesOn) {
  EXPECT_GE(MaxHostAllocationBytes(), size_t{64} << 20);
  EXPECT_EQ(CpuAllocator()->Allocate(MaxHostAllocationBytes() + 1), nullptr);
  Graph graph;
  Scope root(graph);
  Output dims = Placeholder(root.WithOpName("dims"), kInt32);
  Output on_cpu = Fill(root.WithOpName("big/fill").WithDevice("/device:CPU:0"), dims, Const(root, 1.0f));
  Output on_gpu = Fill(root.WithOpName("gpu/fill").WithDevice("/device:GPU:0"), dims, Const(root, 2.0f));
  Variable v = GetVariable(root, "v", TensorShape{3}, {.initializer = ZerosInitializer()});
  Node* bump = AssignAdd(root, v, Const(root, std::vector<float>{1, 1, 1}, TensorShape{3})).node;
  Node* init = GlobalVariablesInitializer(graph);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph, {.num_fake_gpus = 1});
  ASSERT_TRUE(session.Run(init).ok());
  const Tensor huge = Tensor::Vec<int32_t>({1 << 20, 1 << 20});
  for (int i = 0; i < 3; ++i) {
    for (const auto& [fetch, device] :
         {std::pair{on_cpu, "/device:CPU:0"}, std::pair{on_gpu, "/device:GPU:0"}}) {
      SCOPED_TRACE(device);
      const Clock::time_point start = Clock::now();
      auto out = session.Run({{dims, huge}}, {fetch}, {bump});
      EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
      ASSERT_FALSE(out.ok());
      EXPECT_EQ(out.status().code(), Code::kResourceExhausted) << out.status().ToString();
      EXPECT_TRUE(Contains(out.status(), StrCat("'", fetch.node->name(), "' (Fill)")))
          << out.status().ToString();
      EXPECT_TRUE(Contains(out.status(), device)) << out.status().ToString();
      EXPECT_TRUE(Contains(out.status(), "float[1048576,1048576]")) << out.status().ToString();
      // The session goes on: a small Fill on the same node, and a variable update.
      auto small = session.Run({{dims, Tensor::Vec<int32_t>({2, 2})}}, {fetch}, {bump});
      ASSERT_TRUE(small.ok()) << small.status().ToString();
      EXPECT_EQ((*small)[0].NumElements(), 4);
    }
  }
  auto value = session.Run({v.value});
  ASSERT_TRUE(value.ok());
  // 6 good steps bumped it; each failed one either did (same step, independent
  // branch) or did not, entirely.
  const float got = (*value)[0].flat<float>()[0];
  EXPECT_GE(got, 6.0f);
  EXPECT_LE(got, 12.0f);
  EXPECT_EQ((*value)[0].ToVector<float>(), std::vector<float>(3, got));
}

}  // namespace
}  // namespace tw
