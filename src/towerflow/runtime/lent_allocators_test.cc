// Allocators lent by a kernel to the producers of its inputs
// (OpKernel::LendsInputBuffers / InputAllocator, plan.h's output_sinks):
// producers on the kernel's device make those inputs from them, element-wise
// producers included (they allocate instead of forwarding their own input),
// while constants, producers on another device and outputs read only by
// other kernels keep their own allocators; the values are unchanged.
#include <gtest/gtest.h>

#include <atomic>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

// The CPU's allocator, counted.
class CountingAllocator final : public Allocator {
 public:
  std::string Name() const override { return "lent"; }
  void* Allocate(size_t bytes) override {
    allocations.fetch_add(1);
    return CpuAllocator()->Allocate(bytes);
  }
  void Deallocate(void* ptr, size_t bytes) override { CpuAllocator()->Deallocate(ptr, bytes); }
  size_t BytesInUse() const override { return CpuAllocator()->BytesInUse(); }
  std::atomic<int> allocations{0};
};

constexpr int kMaxInputs = 4;
// Static: a buffer may outlive its session (a fetched value).
CountingAllocator g_lent[kMaxInputs];

// Lends g_lent[i] for input i; output i is 1 where input i came from it.
class LenderOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool LendsInputBuffers() const override { return true; }
  Allocator* InputAllocator(int i) override { return i < kMaxInputs ? &g_lent[i] : nullptr; }
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{ctx->num_inputs()}, &out));
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const auto& buffer = ctx->input(i).buffer();
      out->data<float>()[i] = buffer != nullptr && i < kMaxInputs && buffer->allocator() == &g_lent[i] ? 1.0f : 0.0f;
    }
  }
};

void RegisterLender() {
  static bool done = [] {
    EnsureKernelsRegistered();
    OpDef def = OpDefBuilder("TestLender").ListInput("x", "T", "N").Output("lent", "float")
                    .TypeAttr("T", {kFloat32}).Build();
    OpRegistry::Global().Register(def).Check();
    KernelRegistry::Global().RegisterUntyped<LenderOp>("TestLender", kDeviceCpu);
    return true;
  }();
  (void)done;
}

Output Lender(const Scope& s, const std::vector<Output>& inputs) {
  return Output(NodeBuilder(s, "TestLender").Inputs(inputs).Finalize(), 0);
}

class LentAllocatorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterLender();
    for (CountingAllocator& a : g_lent) a.allocations = 0;
  }
  Graph graph_;
  Scope root_{graph_};
};

TEST_F(LentAllocatorsTest, ProducersOnTheDeviceMakeTheInputsFromTheLentAllocators) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32, PartialShape({2, 2}));
  auto w = Const(root_, Tensor::FromVector<float>({1, -2, 3, -4}, TensorShape{2, 2}));
  auto m = MatMul(root_.WithOpName("m"), x, w);
  // Relu would write over its input (the MatMul's, read by nothing else);
  // lent its output's allocator, it allocates there instead.
  auto r = Relu(root_.WithOpName("r"), MatMul(root_, x, w));
  auto c = Const(root_, Tensor::FromVector<float>({5}, TensorShape{1}));  // made once, when planned
  auto lent = Lender(root_.WithOpName("lender"), {m, r, c});
  auto neg = Neg(root_, m);  // another reader of m
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session session(graph_);
  for (int step = 0; step < 3; ++step) {
    const float v = static_cast<float>(step + 1);
    auto out = session.Run({{x, Tensor::FromVector<float>({v, 0, 0, v}, TensorShape{2, 2})}}, {lent, m, r, neg}, {});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{1, 1, 0})) << "step " << step;
    EXPECT_EQ((*out)[1].ToVector<float>(), (std::vector<float>{v, -2 * v, 3 * v, -4 * v}));
    EXPECT_EQ((*out)[2].ToVector<float>(), (std::vector<float>{v, 0, 3 * v, 0}));
    EXPECT_EQ((*out)[3].ToVector<float>(), (std::vector<float>{-v, 2 * v, -3 * v, 4 * v}));
  }
  EXPECT_EQ(g_lent[0].allocations.load(), 3);
  EXPECT_EQ(g_lent[1].allocations.load(), 3);
  EXPECT_EQ(g_lent[2].allocations.load(), 0);
}

TEST_F(LentAllocatorsTest, AProducerOnAnotherDeviceKeepsItsAllocator) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32, PartialShape({2}));
  auto here = Neg(root_.WithDevice("/device:CPU:0"), x);
  auto there = Neg(root_.WithDevice("/device:CPU:1"), x);
  auto lent = Lender(root_.WithDevice("/device:CPU:0").WithOpName("lender"), {here, there});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session session(graph_, {.num_cpu_devices = 2});
  auto out = session.Run({{x, Tensor::FromVector<float>({1, 2}, TensorShape{2})}}, {lent}, {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{1, 0}));
  EXPECT_EQ(g_lent[1].allocations.load(), 0);
}

}  // namespace
}  // namespace tw
