// The placer's passes, each checked by the device it picks and the reason it
// records; soft placement on and off with TF's error texts; colocation of a
// variable with its updates; incremental placement; the placement log; device
// sets (virtual CPUs, fake GPUs) and device scopes. Kernels are registered in a
// registry of the test's own, so the placer sees exactly these.
#include "towerflow/device/placer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"

namespace tw {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
const char kGpu0[] = "/job:localhost/replica:0/task:0/device:GPU:0";
const char kGpu1[] = "/job:localhost/replica:0/task:0/device:GPU:1";

class PlacerTest : public ::testing::Test {
 protected:
  PlacerTest() {
    // Placeholder has a CPU kernel only (as the fake GPU); Sub has none at all.
    for (const char* op : {"Placeholder", "Const", "Identity", "MatMul", "Add", "VariableV2", "Assign",
                           "ApplyGradientDescent"}) {
      kernels_.Register(KernelDef{op, kDeviceCpu, "", {}, nullptr, {}, {}});
      if (std::string(op) != "Placeholder") kernels_.Register(KernelDef{op, kDeviceGpu, "", {}, nullptr, {}, {}});
    }
  }

  // Places the graph on `cpus` CPUs and `gpus` fake GPUs.
  Status Place(int cpus, int gpus, bool soft = false, bool log = false, int verbosity = 0) {
    SessionOptions options;
    options.intra_op_threads = 1;
    options.num_cpu_devices = cpus;
    options.num_fake_gpus = gpus;
    devices_ = DeviceSet::Create(options).ValueOrDie();
    PlacerOptions p;
    p.allow_soft_placement = soft;
    p.log_device_placement = log;
    p.log_verbosity = verbosity;
    placement_ = Placement();
    return Placer(graph_, *devices_, kernels_, p).Run(&placement_);
  }
  // Places the nodes added since the last Place/PlaceMore on the same devices.
  Status PlaceMore(bool soft = false) {
    PlacerOptions p;
    p.allow_soft_placement = soft;
    return Placer(graph_, *devices_, kernels_, p).Run(&placement_);
  }
  std::string Dev(const Output& o) const { return placement_.device_name(*o.node); }
  std::string Why(const Output& o) const { return placement_.reason(*o.node); }
  Status StatusOf(const Output& o) const { return placement_.Find(*o.node)->status; }

  Graph graph_;
  Scope root_{graph_};
  KernelRegistry kernels_;
  std::unique_ptr<DeviceSet> devices_;
  Placement placement_;
};

TEST_F(PlacerTest, ExplicitRequest) {
  auto x = Placeholder(root_.WithOpName("x").WithDevice("/cpu:0"), kFloat32);
  auto m = MatMul(root_.WithOpName("m").WithDevice("/gpu:1"), x, x);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(Place(1, 2).ok());
  EXPECT_EQ(Dev(x), kCpu0);
  EXPECT_EQ(Why(x), "explicit request /cpu:0");
  EXPECT_EQ(Dev(m), kGpu1);
  EXPECT_EQ(Why(m), "explicit request /gpu:1");
}

TEST_F(PlacerTest, PartialRequestTakesTheLowestMatchingDevice) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto m = MatMul(root_.WithOpName("m").WithDevice("/device:GPU:*"), x, x);
  auto c = Identity(root_.WithOpName("c").WithDevice("/job:localhost/device:CPU:*"), x);
  ASSERT_TRUE(Place(2, 2).ok());
  EXPECT_EQ(Dev(m), kGpu0);
  EXPECT_EQ(Dev(c), kCpu0);
  EXPECT_EQ(Why(m), "explicit request /device:GPU:*");
}

TEST_F(PlacerTest, DefaultPrefersTheLowestGpuWithAKernel) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto m = MatMul(root_.WithOpName("m"), x, x);
  ASSERT_TRUE(Place(1, 2).ok());
  EXPECT_EQ(Dev(m), kGpu0);
  EXPECT_EQ(Why(m), "default: GPU has a kernel (lowest id GPU)");
  EXPECT_EQ(Dev(x), kCpu0);
  EXPECT_EQ(Why(x), "default: no GPU kernel, CPU");
}

TEST_F(PlacerTest, DefaultWithoutGpusIsCpu0) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto m = MatMul(root_.WithOpName("m"), x, x);
  ASSERT_TRUE(Place(2, 0).ok());
  EXPECT_EQ(Dev(m), kCpu0) << "virtual CPUs beyond CPU:0 are only used on request";
  EXPECT_EQ(Why(m), "default: CPU (no GPU device)");
}

TEST_F(PlacerTest, GeneratorGoesWithItsConsumer) {
  auto k = Const(root_.WithOpName("k"), 2.0f);
  auto y = Identity(root_.WithOpName("y").WithDevice("/cpu:0"), k);
  auto k2 = Const(root_.WithOpName("k2"), 3.0f);
  auto z = Identity(root_.WithOpName("z").WithDevice("/gpu:1"), k2);
  ASSERT_TRUE(Place(1, 2).ok());
  EXPECT_EQ(Dev(y), kCpu0);
  EXPECT_EQ(Dev(k), kCpu0) << "a Const with a GPU kernel still goes with its only consumer";
  EXPECT_EQ(Why(k), "default: placed with its consumer 'y' (a generator, as TF's heuristic A)");
  EXPECT_EQ(Dev(z), kGpu1);
  EXPECT_EQ(Dev(k2), kGpu1);
}

TEST_F(PlacerTest, RefEdgesColocateAVariableWithItsUpdatesOverConflictingRequests) {
  auto v = VariableV2(root_.WithOpName("v").WithDevice("/cpu:0"), TensorShape{2}, kFloat32);
  auto init = Const(root_.WithOpName("init"), std::vector<float>{1, 2}, TensorShape{2});
  auto assign = Assign(root_.WithOpName("assign").WithDevice("/gpu:0"), v, init);
  auto lr = Const(root_.WithOpName("lr"), 0.1f);
  auto apply = ApplyGradientDescent(root_.WithOpName("apply").WithDevice("/gpu:1"), v, lr, init);
  auto read = Identity(root_.WithOpName("read").WithDevice("/gpu:1"), v);  // a value read: not colocated
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(Place(1, 2).ok());
  EXPECT_EQ(Dev(v), kCpu0);
  EXPECT_EQ(Why(v), "explicit request /cpu:0");
  EXPECT_EQ(Dev(assign), kCpu0);
  EXPECT_EQ(Why(assign), "colocated with 'v' (ref edge); its request /gpu:0 was ignored (ref edge)");
  EXPECT_EQ(Dev(apply), kCpu0);
  EXPECT_EQ(Why(apply), "colocated with 'v' (ref edge); its request /gpu:1 was ignored (ref edge)");
  EXPECT_EQ(Dev(read), kGpu1);
}

TEST_F(PlacerTest, AnUnconstrainedVariableFollowsItsUpdatesRequest) {
  auto v = VariableV2(root_.WithOpName("v"), TensorShape{2}, kFloat32);
  auto init = Const(root_.WithOpName("init"), std::vector<float>{1, 2}, TensorShape{2});
  auto assign = Assign(root_.WithOpName("assign").WithDevice("/gpu:1"), v, init);
  ASSERT_TRUE(Place(1, 2).ok());
  EXPECT_EQ(Dev(v), kGpu1);
  EXPECT_EQ(Why(v), "colocated with 'assign' (ref edge)");
  EXPECT_EQ(Dev(assign), kGpu1);
  EXPECT_EQ(Why(assign), "explicit request /gpu:1");
}

TEST_F(PlacerTest, ColocationGroupIntersectsSupportedTypes) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto y = Identity(root_.WithOpName("y").ColocatedWith(x), x);
  auto z = Identity(root_.WithOpName("z"), x);
  ASSERT_TRUE(Place(1, 1).ok());
  EXPECT_EQ(Dev(y), kCpu0) << "y has a GPU kernel but x has not";
  EXPECT_EQ(Why(y), "colocation group loc:@x, group default: no GPU kernel, CPU");
  EXPECT_EQ(Dev(z), kGpu0);
}

TEST_F(PlacerTest, ConflictingColocationRequestsFailWithoutSoftPlacement) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto a = Identity(root_.WithOpName("a").WithDevice("/gpu:0"), x);
  auto b = Identity(root_.WithOpName("b").WithDevice("/gpu:1").ColocatedWith(a), x);
  Status s = Place(1, 2);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(StatusOf(b).message(),
            "Cannot colocate nodes 'b' and 'a': Cannot merge devices with incompatible ids: '/device:GPU:1' and "
            "'/device:GPU:0'");
  EXPECT_FALSE(StatusOf(a).ok());
  EXPECT_TRUE(StatusOf(x).ok()) << "nodes outside the group are placed";

  ASSERT_TRUE(Place(1, 2, /*soft=*/true).ok());
  EXPECT_EQ(Dev(a), kGpu0) << "soft merging keeps the type and leaves the id to the placer";
  EXPECT_EQ(Dev(b), kGpu0);
}

TEST_F(PlacerTest, NoGpuKernelWithoutSoftPlacementIsTfsError) {
  auto x = Placeholder(root_.WithOpName("x").WithDevice("/gpu:0"), kFloat32);
  Status s = Place(1, 1);
  ASSERT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(),
              StartsWith("Cannot assign a device for operation 'x': Could not satisfy explicit device specification "
                         "'/gpu:0' because no supported kernel for GPU devices is available."));
  EXPECT_THAT(s.message(), HasSubstr("Colocation members and user-requested devices:\n  x (Placeholder) /gpu:0"));
  EXPECT_THAT(s.message(), HasSubstr("Placeholder: CPU"));
  EXPECT_THAT(s.message(), HasSubstr("Registered devices: [CPU, GPU]"));
  EXPECT_THAT(s.message(), HasSubstr("Registered kernels:\n  device='CPU'"));
  EXPECT_FALSE(placement_.at(x.node->id()).placed());
}

TEST_F(PlacerTest, SoftPlacementMovesAnOpWithoutGpuKernelToCpu) {
  auto x = Placeholder(root_.WithOpName("x").WithDevice("/gpu:0"), kFloat32);
  auto m = MatMul(root_.WithOpName("m").WithDevice("/gpu:0"), x, x);
  ASSERT_TRUE(Place(1, 1, /*soft=*/true).ok());
  EXPECT_EQ(Dev(x), kCpu0);
  EXPECT_EQ(Why(x), "soft placement: no GPU kernel for Placeholder, moved to /device:CPU:0");
  EXPECT_EQ(Dev(m), kGpu0);
  EXPECT_EQ(Why(m), "explicit request /gpu:0");
}

TEST_F(PlacerTest, NonexistentDevice) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto m = MatMul(root_.WithOpName("m").WithDevice("/gpu:3"), x, x);
  Status s = Place(1, 2);
  ASSERT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            std::string("Cannot assign a device for operation 'm': Operation was explicitly assigned to /gpu:3 but "
                        "available devices are [ ") +
                kCpu0 + ", " + kGpu0 + ", " + kGpu1 +
                " ]. Make sure the device specification refers to a valid device.");
  ASSERT_TRUE(Place(1, 2, /*soft=*/true).ok());
  EXPECT_EQ(Dev(m), kGpu0);
  EXPECT_EQ(Why(m), "soft placement: /device:GPU:3 does not exist, moved to /device:GPU:0");
}

TEST_F(PlacerTest, ExplicitCpuTypeInNewSyntaxIsCaseSensitive) {
  auto x = Placeholder(root_.WithOpName("x").WithDevice("/device:cpu:0"), kFloat32);
  Status s = Place(1, 0);
  EXPECT_THAT(s.message(), HasSubstr("Operation was explicitly assigned to /device:cpu:0 but available devices"));
  EXPECT_FALSE(placement_.at(x.node->id()).placed());
}

TEST_F(PlacerTest, MalformedRequestFromANodeSpec) {
  NodeSpec spec;
  spec.name = "bad";
  spec.op = "Placeholder";
  spec.attrs.Set("dtype", kFloat32);
  spec.device = "/gpu:zero";
  ASSERT_TRUE(graph_.AddNode(spec).ok());
  Status s = Place(1, 1);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'bad'"));
  EXPECT_THAT(s.message(), HasSubstr("Malformed device specification '/gpu:zero'"));
}

TEST_F(PlacerTest, OpWithoutAnyKernelIsUnimplemented) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto d = Sub(root_.WithOpName("d"), x, x);
  Status s = Place(1, 1);
  EXPECT_EQ(s.code(), Code::kUnimplemented);
  EXPECT_THAT(s.message(), StartsWith("No OpKernel was registered to support Op 'Sub' used by node 'd' (Sub)"));
  EXPECT_THAT(s.message(), HasSubstr("Registered devices: [CPU, GPU]"));
  EXPECT_EQ(StatusOf(d), s);
  EXPECT_TRUE(StatusOf(x).ok());
}

TEST_F(PlacerTest, IncrementalPlacementKeepsEarlierNodesAndJoinsTheirGroups) {
  auto v = VariableV2(root_.WithOpName("v").WithDevice("/gpu:1"), TensorShape{2, 2}, kFloat32);
  auto m = MatMul(root_.WithOpName("m"), v, v);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(Place(1, 2).ok());
  EXPECT_EQ(Dev(v), kGpu1);
  EXPECT_EQ(Dev(m), kGpu0);
  const std::string m_reason = Why(m);

  auto init = Const(root_.WithOpName("init"), std::vector<float>{1, 2, 3, 4}, TensorShape{2, 2});
  auto assign = Assign(root_.WithOpName("assign").WithDevice("/cpu:0"), v, init);
  auto later = MatMul(root_.WithOpName("later"), v, v);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(PlaceMore().ok());
  EXPECT_EQ(Dev(v), kGpu1);
  EXPECT_EQ(Why(m), m_reason);
  EXPECT_EQ(Dev(assign), kGpu1);
  EXPECT_EQ(Why(assign), "colocated with 'v' (ref edge), placed earlier on /device:GPU:1");
  EXPECT_EQ(Dev(later), kGpu0);
  EXPECT_EQ(placement_.num_nodes(), graph_.num_nodes());
}

TEST_F(PlacerTest, LogPrintsOneTfStyleLinePerNode) {
  auto x = Placeholder(root_.WithOpName("x"), kFloat32);
  auto m = MatMul(root_.WithOpName("m"), x, x);
  ::testing::internal::CaptureStdout();
  ASSERT_TRUE(Place(1, 1, false, /*log=*/true).ok());
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, std::string("x: (Placeholder): ") + kCpu0 + "\nm: (MatMul): " + kGpu0 + "\n");
  EXPECT_EQ(placement_.LogLine(*m.node, false), std::string("m: (MatMul): ") + kGpu0);

  ::testing::internal::CaptureStdout();
  ASSERT_TRUE(Place(1, 1, false, true, /*verbosity=*/1).ok());
  out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr(std::string("m: (MatMul): ") + kGpu0 + " [default: GPU has a kernel (lowest id GPU)]\n"));

  ::testing::internal::CaptureStdout();
  ASSERT_TRUE(PlaceMore().ok());  // nothing new: nothing printed
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
}

TEST(DeviceSetTest, VirtualCpusHaveTheirOwnPoolsAndFakeGpusTheirOwnMemory) {
  SessionOptions options;
  options.intra_op_threads = 4;
  options.num_cpu_devices = 2;
  options.num_fake_gpus = 2;
  auto set = DeviceSet::Create(options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  const auto& d = (*set)->devices();
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0]->name(), kCpu0);
  EXPECT_EQ(d[1]->name(), kCpu1);
  EXPECT_EQ(d[2]->name(), kGpu0);
  EXPECT_EQ(d[0]->intra_op_threads(), 2);
  EXPECT_EQ(d[1]->intra_op_threads(), 2);
  ASSERT_NE(d[0]->intra_op_pool(), nullptr);
  EXPECT_NE(d[0]->intra_op_pool(), d[1]->intra_op_pool());
  EXPECT_EQ(d[0]->allocator(), d[1]->allocator()) << "virtual CPUs share host memory";
  EXPECT_NE(d[2]->allocator(), d[0]->allocator());
  EXPECT_NE(d[2]->allocator(), d[3]->allocator());
  EXPECT_EQ((*set)->DescribeTypes(), "[CPU, GPU]");
  EXPECT_EQ((*set)->device_types(), (std::vector<std::string>{"GPU", "CPU"}));
  std::vector<Device*> all = (*set)->FindMatchingDevices(DeviceSpec());
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0]->name(), kGpu0) << "GPU (priority 210) before CPU (60)";
  EXPECT_EQ(all[2]->name(), kCpu0);
}

TEST(DeviceSetTest, BadOptionsAreInvalidArgument) {
  SessionOptions options;
  options.num_cpu_devices = 0;
  auto set = DeviceSet::Create(options);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(set.status().message(), HasSubstr("num_cpu_devices"));
  options.num_cpu_devices = 1;
  options.num_fake_gpus = -1;
  EXPECT_FALSE(DeviceSet::Create(options).ok());
}

TEST(DeviceScopeTest, NestedScopesMergeAsTf) {
  Graph g;
  Scope root(g);
  EXPECT_EQ(root.WithDevice("/gpu:0").device(), "/gpu:0") << "nothing to merge: kept as written";
  EXPECT_EQ(root.WithDevice("/job:localhost").WithDevice("/gpu:1").device(), "/job:localhost/device:GPU:1");
  EXPECT_EQ(root.WithDevice("/job:ps/task:1/gpu:0").WithDevice("/task:2").device(), "/job:ps/task:2/device:GPU:0");
  EXPECT_EQ(root.WithDevice("/gpu:0").WithDevice("/cpu:0").device(), "/device:CPU:0");
  EXPECT_EQ(root.WithDevice("/gpu:1").WithDevice("/job:localhost/replica:0/task:0/device:CPU:0").device(),
            "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(root.WithDevice("/gpu:1").WithDevice("").device(), "") << "an empty string clears";
  auto x = Placeholder(root.WithDevice("/job:localhost").WithDevice("gpu:1").WithOpName("x"), kFloat32);
  EXPECT_EQ(x.node->requested_device(), "/job:localhost/device:GPU:1");
  EXPECT_TRUE(root.ok());
}

TEST(DeviceScopeTest, BadDeviceStringIsRecordedInTheScope) {
  Graph g;
  Scope root(g);
  Scope s = root.WithDevice("/gpu:0").WithDevice("/gpu:one");
  EXPECT_EQ(s.device(), "/gpu:0") << "the enclosing device stays";
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("Malformed device specification '/gpu:one'"));
}

}  // namespace
}  // namespace tw
