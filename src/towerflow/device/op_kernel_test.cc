// OpKernelContext::forward_input_or_allocate_output: a kernel gets an input's
// buffer for its output only when it holds the buffer's one reference, the
// dtype and element count fit, the input is not a ref and the buffer came
// from the allocator the output would use; otherwise a new buffer.
#include <gtest/gtest.h>

#include "towerflow/device/op_kernel.h"
#include "towerflow/graph/graph.h"
#include "towerflow/graph/scope.h"

namespace tw {
namespace {

class ForwardInputTest : public ::testing::Test {
 protected:
  ForwardInputTest() {
    // Any node with float in, float out: Neg's def from the op registry is
    // not needed, so a test op def keeps this module's test free of kernels.
    OpRegistry::Global()
        .Register(OpDefBuilder("TestForwardUnary").Input("x", "float").Output("y", "float").Build())
        .IgnoreError();
    OpRegistry::Global()
        .Register(OpDefBuilder("TestForwardSource").Output("y", "float").Build())
        .IgnoreError();
    Scope s(graph_);
    Node* src = NodeBuilder(s, "TestForwardSource").Finalize();
    node_ = NodeBuilder(s, "TestForwardUnary").Input(Output(src, 0)).Finalize();
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }

  // Runs forward_input_or_allocate_output over `input`; true when the output
  // took the input's buffer.
  bool Forwards(TensorValue input, const TensorShape& shape, Device* device = nullptr) {
    std::vector<TensorValue> inputs{std::move(input)};
    const void* before = inputs[0].value.raw_data();
    OpKernelContext::Params params;
    params.node = node_;
    params.device = device ? device : &cpu_;
    params.inputs = &inputs;
    OpKernelContext ctx(params);
    Tensor* out = nullptr;
    EXPECT_TRUE(ctx.forward_input_or_allocate_output({0}, 0, shape, &out).ok());
    EXPECT_EQ(out->shape(), shape);
    EXPECT_EQ(out->dtype(), kFloat32);
    return before != nullptr && out->raw_data() == before;
  }

  static TensorValue Value(DataType dtype, const TensorShape& shape) {
    TensorValue v;
    v.value = Tensor::Allocate(CpuAllocator(), dtype, shape).ValueOrDie();
    return v;
  }

  Graph graph_;
  Node* node_ = nullptr;
  Device cpu_{"CPU", 0, CpuAllocator(), 1};
};

TEST_F(ForwardInputTest, TakesTheOnlyReferenceOfAMatchingBuffer) {
  EXPECT_TRUE(Forwards(Value(kFloat32, TensorShape{4, 3}), TensorShape{4, 3}));
  // Same element count, another shape: the output is the buffer reshaped.
  EXPECT_TRUE(Forwards(Value(kFloat32, TensorShape{4, 3}), TensorShape{12}));
}

TEST_F(ForwardInputTest, AllocatesWhenTheBufferIsShared) {
  TensorValue v = Value(kFloat32, TensorShape{4, 3});
  Tensor other_holder = v.value;  // a variable, a constant, a fetch or another reader
  EXPECT_FALSE(Forwards(v, TensorShape{4, 3}));
  EXPECT_EQ(other_holder.NumElements(), 12);
}

TEST_F(ForwardInputTest, AllocatesWhenDtypeSizeRefOrAllocatorDiffer) {
  EXPECT_FALSE(Forwards(Value(kInt32, TensorShape{4, 3}), TensorShape{4, 3}));
  EXPECT_FALSE(Forwards(Value(kFloat32, TensorShape{4, 3}), TensorShape{4, 4}));
  // A ref input (the variable itself) is never written as an output.
  Tensor variable = Tensor::Allocate(CpuAllocator(), kFloat32, TensorShape{4, 3}).ValueOrDie();
  std::mutex mu;
  TensorValue ref;
  ref.value = std::move(variable);
  ref.ref = &ref.value;
  ref.ref_mu = &mu;
  EXPECT_FALSE(Forwards(ref, TensorShape{4, 3}));
  // A device with its own allocator: a host buffer is not its memory.
  class CountingAllocator : public Allocator {
   public:
    std::string Name() const override { return "counting"; }
    void* Allocate(size_t bytes) override { return CpuAllocator()->Allocate(bytes); }
    void Deallocate(void* p, size_t bytes) override { CpuAllocator()->Deallocate(p, bytes); }
    size_t BytesInUse() const override { return 0; }
  };
  Device other("CPU", 1, std::make_unique<CountingAllocator>(), 1);
  EXPECT_FALSE(Forwards(Value(kFloat32, TensorShape{4, 3}), TensorShape{4, 3}, &other));
}

}  // namespace
}  // namespace tw
