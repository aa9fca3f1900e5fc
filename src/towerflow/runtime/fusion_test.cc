// Plan-time kernel fusion (fusion.h): Conv2D -> BiasAdd / BiasAddRelu and
// MaxPoolGrad -> ReluGrad run as one kernel exactly where nothing else can
// observe the producer's output, give the unfused results (on every
// convolution path: direct first-layer loops, oneDNN, im2col; float32 and
// float64), and name both nodes when they fail.
#include "towerflow/runtime/fusion.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/trace.h"

namespace tw {
namespace {

using fusion_test::MaxDiff;
using fusion_test::Random;

// x -> Conv2D(w) -> BiasAdd(Relu)(b), fed x, w and b.
struct ConvLayer {
  Graph graph;
  Output x, w, b, conv, out;
  ConvLayer(DataType dtype, bool relu) {
    Scope s(graph);
    x = Placeholder(s, dtype);
    w = Placeholder(s, dtype);
    b = Placeholder(s, dtype);
    conv = Conv2D(s.WithOpName("conv"), x, w);
    out = relu ? BiasAddRelu(s.WithOpName("act"), conv, b) : BiasAdd(s.WithOpName("act"), conv, b);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }
};

// Runs `fetches` once; returns the values and whether any item ran fused.
template <typename T>
std::pair<std::vector<Tensor>, bool> RunLayer(ConvLayer& layer, const std::vector<Output>& fetches, bool fuse,
                                              const Tensor& b, FeedList extra_feeds = {}) {
  SessionOptions options;
  options.fuse_kernels = fuse;
  options.collect_step_stats = true;
  options.intra_op_threads = 2;
  Session session(layer.graph, options);
  FeedList feeds = {{layer.x, Random<T>({3, 13, 11, 1}, 1)}, {layer.w, Random<T>({5, 5, 1, 32}, 2)}, {layer.b, b}};
  for (auto& f : extra_feeds) feeds.push_back(std::move(f));
  StepStats stats;
  auto r = session.Run(feeds, fetches, {}, &stats);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  bool fused = false;
  for (const auto& t : stats.nodes) {
    if (t.fused_producer == nullptr) continue;
    fused = true;
    EXPECT_EQ(t.fused_producer->name(), "conv");
    EXPECT_EQ(t.node->name(), "act");
  }
  return {r.ok() ? *r : std::vector<Tensor>{}, fused};
}


template <typename T>
void ExpectFusedMatchesUnfused(const char* conv_path) {
  for (bool relu : {false, true}) {
    SCOPED_TRACE(std::string(conv_path) + (relu ? " BiasAddRelu " : " BiasAdd ") + std::string(DataTypeName(DataTypeOf<T>())));
    ConvLayer layer(DataTypeOf<T>(), relu);
    const Tensor b = Random<T>({32}, 3);
    auto [fused, did_fuse] = RunLayer<T>(layer, {layer.out}, true, b);
    auto [plain, did_not] = RunLayer<T>(layer, {layer.out}, false, b);
    EXPECT_TRUE(did_fuse);
    EXPECT_FALSE(did_not);
    ASSERT_EQ(fused.size(), 1u);
    ASSERT_EQ(plain.size(), 1u);
    EXPECT_LT(MaxDiff<T>(fused[0], plain[0]), sizeof(T) == 4 ? 1e-5 : 1e-12);
    if (relu) {
      int64_t zeros = 0;  // the ReLU did clamp something
      for (T v : fused[0].template flat<T>()) zeros += v == T(0);
      EXPECT_GT(zeros, fused[0].NumElements() / 10);
    }
  }
}

struct ConvPath {
  explicit ConvPath(const char* value) {
    if (value != nullptr) setenv("TOWERFLOW_CONV", value, 1);
  }
  ~ConvPath() { unsetenv("TOWERFLOW_CONV"); }
};

TEST(FusionTest, FusedConvolutionMatchesTheNodesRunApart) {
  {
    ConvPath path(nullptr);
    ExpectFusedMatchesUnfused<float>("default (direct first layer where the CPU has AVX-512F)");
    ExpectFusedMatchesUnfused<double>("im2col");
  }
  {
    ConvPath path("onednn");
    ExpectFusedMatchesUnfused<float>("onednn");
  }
  {
    ConvPath path("im2col");
    ExpectFusedMatchesUnfused<float>("im2col");
  }
}

TEST(FusionTest, NothingThatObservesTheProducerIsFused) {
  const Tensor b = Random<float>({32}, 3);
  {
    ConvLayer layer(kFloat32, true);  // the convolution's output is fetched
    auto [values, fused] = RunLayer<float>(layer, {layer.out, layer.conv}, true, b);
    EXPECT_FALSE(fused);
    EXPECT_EQ(values.size(), 2u);
  }
  {
    ConvLayer layer(kFloat32, true);  // another node of the step reads it
    Scope s(layer.graph);
    Output other = Identity(s, layer.conv);
    EXPECT_FALSE(RunLayer<float>(layer, {layer.out, other}, true, b).second);
    // A reader outside the step does not count.
    EXPECT_TRUE(RunLayer<float>(layer, {layer.out}, true, b).second);
  }
  {
    ConvLayer layer(kFloat32, true);  // fed: the consumer reads the feed, no convolution runs
    auto [values, fused] =
        RunLayer<float>(layer, {layer.out}, true, b, {{layer.conv, Random<float>({3, 13, 11, 32}, 4)}});
    EXPECT_FALSE(fused);
    ASSERT_EQ(values.size(), 1u);
    for (float v : values[0].flat<float>()) ASSERT_GE(v, 0.0f);
  }
  {
    // On two devices: the pair stays apart (and each device runs its own node).
    Graph graph;
    Scope s(graph);
    Output x = Placeholder(s, kFloat32), w = Placeholder(s, kFloat32), bias = Placeholder(s, kFloat32);
    Output conv = Conv2D(s.WithDevice("/cpu:0").WithOpName("conv"), x, w);
    Output act = BiasAddRelu(s.WithDevice("/cpu:1").WithOpName("act"), conv, bias);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    SessionOptions options;
    options.num_cpu_devices = 2;
    options.collect_step_stats = true;
    Session session(graph, options);
    StepStats stats;
    auto r = session.Run({{x, Random<float>({3, 13, 11, 1}, 1)}, {w, Random<float>({5, 5, 1, 32}, 2)}, {bias, b}},
                         {act}, {}, &stats);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (const auto& t : stats.nodes) EXPECT_EQ(t.fused_producer, nullptr) << t.node->name();
  }
  {
    // A control edge from the convolution to a node that leads to the consumer:
    // fused, the consumer would wait on itself.
    ConvLayer layer(kFloat32, true);
    Scope s(layer.graph);
    Output waits = Identity(s.WithControlDependencies({layer.conv}), layer.b);
    Output act = BiasAddRelu(s.WithOpName("act2"), layer.conv, waits);
    EXPECT_FALSE(RunLayer<float>(layer, {act}, true, b).second);
  }
  {
    // A control edge to a node off the consumer's path (an update barrier
    // waiting on a forward convolution): fused, and the waiter runs after the
    // fused item.
    ConvLayer layer(kFloat32, true);
    Scope s(layer.graph);
    Output waits = Identity(s.WithOpName("waits").WithControlDependencies({layer.conv}), layer.b);
    SessionOptions options;
    options.collect_step_stats = true;
    Session session(layer.graph, options);
    StepStats stats;
    auto r = session.Run({{layer.x, Random<float>({3, 13, 11, 1}, 1)}, {layer.w, Random<float>({5, 5, 1, 32}, 2)},
                          {layer.b, b}},
                         {layer.out, waits}, {}, &stats);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    int64_t fused_end = -1, waiter_start = -1;
    for (const auto& t : stats.nodes) {
      if (t.fused_producer != nullptr) fused_end = t.end_ns;
      if (t.node->name() == "waits") waiter_start = t.start_ns;
    }
    ASSERT_GE(fused_end, 0) << "fused";
    EXPECT_GE(waiter_start, fused_end) << "the waiter ran after the fused item";
  }
}

TEST(FusionTest, AFusedKernelsErrorNamesBothNodes) {
  ConvLayer layer(kFloat32, true);
  SessionOptions options;
  Session session(layer.graph, options);
  auto r = session.Run({{layer.x, Random<float>({1, 4, 4, 1}, 1)},
                        {layer.w, Random<float>({3, 3, 1, 16}, 2)},
                        {layer.b, Random<float>({7}, 3)}},
                       {layer.out});
  ASSERT_FALSE(r.ok());
  const std::string message = r.status().ToString();
  EXPECT_NE(message.find("'act' (BiasAddRelu)"), std::string::npos) << message;
  EXPECT_NE(message.find("fused with 'conv' (Conv2D)"), std::string::npos) << message;
  EXPECT_NE(message.find("bias of shape [7]"), std::string::npos) << message;
}

// The pooled ReLU's backward, MaxPoolGrad -> ReluGrad, as one kernel: equal to
// the two run apart (exactly: the same sums, then the same select), with
// non-overlapping and overlapping windows, both paddings, float32 and float64,
// features that are the pooled values (as in a CNN) or independent of them.
// The same for MaxPoolGrad -> BiasAddReluGrad (a conv layer's BiasAddRelu ->
// MaxPool), whose bias gradient is fetched too.
template <typename T>
void ExpectPoolReluGradFusedMatches(const PoolOptions& pool, bool features_are_pooled,
                                    const std::string& consumer = "ReluGrad") {
  SCOPED_TRACE(consumer + " " + pool.padding + " stride " + std::to_string(pool.strides[1]) + " window " +
               std::to_string(pool.ksize[1]) + (features_are_pooled ? " pooled features" : " other features"));
  Graph graph;
  Scope s(graph);
  const DataType dtype = DataTypeOf<T>();
  Output x = Placeholder(s, dtype), dp = Placeholder(s, dtype), other = Placeholder(s, dtype);
  Output y = Relu(s, x);
  Output p = MaxPool(s, y, pool);
  Output pool_grad = NodeBuilder(s.WithOpName("pool_grad"), "MaxPoolGrad").Input(y).Input(p).Input(dp)
                         .Attr("ksize", pool.ksize).Attr("strides", pool.strides).Attr("padding", pool.padding)
                         .Finalize();
  Node* grad = NodeBuilder(s.WithOpName("relu_grad"), consumer).Input(pool_grad)
                   .Input(features_are_pooled ? y : other).Finalize();
  std::vector<Output> fetches = {Output(grad, 0)};
  if (consumer == "BiasAddReluGrad") fetches.push_back(Output(grad, 1));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Tensor xv = Random<T>({3, 9, 7, 5}, 11);
  for (int64_t i = 0; i < xv.NumElements(); i += 7) xv.flat<T>()[i] = xv.flat<T>()[(i + 5) % xv.NumElements()];  // ties
  std::vector<Tensor> results;
  for (bool fuse : {true, false}) {
    SessionOptions options;
    options.fuse_kernels = fuse;
    options.collect_step_stats = true;
    Session session(graph, options);
    auto shape = session.Run({{x, xv}}, {p});
    ASSERT_TRUE(shape.ok()) << shape.status().ToString();
    StepStats stats;
    auto r = session.Run({{x, xv}, {dp, Random<T>((*shape)[0].shape(), 12)}, {other, Random<T>(xv.shape(), 13)}},
                         fetches, {}, &stats);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    bool fused = false;
    for (const auto& t : stats.nodes) {
      if (t.fused_producer == nullptr) continue;
      fused = true;
      EXPECT_EQ(t.fused_producer->name(), "pool_grad");
      EXPECT_EQ(t.node->name(), "relu_grad");
    }
    EXPECT_EQ(fused, fuse);
    for (const Tensor& t : *r) results.push_back(t);
  }
  const size_t n = fetches.size();
  for (size_t k = 0; k < n; ++k) EXPECT_EQ(MaxDiff<T>(results[k], results[n + k]), 0.0) << "output " << k;
  int64_t nonzero = 0;
  for (T v : results[0].template flat<T>()) nonzero += v != T(0);
  EXPECT_GT(nonzero, 0);
}

TEST(FusionTest, PooledReluGradientMatchesTheNodesRunApart) {
  const PoolOptions cases[] = {{{1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"},
                               {{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"},
                               {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"}};
  for (const PoolOptions& pool : cases) {
    for (bool pooled : {true, false}) {
      for (const std::string consumer : {"ReluGrad", "BiasAddReluGrad"}) {
        ExpectPoolReluGradFusedMatches<float>(pool, pooled, consumer);
        ExpectPoolReluGradFusedMatches<double>(pool, pooled, consumer);
      }
    }
  }
}

// A trace shows the fused item under the consumer's name with both ops.
TEST(FusionTest, TracesNameBothOps) {
  ConvLayer layer(kFloat32, true);
  SessionOptions options;
  options.collect_step_stats = true;
  Session session(layer.graph, options);
  StepStats stats;
  auto r = session.Run({{layer.x, Random<float>({2, 6, 6, 1}, 1)},
                        {layer.w, Random<float>({3, 3, 1, 16}, 2)},
                        {layer.b, Random<float>({16}, 3)}},
                       {layer.out}, {}, &stats);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  TraceRecorder trace;
  trace.AddStep(1, stats, session);
  const std::string path = ::testing::TempDir() + "/fusion_trace.json";
  ASSERT_TRUE(trace.Write(path).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"Conv2D+BiasAddRelu\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"fused\":\"conv\""), std::string::npos) << text.str();
}

}  // namespace
}  // namespace tw
