// Placement through a Session: the seed's first lesson (a graph built under
// /gpu:0 with soft placement moves what has no GPU kernel to the CPU), TF's
// error without soft placement, the placement log, variables trained on the
// device their updates are colocated with, nodes placed when first needed, and
// bad device options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "towerflow/data/io_ops.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kGpu0[] = "/job:localhost/replica:0/task:0/device:GPU:0";

class SessionPlacementTest : public ::testing::Test {
 protected:
  // The seed's graph in miniature: bytes -> DecodeRaw -> float -> MatMul, all
  // under tf.device('/gpu:0').
  void BuildSeedGraph() {
    Scope gpu = root_.WithDevice("/gpu:0");
    bytes_ = Placeholder(gpu.WithOpName("bytes"), kString);
    auto decoded = io::DecodeRaw(gpu.WithOpName("DecodeRaw"), bytes_, kInt32);
    auto x = Reshape(gpu.WithOpName("x"), Cast(gpu.WithOpName("cast"), decoded, kFloat32), {1, 2});
    auto w = Const(gpu.WithOpName("w"), std::vector<float>{1, 2, 3, 4}, TensorShape{2, 2});
    y_ = MatMul(gpu.WithOpName("y"), x, w);
    ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  }
  FeedList Feed() {
    int32_t values[2] = {1, 2};
    return {{bytes_, Tensor::String(std::string(reinterpret_cast<const char*>(values), sizeof(values)))}};
  }

  Graph graph_;
  Scope root_{graph_};
  Output bytes_, y_;
};

TEST_F(SessionPlacementTest, SoftPlacementRunsTheSeedGraph) {
  BuildSeedGraph();
  SessionOptions options;
  options.num_fake_gpus = 1;
  options.allow_soft_placement = true;
  Session session(graph_, options);
  auto out = session.Run(Feed(), {y_});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{7, 10}));
  const Placement& p = session.impl().placement();
  EXPECT_EQ(p.device_name(*y_.node), kGpu0);
  EXPECT_EQ(p.reason(*y_.node), "explicit request /gpu:0");
  const Node* decode = graph_.FindNode("DecodeRaw");
  EXPECT_EQ(p.device_name(*decode), kCpu0);
  EXPECT_EQ(p.reason(*decode), "soft placement: no GPU kernel for DecodeRaw, moved to /device:CPU:0");
  EXPECT_EQ(p.reason(*bytes_.node), "soft placement: no GPU kernel for Placeholder, moved to /device:CPU:0");
}

TEST_F(SessionPlacementTest, WithoutSoftPlacementRunFailsWithTfsText) {
  BuildSeedGraph();
  SessionOptions options;
  options.num_fake_gpus = 1;
  Session session(graph_, options);
  auto out = session.Run(Feed(), {y_});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  const std::string& msg = out.status().message();
  // The fed placeholder is not in the plan; DecodeRaw is the first node that fails.
  EXPECT_THAT(msg, StartsWith("Cannot assign a device for operation 'DecodeRaw': Could not satisfy explicit device "
                              "specification '/gpu:0' because no supported kernel for GPU devices is available."));
  EXPECT_THAT(msg, HasSubstr("DecodeRaw (DecodeRaw) /gpu:0"));
  EXPECT_THAT(msg, HasSubstr("Registered devices: [CPU, GPU]"));
  EXPECT_THAT(msg, HasSubstr("Registered kernels:\n  device='CPU'; out_type in [float"));
  EXPECT_FALSE(session.impl().placement().at(bytes_.node->id()).placed());
  // A plan without the unplaceable nodes still runs.
  auto w = session.Run({Output(graph_.FindNode("w"))});
  EXPECT_TRUE(w.ok()) << w.status().ToString();
}

TEST_F(SessionPlacementTest, LogDevicePlacementPrintsEveryNodeOnce) {
  auto a = Const(root_.WithOpName("a"), 1.0f);
  auto b = Square(root_.WithOpName("b"), a);
  ASSERT_TRUE(root_.ok());
  SessionOptions options;
  options.num_fake_gpus = 1;
  options.log_device_placement = true;
  ::testing::internal::CaptureStdout();
  Session session(graph_, options);
  ASSERT_TRUE(session.Run({b}).ok());
  auto c = Neg(root_.WithOpName("c").WithDevice("/cpu:0"), b);  // added after creation
  ASSERT_TRUE(session.Run({c}).ok());
  ASSERT_TRUE(session.Run({c}).ok());
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, std::string("Device mapping:\n") + kGpu0 + " -> device: 0, name: towerflow fake GPU (host memory)\n" +
                     "a: (Const): " + kGpu0 + "\nb: (Square): " + kGpu0 + "\nc: (Neg): " + kCpu0 + "\n");
}

TEST_F(SessionPlacementTest, TheLogListsVirtualCpuDevices) {
  Const(root_.WithOpName("a"), 1.0f);
  ASSERT_TRUE(root_.ok());
  SessionOptions options;
  options.log_device_placement = true;
  options.num_cpu_devices = 2;
  ::testing::internal::CaptureStdout();
  Session session(graph_, options);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out.substr(0, out.find("a: ")),
            std::string("Device mapping:\n") + kCpu0 + " -> virtual CPU device 0 of 2 on the host's cores\n" +
                "/job:localhost/replica:0/task:0/device:CPU:1 -> virtual CPU device 1 of 2 on the host's cores\n");
}

TEST_F(SessionPlacementTest, LogVerbosityOneAddsTheReason) {
  auto a = Const(root_.WithOpName("a"), 1.0f);
  ASSERT_TRUE(root_.ok());
  SessionOptions options;
  options.log_device_placement = true;
  options.log_device_placement_verbosity = 1;
  ::testing::internal::CaptureStdout();
  Session session(graph_, options);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, std::string("Device mapping: no known devices.\na: (Const): ") + kCpu0 +
                     " [default: CPU (no GPU device)]\n");
  EXPECT_EQ(session.impl().placement().reason(*a.node), "default: CPU (no GPU device)");
}

TEST_F(SessionPlacementTest, VariableTrainsOnTheDeviceItsUpdatesAreColocatedWith) {
  // The variable asks for the CPU; its initializer and its update ask for the
  // GPU. Ref edges win: everything touching the variable runs on CPU:0, and the
  // gradient computed on the GPU crosses over.
  auto v = VariableV2(root_.WithOpName("v").WithDevice("/cpu:0"), TensorShape{2}, kFloat32);
  Scope gpu = root_.WithDevice("/gpu:0");
  auto init = Assign(gpu.WithOpName("init"), v, Const(gpu, std::vector<float>{1, 2}, TensorShape{2}));
  auto grad = Mul(gpu.WithOpName("grad"), v, Const(gpu, 2.0f));
  auto apply = ApplyGradientDescent(gpu.WithOpName("apply"), v, Const(gpu, 0.25f), grad);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  SessionOptions options;
  options.num_fake_gpus = 1;
  Session session(graph_, options);
  ASSERT_TRUE(session.Run(init.node).ok());
  ASSERT_TRUE(session.Run(apply.node).ok());
  auto out = session.Run({v});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{0.5f, 1.0f}));  // v - 0.25 * 2v
  const Placement& p = session.impl().placement();
  EXPECT_EQ(p.device_name(*apply.node), kCpu0);
  EXPECT_EQ(p.reason(*apply.node), "colocated with 'v' (ref edge); its request /gpu:0 was ignored (ref edge)");
  EXPECT_EQ(p.device_name(*init.node), kCpu0);
  EXPECT_EQ(p.device_name(*grad.node), kGpu0);
}

TEST_F(SessionPlacementTest, BadDeviceOptionsFailEveryRun) {
  auto a = Const(root_, 1.0f);
  SessionOptions options;
  options.num_cpu_devices = 0;
  Session session(graph_, options);
  auto out = session.Run({a});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("num_cpu_devices must be 1 to 1024, got 0"));
  // Past the bound: an error, not 10^8 devices' worth of memory.
  options.num_cpu_devices = 100'000'000;
  Session huge(graph_, options);
  out = huge.Run({a});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("num_cpu_devices must be 1 to 1024, got 100000000"));
}

TEST_F(SessionPlacementTest, OneCpuDeviceByDefault) {
  Session session(graph_);
  ASSERT_EQ(session.impl().devices().size(), 1u);
  EXPECT_EQ(session.impl().devices()[0]->name(), kCpu0);
  EXPECT_EQ(session.impl().device_set().client_device(), session.impl().devices()[0].get());
}

}  // namespace
}  // namespace tw
