// Replicate: device-string parsing, the graph it builds (tower name scopes and
// devices, one dequeue per tower, shared or mirrored variables and where they
// live, the averaging nodes), mirrored copies that start and stay equal, the
// global step, and the errors it records. Numerical equivalence with one tower
// and distinct data are end-to-end tests (tests/towers_*_test.cc).
#include "towerflow/train/replicate.h"

#include <gtest/gtest.h>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/train/gradient_descent.h"
#include "towerflow/train/momentum.h"

namespace tw::train {
namespace {

template <typename O = SessionOptions>
O WithCpus(int cpus, O o = {}) {
  if constexpr (requires { o.num_cpu_devices; }) o.num_cpu_devices = cpus;
  return o;
}

constexpr int kBatch = 4, kIn = 3, kOut = 2;

// A placeholder batch per tower: x [4, 3], y [4, 2].
tw::Batch PlaceholderBatch(const Scope& s) {
  return {Placeholder(s.WithOpName("x"), kFloat32, PartialShape({kBatch, kIn})),
          Placeholder(s.WithOpName("y"), kFloat32, PartialShape({kBatch, kOut}))};
}

// A linear softmax classifier with a random kernel, so mirrored copies would
// differ if each drew its own initial value.
Output Model(const Scope& tower, const tw::Batch& b) {
  Scope s = tower.WithVariableScope("dense");
  Variable w = GetVariable(s, "kernel", {kIn, kOut}, {.initializer = RandomUniformInitializer(-1, 1)});
  Variable bias = GetVariable(s, "bias", {kOut}, {.initializer = ZerosInitializer()});
  Output logits = BiasAdd(s, MatMul(s, b[0], w.value), bias.value);
  return Mean(tower, SoftmaxCrossEntropyWithLogits(tower, logits, b[1]).loss, {0});
}

FeedList Feeds(const ReplicaStep& step) {
  FeedList feeds;
  for (size_t i = 0; i < step.tower_batches.size(); ++i) {
    Tensor x(kFloat32, TensorShape{kBatch, kIn}), y(kFloat32, TensorShape{kBatch, kOut});
    for (int64_t k = 0; k < x.NumElements(); ++k)
      x.flat<float>()[static_cast<size_t>(k)] = 0.1f * static_cast<float>(k + i);
    for (int64_t r = 0; r < kBatch; ++r) {
      y.flat<float>()[static_cast<size_t>(r * kOut)] = (r + i) % 2 ? 1.0f : 0.0f;
      y.flat<float>()[static_cast<size_t>(r * kOut + 1)] = (r + i) % 2 ? 0.0f : 1.0f;
    }
    feeds.emplace_back(step.tower_batches[i][0], x);
    feeds.emplace_back(step.tower_batches[i][1], y);
  }
  return feeds;
}

TEST(Devices, ParsesTheSeedsAndTFsForms) {
  EXPECT_EQ(Devices("gpu:0,gpu:1"), (std::vector<std::string>{"/device:GPU:0", "/device:GPU:1"}));
  EXPECT_EQ(Devices(" cpu:0 , /cpu:1,/GPU:2"),
            (std::vector<std::string>{"/device:CPU:0", "/device:CPU:1", "/device:GPU:2"}));
  EXPECT_EQ(Devices("/job:localhost/replica:0/task:0/device:CPU:3,/device:GPU:12"),
            (std::vector<std::string>{"/device:CPU:3", "/device:GPU:12"}));
  EXPECT_TRUE(Devices("").empty());
  auto parsed = ParseDevices("gpu:0,cpu:1");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, (std::vector<std::string>{"/device:GPU:0", "/device:CPU:1"}));
}

TEST(Devices, BadEntriesAreInvalidArgumentNamingThem) {
  for (const std::string bad : {"tpu:0", "gpu", "gpu:*", "gpu:x", "/job:worker/device:GPU:0", "/device:gpu:0",
                                "gpu:0,,gpu:1", "/replica:1/gpu:0"}) {
    auto parsed = ParseDevices(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("bad device '"), std::string::npos) << parsed.status().message();
  }
  // Devices keeps a bad entry as written; Replicate records it.
  EXPECT_EQ(Devices("gpu:0,tpu:1"), (std::vector<std::string>{"/device:GPU:0", "tpu:1"}));
  Graph graph;
  Scope root(graph);
  GradientDescent sgd;
  ReplicaStep step = Replicate(root, Devices("cpu:0,tpu:1"), PlaceholderBatch, sgd, Model);
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("bad device 'tpu:1'"), std::string::npos) << root.status().message();
  EXPECT_EQ(step.train_op, nullptr);
}

TEST(Replicate, SingleDeviceVariablesAreSharedAndPinned) {
  Graph graph;
  Scope root(graph);
  GradientDescent sgd({.learning_rate = 0.1});
  // Towers on CPU:1 and CPU:2, variables on CPU:0 (the default).
  ReplicaStep step = Replicate(root, Devices("cpu:1,cpu:2"), PlaceholderBatch, sgd, Model);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(step.devices, (std::vector<std::string>{"/device:CPU:1", "/device:CPU:2"}));
  EXPECT_EQ(step.tower_scopes, (std::vector<std::string>{"tower_0", "tower_1"}));
  // One set of variables, on the variable device, read by both towers.
  std::vector<Variable> vars = TrainableVariables(graph);
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name, "dense/kernel");
  EXPECT_EQ(vars[0].ref.node->requested_device(), "/device:CPU:0");
  EXPECT_EQ(vars[1].ref.node->requested_device(), "/device:CPU:0");
  ASSERT_EQ(step.tower_variables.size(), 2u);
  EXPECT_EQ(step.tower_variables[1][0].ref.node, vars[0].ref.node);
  // Each tower has its own placeholders, on its device, in its name scope.
  EXPECT_EQ(step.tower_batches[0][0].node->name(), "tower_0/x");
  EXPECT_EQ(step.tower_batches[1][0].node->name(), "tower_1/x");
  EXPECT_EQ(step.tower_batches[1][0].node->requested_device(), "/device:CPU:2");
  const Node* matmul1 = graph.FindNode("tower_1/dense/MatMul");
  ASSERT_NE(matmul1, nullptr);
  EXPECT_EQ(matmul1->requested_device(), "/device:CPU:2");
  // Gradients in the towers; the mean on the variable's device.
  EXPECT_NE(graph.FindNode("tower_1/gradients/tower_1/dense/MatMul_grad/MatMul_1"), nullptr);
  const Node* mean = graph.FindNode("average_gradients/dense/kernel/truediv");
  ASSERT_NE(mean, nullptr);
  EXPECT_EQ(mean->requested_device(), "/device:CPU:0");
  EXPECT_EQ(mean->input(0).node->op(), "AddN");
  EXPECT_EQ(step.loss.node->name(), "loss/mean");
  // The variables were made by a throwaway replica on CPU:0 (tower 0 is elsewhere).
  EXPECT_NE(graph.FindNode("replicate_variables/dense/MatMul"), nullptr);

  Session session(graph, WithCpus(3));
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  const FeedList feeds = Feeds(step);
  auto before = session.Run(feeds, {step.loss, step.tower_losses[0], step.tower_losses[1]});
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  const float l0 = (*before)[1].scalar<float>(), l1 = (*before)[2].scalar<float>();
  EXPECT_FLOAT_EQ((*before)[0].scalar<float>(), (l0 + l1) / 2);
  EXPECT_NE(l0, l1);  // different batches
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(session.Run(feeds, {}, {step.train_op}).ok());
  auto after = session.Run(feeds, {step.loss});
  ASSERT_TRUE(after.ok());
  EXPECT_LT((*after)[0].scalar<float>(), (*before)[0].scalar<float>());
}

TEST(Replicate, TowerZeroCreatesVariablesOnItsDeviceWithoutAThrowawayReplica) {
  Graph graph;
  Scope root(graph);
  GradientDescent sgd;
  ReplicaStep step =
      Replicate(root, Devices("cpu:0,cpu:1"), PlaceholderBatch, sgd, Model, {.name_scope_prefix = "GPU"});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(step.tower_scopes, (std::vector<std::string>{"GPU_0", "GPU_1"}));
  EXPECT_EQ(graph.FindNode("replicate_variables/dense/MatMul"), nullptr);
  EXPECT_EQ(TrainableVariables(graph).size(), 2u);
  EXPECT_NE(graph.FindNode("GPU_1/dense/MatMul"), nullptr);
}

TEST(Replicate, MirroredCopiesStartAndStayEqual) {
  Graph graph;
  Scope root(graph);
  Momentum momentum({.learning_rate = 0.1, .momentum = 0.9});
  ReplicaStep step = Replicate(root, Devices("cpu:0,cpu:1,cpu:2"), PlaceholderBatch, momentum, Model,
                               {.variable_placement = VariablePlacement::kMirrored, .global_step = true});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_EQ(step.tower_variables.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const Variable& kernel = step.tower_variables[static_cast<size_t>(i)][0];
    EXPECT_EQ(kernel.name, "tower_" + std::to_string(i) + "/dense/kernel");
    EXPECT_EQ(kernel.ref.node->requested_device(), "/device:CPU:" + std::to_string(i));
    const Variable* slot = momentum.GetSlot(graph, kernel, "momentum");
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(slot->ref.node->requested_device(), kernel.ref.node->requested_device());
  }
  // The kernel's all-reduce sums on device 0, the bias's on device 1 (round-robin).
  const Node* sum_kernel = graph.FindNode("all_reduce/dense/kernel/AddN");
  const Node* sum_bias = graph.FindNode("all_reduce/dense/bias/AddN");
  ASSERT_NE(sum_kernel, nullptr);
  ASSERT_NE(sum_bias, nullptr);
  EXPECT_EQ(sum_kernel->requested_device(), "/device:CPU:0");
  EXPECT_EQ(sum_bias->requested_device(), "/device:CPU:1");

  Session session(graph, WithCpus(3));
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  auto values = [&] {
    std::vector<Output> fetch;
    for (const auto& vars : step.tower_variables) fetch.push_back(vars[0].value);
    auto r = session.Run(fetch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::vector<float>> out;
    for (const Tensor& t : *r) out.push_back(t.ToVector<float>());
    return out;
  };
  auto initial = values();
  EXPECT_NE(initial[0], std::vector<float>(kIn * kOut, 0.0f));  // random, not zeros
  EXPECT_EQ(initial[1], initial[0]);
  EXPECT_EQ(initial[2], initial[0]);
  const FeedList feeds = Feeds(step);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(session.Run(feeds, {}, {step.train_op}).ok());
  auto trained = values();
  EXPECT_NE(trained[0], initial[0]);
  // Bitwise equal: every copy gets the same averaged gradient.
  EXPECT_EQ(trained[1], trained[0]);
  EXPECT_EQ(trained[2], trained[0]);
  auto gs = session.Run({step.global_step.value});
  ASSERT_TRUE(gs.ok());
  EXPECT_EQ((*gs)[0].scalar<int64_t>(), 5);
}

// Trains 3 mirrored towers on `type` devices (CPU, or fake GPUs borrowing the
// CPU kernels) for 5 steps with `algorithm`; returns every copy's values and
// whether the step reduced with CollectiveAllReduce.
std::vector<std::vector<float>> TrainMirrored(const std::string& type, AllReduceAlgorithm algorithm,
                                              bool* has_collective) {
  Graph graph;
  graph.set_seed(7);
  Scope root(graph);
  Momentum momentum({.learning_rate = 0.1, .momentum = 0.9});
  const std::string devices = type + ":0," + type + ":1," + type + ":2";
  ReplicaStep step = Replicate(root, Devices(devices), PlaceholderBatch, momentum, Model,
                               {.variable_placement = VariablePlacement::kMirrored, .all_reduce = algorithm});
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  const Node* p2 = graph.FindNode("all_reduce/device_2");
  *has_collective = p2 != nullptr && p2->op() == "CollectiveAllReduce";
  if (*has_collective) {
    EXPECT_EQ(p2->requested_device(), type == "cpu" ? "/device:CPU:2" : "/device:GPU:2");
  }
  SessionOptions options = WithCpus(3);
  if (type == "gpu") options.num_fake_gpus = 3;
  Session session(graph, options);
  EXPECT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  const FeedList feeds = Feeds(step);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(session.Run(feeds, {}, {step.train_op}).ok());
  std::vector<Output> fetch;
  for (const auto& vars : step.tower_variables) {
    for (const Variable& v : vars) fetch.push_back(v.value);
  }
  auto r = session.Run(fetch);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::vector<float>> out;
  if (r.ok()) {
    for (const Tensor& t : *r) out.push_back(t.ToVector<float>());
  }
  return out;
}

TEST(Replicate, MirroredCollectiveMatchesReduceBroadcastBitForBit) {
  // Same towers, same feeds: the fused collective (one meeting per tower, sums
  // in device order) and the reduce-broadcast (AddN in tower order) give the
  // same bits, on CPU devices and on (fake) GPUs alike.
  for (const std::string type : {"cpu", "gpu"}) {
    SCOPED_TRACE(type);
    bool collective = false, broadcast = false;
    auto a = TrainMirrored(type, AllReduceAlgorithm::kCollective, &collective);
    auto b = TrainMirrored(type, AllReduceAlgorithm::kReduceBroadcast, &broadcast);
    EXPECT_TRUE(collective);
    EXPECT_FALSE(broadcast);
    ASSERT_EQ(a.size(), 6u);  // 3 towers x (kernel, bias)
    EXPECT_EQ(a, b);
    EXPECT_EQ(a[0], a[2]);  // tower 0's kernel == tower 1's
    EXPECT_EQ(a[0], a[4]);
  }
}

TEST(Replicate, MirroredTowersReduceWithTheCollectiveOnlyOnCudaGpusByDefault) {
  // kAuto: NCCL's collective where the towers are CUDA GPUs; this process has
  // none (fake GPUs included), so reduce-broadcast.
  bool collective = true;
  auto a = TrainMirrored("gpu", AllReduceAlgorithm::kAuto, &collective);
  EXPECT_FALSE(collective);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(ResolveAllReduceAlgorithm(AllReduceAlgorithm::kAuto, {"/device:CPU:0", "/device:CPU:1"}),
            AllReduceAlgorithm::kReduceBroadcast);
  EXPECT_EQ(ResolveAllReduceAlgorithm(AllReduceAlgorithm::kAuto, {"/device:GPU:0", "/device:GPU:1"}),
            AllReduceAlgorithm::kReduceBroadcast);
  EXPECT_EQ(ResolveAllReduceAlgorithm(AllReduceAlgorithm::kAuto), AllReduceAlgorithm::kReduceBroadcast);
  EXPECT_EQ(ResolveAllReduceAlgorithm(AllReduceAlgorithm::kCollective, {"/device:CPU:0"}),
            AllReduceAlgorithm::kCollective);
  EXPECT_EQ(ResolveAllReduceAlgorithm(AllReduceAlgorithm::kReduceBroadcast, {"/device:GPU:0"}),
            AllReduceAlgorithm::kReduceBroadcast);
}

TEST(Replicate, OneTowerIsPlainTraining) {
  Graph graph;
  Scope root(graph);
  GradientDescent sgd;
  ReplicaStep step = Replicate(root, Devices("cpu:0"), PlaceholderBatch, sgd, Model);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(step.loss, step.tower_losses[0]);
  EXPECT_EQ(graph.FindNode("average_gradients/dense/kernel/truediv"), nullptr);  // nothing to average
}

TEST(Replicate, ErrorsAreRecordedInTheScope) {
  GradientDescent sgd;
  struct Case {
    std::vector<std::string> devices;
    BatchSourceFn source;
    TowerFn fn;
    ReplicateOptions options;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, PlaceholderBatch, Model, {}, "needs at least one device"},
      {Devices("cpu:0"), PlaceholderBatch, Model, {.name_scope_prefix = ""}, "name_scope_prefix is empty"},
      {Devices("cpu:0"), nullptr, Model, {}, "the batch source is null"},
      {Devices("cpu:0"), PlaceholderBatch, nullptr, {}, "the tower function is null"},
      {Devices("cpu:0"),
       PlaceholderBatch,
       Model,
       {.variable_device = "tpu:0"},
       "variable_device: bad device 'tpu:0'"},
      {Devices("cpu:0,cpu:1"),
       PlaceholderBatch,
       [](const Scope&, const tw::Batch&) { return Output(); },
       {},
       "tower_0: the tower function returned a null loss"},
      {Devices("cpu:0,cpu:1"),
       PlaceholderBatch,
       [](const Scope& s, const tw::Batch& b) {
         Variable w = GetVariable(s, "w", {kIn, kOut});
         return MatMul(s, b[0], w.value);
       },
       {},
       "tower_0: the tower function returned loss 'tower_0/MatMul:0' of shape [4,2]; it must be a scalar"},
      {Devices("cpu:0,cpu:1"),
       PlaceholderBatch,
       [](const Scope& s, const tw::Batch& b) {
         Variable w = CreateVariable(s, "outside", {kIn, kOut});
         return Mean(s, MatMul(s, b[0], w.value), {});
       },
       {.variable_placement = VariablePlacement::kMirrored},
       "created trainable variable 'outside' outside"},
  };
  for (const Case& c : cases) {
    Graph graph;
    Scope root(graph);
    ReplicaStep step = Replicate(root, c.devices, c.source, sgd, c.fn, c.options);
    ASSERT_FALSE(root.ok()) << c.message;
    EXPECT_EQ(root.status().code(), Code::kInvalidArgument) << root.status().ToString();
    EXPECT_NE(root.status().message().find(c.message), std::string::npos) << root.status().message();
    EXPECT_EQ(step.train_op, nullptr);
    EXPECT_FALSE(step.loss.valid());
  }
}

}  // namespace
}  // namespace tw::train
