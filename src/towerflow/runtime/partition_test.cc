// Partitioning: kernels run on their node's device (allocator and intra-op
// pool), cross-device edges deliver a copy on the destination device's
// allocator, variables are read across devices under their lock, and a
// single-device plan copies nothing.
#include "towerflow/runtime/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/shape_inference.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"
#include "towerflow/runtime/transfers.h"

namespace tw {
namespace {

using ::testing::HasSubstr;

// What a TestProbe kernel saw when it ran: its device and its input's memory.
struct ProbeRecord {
  std::string device;
  ThreadPool* pool = nullptr;
  const void* input_data = nullptr;
  Allocator* input_allocator = nullptr;
};
std::mutex g_probe_mu;
std::map<std::string, ProbeRecord> g_probes;  // by node name, guarded by g_probe_mu

class ProbeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    {
      std::lock_guard<std::mutex> lock(g_probe_mu);
      g_probes[node().name()] = {ctx->device()->name(), ctx->intra_op_pool(), in.raw_data(),
                                 in.buffer() ? in.buffer()->allocator() : nullptr};
    }
    ctx->set_output(0, in);
  }
};

// Passes its input through after a pause: orders a race deterministically.
class SlowOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx->set_output(0, ctx->input(0));
  }
};

void RegisterProbe() {
  static bool done = [] {
    EnsureKernelsRegistered();
    OpRegistry::Global()
        .Register(OpDefBuilder("TestSlow").Input("x", "T").Output("y", "T").TypeAttr("T", {})
                      .Shape(shape_fns::Unchanged).Build())
        .Check();
    KernelRegistry::Global().RegisterUntyped<SlowOp>("TestSlow", kDeviceCpu);
    KernelRegistry::Global().RegisterUntyped<SlowOp>("TestSlow", kDeviceGpu);
    OpRegistry::Global()
        .Register(OpDefBuilder("TestProbe").Input("x", "T").Output("y", "T").TypeAttr("T", {})
                      .Shape(shape_fns::Unchanged).Build())
        .Check();
    KernelRegistry::Global().RegisterUntyped<ProbeOp>("TestProbe", kDeviceCpu);
    KernelRegistry::Global().RegisterUntyped<ProbeOp>("TestProbe", kDeviceGpu);
    return true;
  }();
  (void)done;
}

Output Probe(const Scope& scope, const Output& x) { return Output(NodeBuilder(scope, "TestProbe").Input(x).Finalize()); }

ProbeRecord Record(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_probe_mu);
  return g_probes.at(name);
}

class PartitionTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterProbe(); }
  Graph graph_;
  Scope root_{graph_};
};

TEST_F(PartitionTest, CrossDeviceTensorArrivesAsACopyOnTheDestinationAllocator) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto y = Identity(root_.WithOpName("y").WithDevice("/gpu:0"), Square(root_.WithOpName("sq").WithDevice("/cpu:0"), x));
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  SessionOptions options;
  options.num_fake_gpus = 1;
  options.intra_op_threads = 1;
  Session session(graph_, options);
  ASSERT_EQ(session.impl().devices().size(), 2u);
  Allocator* gpu = session.impl().devices()[1]->allocator();
  ASSERT_NE(gpu, CpuAllocator());
  const size_t before = gpu->BytesInUse();
  {
    auto out = session.Run({{x, Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape{4})}}, {y});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const Tensor& t = (*out)[0];
    EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{1, 4, 9, 16}));
    ASSERT_TRUE(t.buffer());
    EXPECT_EQ(t.buffer()->allocator(), gpu) << "the GPU's Identity forwards the transferred tensor";
    EXPECT_EQ(gpu->BytesInUse(), before + 4 * sizeof(float));
  }
  EXPECT_EQ(gpu->BytesInUse(), before) << "the copy is freed with its last user";
}

TEST_F(PartitionTest, KernelsRunWithTheirDevicesPoolAndVirtualCpusShareBuffers) {
  auto c = Const(root_.WithOpName("c").WithDevice("/cpu:0"), std::vector<float>{1, 2}, TensorShape{2});
  auto p0 = Probe(root_.WithOpName("p0").WithDevice("/cpu:0"), c);
  auto p1 = Probe(root_.WithOpName("p1").WithDevice("/cpu:1"), c);
  ASSERT_TRUE(root_.ok());
  SessionOptions options;
  options.num_cpu_devices = 2;
  options.intra_op_threads = 4;
  Session session(graph_, options);
  auto out = session.Run({p0, p1});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[1].ToVector<float>(), (std::vector<float>{1, 2}));
  const ProbeRecord r0 = Record("p0"), r1 = Record("p1");
  EXPECT_EQ(r0.device, "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(r1.device, "/job:localhost/replica:0/task:0/device:CPU:1");
  EXPECT_EQ(r0.pool, session.impl().devices()[0]->intra_op_pool());
  EXPECT_EQ(r1.pool, session.impl().devices()[1]->intra_op_pool());
  EXPECT_NE(r0.pool, r1.pool);
  EXPECT_EQ(session.impl().devices()[1]->intra_op_threads(), 2) << "4 threads over 2 virtual CPUs";
  const Tensor& value = std::get<Tensor>(*c.node->attrs().Find("value"));
  EXPECT_EQ(r0.input_data, value.raw_data()) << "same device: no copy";
  EXPECT_EQ(r1.input_data, value.raw_data()) << "CPU:0 -> CPU:1: a transfer that copies nothing";
}

// Virtual CPU devices left with one thread each have no pool of their own:
// with the intra-op threads left to the session (0), their kernels split work
// over the inter-op threads that are idle; with an explicit count they run on
// their own thread, as asked.
TEST_F(PartitionTest, OneThreadDevicesBorrowIdleInterOpThreadsOnlyByDefault) {
  auto c = Const(root_.WithOpName("c").WithDevice("/cpu:0"), std::vector<float>{1, 2}, TensorShape{2});
  auto p0 = Probe(root_.WithOpName("p0").WithDevice("/cpu:0"), c);
  auto p1 = Probe(root_.WithOpName("p1").WithDevice("/cpu:1"), c);
  ASSERT_TRUE(root_.ok());
  for (int intra : {0, 2}) {
    SCOPED_TRACE(testing::Message() << "intra_op_threads " << intra);
    SessionOptions options;
    options.num_cpu_devices = 2;
    options.inter_op_threads = 2;
    options.intra_op_threads = intra;
    Session session(graph_, options);
    if (intra == 0 && session.impl().devices()[0]->intra_op_threads() > 1) GTEST_SKIP() << "more than two cores";
    ASSERT_TRUE(session.Run({p0, p1}).ok());
    EXPECT_EQ(session.impl().devices()[0]->intra_op_pool(), nullptr);
    if (intra == 0) {
      EXPECT_NE(Record("p0").pool, nullptr);
      EXPECT_EQ(Record("p0").pool, Record("p1").pool) << "the session's inter-op pool";
    } else {
      EXPECT_EQ(Record("p0").pool, nullptr);
      EXPECT_EQ(Record("p1").pool, nullptr);
    }
  }
}

TEST_F(PartitionTest, SingleDevicePlanCopiesNothing) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto p = Probe(root_.WithOpName("p"), x);
  Session session(graph_);
  Tensor fed = Tensor::FromVector<float>({5}, TensorShape{1});
  ASSERT_TRUE(session.Run({{x, fed}}, {p}).ok());
  EXPECT_EQ(Record("p").input_data, fed.raw_data());
  EXPECT_EQ(session.impl().placement().reason(*p.node), "default: CPU (no GPU device)");
}

TEST_F(PartitionTest, VariableOnCpuReadOnGpu) {
  auto v = VariableV2(root_.WithOpName("v").WithDevice("/cpu:0"), TensorShape{2, 2}, kFloat32);
  auto init = Assign(root_.WithOpName("init"), v, Const(root_, std::vector<float>{1, 2, 3, 4}, TensorShape{2, 2}));
  auto m = MatMul(root_.WithOpName("m").WithDevice("/gpu:0"), v, v);
  ASSERT_TRUE(root_.ok());
  SessionOptions options;
  options.num_fake_gpus = 1;
  Session session(graph_, options);
  auto uninit = session.Run({m});
  ASSERT_FALSE(uninit.ok());
  EXPECT_EQ(uninit.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(uninit.status().message(), HasSubstr("Attempting to use uninitialized value v"));
  ASSERT_TRUE(session.Run(init.node).ok());
  auto out = session.Run({m});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{7, 10, 15, 22}));
  EXPECT_EQ(session.impl().placement().device_name(*m.node), "/job:localhost/replica:0/task:0/device:GPU:0");
  EXPECT_EQ(session.impl().placement().device_name(*init.node), "/job:localhost/replica:0/task:0/device:CPU:0");
}

// A read of a variable from another device under a control dependency on its
// Assign reads the assigned value, as on one device: the transfer waits for the
// reader's control inputs, not only for the variable op. The Assign's value
// comes late (TestSlow), so a transfer that ran after VariableV2 alone would
// find the variable uninitialized.
TEST_F(PartitionTest, CrossDeviceReadOfAVariableWaitsForTheReadersControlInputs) {
  auto v = VariableV2(root_.WithOpName("v").WithDevice("/gpu:0"), TensorShape{2}, kFloat32);
  auto slow = Output(NodeBuilder(root_.WithOpName("slow").WithDevice("/gpu:0"), "TestSlow")
                         .Input(Const(root_, std::vector<float>{3, 4}, TensorShape{2}))
                         .Finalize());
  auto init = Assign(root_.WithOpName("init"), v, slow);
  auto read = Probe(root_.WithOpName("read").WithDevice("/cpu:0").WithControlDependencies({init}), v);
  auto add = AssignAdd(root_.WithOpName("add"), v,
                       Output(NodeBuilder(root_.WithOpName("slow_one").WithDevice("/gpu:0"), "TestSlow")
                                  .Input(Const(root_, std::vector<float>{1, 1}, TensorShape{2}))
                                  .Finalize()));
  auto after_add = Probe(root_.WithOpName("after_add").WithDevice("/cpu:0").WithControlDependencies({add}), v);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  SessionOptions options;
  options.num_fake_gpus = 1;
  Session session(graph_, options);
  auto first = session.Run({read});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)[0].ToVector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(Record("read").device, "/job:localhost/replica:0/task:0/device:CPU:0");
  auto second = session.Run({after_add});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)[0].ToVector<float>(), (std::vector<float>{4, 5}));
}

TEST(CopyTensorTest, CpuDevicesShareTheBuffer) {
  Device a(kDeviceCpu, 0, CpuAllocator(), 1), b(kDeviceCpu, 1, CpuAllocator(), 1);
  Tensor x = Tensor::Vec<float>({1, 2, 3});
  Tensor out;
  ASSERT_TRUE(CopyTensorBetweenDevices(x, &a, &b, &out).ok());
  EXPECT_TRUE(out.SharesBufferWith(x));
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(CopyTensorTest, CopiesStringsAndEmptyTensors) {
  // Host-memory devices of another type (the fake GPU's) own their bytes.
  Device a(kDeviceCpu, 0, CpuAllocator(), 1), b(kDeviceGpu, 0, CpuAllocator(), 1);
  Tensor s = Tensor::Vec<std::string>({"ab", "", "cde"});
  Tensor out;
  ASSERT_TRUE(CopyTensorBetweenDevices(s, &a, &b, &out).ok());
  EXPECT_EQ(out.ToVector<std::string>(), (std::vector<std::string>{"ab", "", "cde"}));
  EXPECT_FALSE(out.SharesBufferWith(s));
  Tensor empty(kFloat32, TensorShape{0, 3});
  ASSERT_TRUE(CopyTensorBetweenDevices(empty, &a, &b, &out).ok());
  EXPECT_EQ(out.shape(), (TensorShape{0, 3}));
}

// A device with memory of its own (a GPU's kind), for the plan's predicates.
class DeviceMemoryDevice : public Device {
 public:
  DeviceMemoryDevice() : Device(kDeviceGpu, 0, CpuAllocator(), 1) {}
  bool host_memory() const override { return false; }
};

// Only a copy out of device memory into host memory waits for the device: the
// executor runs it after the other ready work of its thread.
TEST(ExecutorPlanTest, OnlyACopyToHostMemoryWaitsForTheDevice) {
  Device cpu(kDeviceCpu, 0, CpuAllocator(), 1), host_gpu(kDeviceGpu, 1, CpuAllocator(), 1);
  DeviceMemoryDevice gpu, other_gpu;
  auto transfer = [](Device* from, Device* to) {
    ExecutorPlan::Item item;
    item.transfer_from = from;
    item.device = to;
    return item;
  };
  EXPECT_TRUE(transfer(&gpu, &cpu).waits_for_device());
  EXPECT_TRUE(transfer(&gpu, &host_gpu).waits_for_device());
  EXPECT_FALSE(transfer(&cpu, &gpu).waits_for_device());        // queued on the device's stream
  EXPECT_FALSE(transfer(&gpu, &other_gpu).waits_for_device());  // device to device
  EXPECT_FALSE(transfer(&cpu, &host_gpu).waits_for_device());
  ExecutorPlan::Item node;
  node.device = &cpu;
  EXPECT_FALSE(node.waits_for_device());
}

}  // namespace
}  // namespace tw
