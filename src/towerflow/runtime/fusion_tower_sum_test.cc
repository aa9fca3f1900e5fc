// The towers' gradient sum fused into the update (kernels/momentum_fusions.cc,
// a fusion of more nodes across host devices, runtime/fusion.h): MatMul per
// tower on its own virtual CPU device -> AddN -> Div (or not) -> ApplyMomentum
// on CPU:0 gives the variables of the nodes run apart, for 1 to 3 towers,
// every transpose, towers of different batch sizes (one empty), several
// blocks, Nesterov or not, float32 and float64. It applies only where nothing
// else reads a tower's gradient, no waiter on a gradient leads to the update,
// and every tower runs on a CPU device; its errors are those of the nodes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/ops/training_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

using fusion_test::MaxDiff;
using fusion_test::Random;
using ::testing::HasSubstr;

struct Options {
  int towers = 2;
  bool ta = true, tb = false;  // dW = x^T dy: a layer's weight gradient
  bool divide = true;          // the mean (Div by the towers' count) or the sum
  bool nesterov = false;
  std::string tower_device = "/device:CPU:";  // tower i on this + i
  bool fetch_grad1 = false;                    // a second reader of tower 1's gradient
  bool barrier_on_grad1 = false;               // the update waits on a NoOp that waits on it
};

// var[m, n] updated by momentum with the towers' mean (or sum) of op(a_i) op(b_i).
struct TowerSum {
  Graph graph;
  std::vector<Output> a, b, grads;
  Output top, var, accum, update;
  Node* init = nullptr;
  TowerSum(DataType dtype, int64_t m, int64_t n, const Options& o) {
    Scope s(graph);
    auto cast = [&](const Scope& sc, double v) {
      return dtype == kFloat32 ? Const(sc, static_cast<float>(v)) : Const(sc, v);
    };
    for (int i = 0; i < o.towers; ++i) {
      Scope t = s.WithDevice(o.tower_device + std::to_string(i));
      a.push_back(Placeholder(t.WithOpName("a" + std::to_string(i)), dtype));
      b.push_back(Placeholder(t.WithOpName("b" + std::to_string(i)), dtype));
      grads.push_back(MatMul(t.WithOpName("grad" + std::to_string(i)), a.back(), b.back(),
                             {.transpose_a = o.ta, .transpose_b = o.tb}));
    }
    Scope v = s.WithDevice("/device:CPU:0");
    Output sum = o.towers == 1 ? grads[0] : AddN(v.WithOpName("sum"), grads);
    top = o.divide ? Div(v.WithOpName("mean"), sum, cast(v, o.towers)) : sum;
    var = VariableV2(v.WithOpName("w"), TensorShape{m, n}, dtype);
    accum = VariableV2(v.WithOpName("w_momentum"), TensorShape{m, n}, dtype);
    auto init_value = [&](uint64_t seed) {
      return Const(v, dtype == kFloat32 ? Random<float>({m, n}, seed) : Random<double>({m, n}, seed));
    };
    Output init_w = Assign(v, var, init_value(7));
    Output init_a = Assign(v, accum, init_value(8));
    init = NoOp(v.WithOpName("init").WithControlDependencies({init_w, init_a}));
    Scope u = v;
    if (o.barrier_on_grad1) {
      Node* barrier = NoOp(v.WithOpName("barrier").WithControlDependencies({grads[1]}));
      u = v.WithControlDependencies({Output(barrier)});
    }
    update = ApplyMomentum(u.WithOpName("update"), var, accum, cast(v, 0.1), top, cast(v, 0.9), o.nesterov);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }
};

struct Result {
  Tensor var, accum;
  std::vector<std::string> fused;  // the names the update's item absorbed (last step)
  Status status;
};

// Rows of tower i's batch: towers of different sizes, tower 1 empty when `empty_tower`.
int64_t BatchOf(int i, bool empty_tower) { return empty_tower && i == 1 ? 0 : 5 + 3 * i; }

// Three updates from the same start, fused or not.
template <typename T>
Result Train(TowerSum& t, int64_t m, int64_t n, const Options& o, bool fuse, bool empty_tower = false,
             int64_t bad_rows = -1) {
  SessionOptions options;
  options.fuse_kernels = fuse;
  options.collect_step_stats = true;
  options.num_cpu_devices = std::max(2, o.towers);
  options.num_fake_gpus = o.tower_device.find("GPU") != std::string::npos ? o.towers : 0;
  options.inter_op_threads = 2;
  options.intra_op_threads = 2;
  Session session(t.graph, options);
  Result out;
  out.status = session.Run(t.init);
  if (!out.status.ok()) return out;
  for (uint64_t step = 0; step < 3; ++step) {
    FeedList feeds;
    for (int i = 0; i < o.towers; ++i) {
      const int64_t k = BatchOf(i, empty_tower);
      const int64_t rows = i == 1 && bad_rows >= 0 ? bad_rows : m;
      feeds.emplace_back(t.a[static_cast<size_t>(i)],
                         Random<T>(o.ta ? TensorShape{k, rows} : TensorShape{rows, k}, 10 + step + 100 * i));
      feeds.emplace_back(t.b[static_cast<size_t>(i)],
                         Random<T>(o.tb ? TensorShape{n, k} : TensorShape{k, n}, 20 + step + 100 * i));
    }
    std::vector<Output> fetches;
    if (o.fetch_grad1) fetches.push_back(t.grads[1]);
    StepStats stats;
    auto r = session.Run(feeds, fetches, {t.update.node}, &stats);
    if (!r.ok()) {
      out.status = r.status();
      return out;
    }
    out.fused.clear();
    for (const auto& timing : stats.nodes) {
      if (timing.node->name() != "update") continue;
      for (const Node* f : timing.fused) out.fused.push_back(f->name());
    }
  }
  auto values = session.Run({Identity(Scope(t.graph), t.var), Identity(Scope(t.graph), t.accum)});
  out.status = values.status();
  if (values.ok()) {
    out.var = (*values)[0];
    out.accum = (*values)[1];
  }
  return out;
}

// What the update's item absorbs when the whole sum fuses.
std::vector<std::string> WholeSum(const Options& o) {
  std::vector<std::string> names;
  for (int i = 0; i < o.towers; ++i) names.push_back("grad" + std::to_string(i));
  if (o.towers > 1) names.push_back("sum");
  if (o.divide) names.push_back("mean");
  return names;
}

template <typename T>
void ExpectFusedMatchesApart(const Options& o, int64_t m, int64_t n, bool empty_tower) {
  SCOPED_TRACE(testing::Message() << DataTypeName(DataTypeOf<T>()) << " towers " << o.towers << " [" << m << ","
                                  << n << "] ta " << o.ta << " tb " << o.tb << " divide " << o.divide
                                  << " nesterov " << o.nesterov << " empty tower " << empty_tower);
  TowerSum t(DataTypeOf<T>(), m, n, o);
  Result fused = Train<T>(t, m, n, o, true, empty_tower);
  Result apart = Train<T>(t, m, n, o, false, empty_tower);
  ASSERT_TRUE(fused.status.ok()) << fused.status.ToString();
  ASSERT_TRUE(apart.status.ok()) << apart.status.ToString();
  EXPECT_EQ(fused.fused, WholeSum(o));
  EXPECT_TRUE(apart.fused.empty());
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  EXPECT_LE(MaxDiff<T>(fused.var, apart.var), tol);
  EXPECT_LE(MaxDiff<T>(fused.accum, apart.accum), tol);
  EXPECT_GT(MaxDiff<T>(fused.var, Random<T>({m, n}, 7)), 1e-3) << "the variable moved";
}

TEST(TowerSumMomentumFusionTest, FusedUpdateMatchesTheNodesRunApart) {
  // [64,33]: one block; [700,129]: several blocks, the last one short.
  for (int towers : {1, 2, 3}) {
    for (bool divide : {true, false}) {
      for (bool nesterov : {false, true}) {
        for (auto [m, n] : {std::pair<int64_t, int64_t>{64, 33}, {700, 129}}) {
          Options o{.towers = towers, .divide = divide, .nesterov = nesterov};
          ExpectFusedMatchesApart<float>(o, m, n, false);
          ExpectFusedMatchesApart<double>(o, m, n, false);
        }
      }
    }
  }
}

TEST(TowerSumMomentumFusionTest, EveryTransposeAndAnEmptyTower) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool empty : {false, true}) {
        ExpectFusedMatchesApart<float>(Options{.towers = 2, .ta = ta, .tb = tb}, 300, 40, empty);
      }
    }
  }
}

// The sum runs apart (only the division fuses into the update), and the
// variables still match.
void ExpectNotFused(const Options& o) {
  TowerSum t(kFloat32, 50, 20, o);
  Result fused = Train<float>(t, 50, 20, o, true);
  Result apart = Train<float>(t, 50, 20, o, false);
  ASSERT_TRUE(fused.status.ok()) << fused.status.ToString();
  ASSERT_TRUE(apart.status.ok()) << apart.status.ToString();
  EXPECT_EQ(fused.fused, std::vector<std::string>{"mean"});
  EXPECT_LE(MaxDiff<float>(fused.var, apart.var), 1e-6);
}

TEST(TowerSumMomentumFusionTest, NotFusedWhenATowerGradientIsReadElsewhere) {
  ExpectNotFused(Options{.towers = 2, .fetch_grad1 = true});
}

TEST(TowerSumMomentumFusionTest, NotFusedWhenAWaiterOnAGradientLeadsToTheUpdate) {
  // Fused, the barrier would wait on the update that waits on it.
  ExpectNotFused(Options{.towers = 2, .barrier_on_grad1 = true});
}

TEST(TowerSumMomentumFusionTest, NotFusedAcrossDevicesOfAnotherType) {
  // Towers on (fake) GPUs: only CPU devices share the update's memory and threads.
  ExpectNotFused(Options{.towers = 2, .tower_device = "/device:GPU:"});
}

TEST(TowerSumMomentumFusionTest, PlansOfOneSessionFuseDifferentlyIntoOneUpdate) {
  // The training step fuses the whole sum; a step that also fetches a tower's
  // gradient fuses only the Div. Each plan gets its own kernel, in either order.
  const Options o{.towers = 2};
  TowerSum t(kFloat32, 40, 12, o);
  auto feeds = [&](uint64_t seed) {
    FeedList f;
    for (int i = 0; i < 2; ++i) {
      f.emplace_back(t.a[static_cast<size_t>(i)], Random<float>({5, 40}, seed + 2 * i));
      f.emplace_back(t.b[static_cast<size_t>(i)], Random<float>({5, 12}, seed + 2 * i + 1));
    }
    return f;
  };
  for (bool fetch_first : {false, true}) {
    SCOPED_TRACE(fetch_first ? "fetching step first" : "training step first");
    Tensor var[2];
    for (bool fuse : {true, false}) {
      SessionOptions options;
      options.fuse_kernels = fuse;
      options.num_cpu_devices = 2;
      Session session(t.graph, options);
      ASSERT_TRUE(session.Run(t.init).ok());
      for (int step = 0; step < 4; ++step) {
        const bool fetch = (step % 2 == 0) == fetch_first;
        auto r = session.Run(feeds(10 * static_cast<uint64_t>(step)), fetch ? std::vector<Output>{t.grads[1]}
                                                                              : std::vector<Output>{},
                             {t.update.node});
        ASSERT_TRUE(r.ok()) << r.status().ToString();
      }
      auto v = session.Run({Identity(Scope(t.graph), t.var)});
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      var[fuse ? 0 : 1] = (*v)[0];
    }
    EXPECT_LE(MaxDiff<float>(var[0], var[1]), 1e-6);
  }
}

TEST(TowerSumMomentumFusionTest, FusionsWhoseWaitersCrossAreNotBothChosen) {
  // Two weights, each with two towers' gradients summed into its update. A
  // NoOp waits on a gradient of each weight and the other weight's update
  // waits on that NoOp: fused both, each update would wait on the other.
  Graph graph;
  Scope s(graph);
  std::vector<Output> a, b, updates, vars;
  std::vector<Node*> inits;
  std::vector<std::vector<Output>> grads(2);
  for (int w = 0; w < 2; ++w) {
    const std::string p = "w" + std::to_string(w) + "_";
    for (int i = 0; i < 2; ++i) {
      Scope t = s.WithDevice("/device:CPU:" + std::to_string(i));
      a.push_back(Placeholder(t.WithOpName(p + "a" + std::to_string(i)), kFloat32));
      b.push_back(Placeholder(t.WithOpName(p + "b" + std::to_string(i)), kFloat32));
      grads[static_cast<size_t>(w)].push_back(
          MatMul(t.WithOpName(p + "grad" + std::to_string(i)), a.back(), b.back(), {.transpose_a = true}));
    }
  }
  Scope v = s.WithDevice("/device:CPU:0");
  // barrier[w] waits on weight w's tower-0 gradient; update[1 - w] waits on barrier[w].
  Node* barrier[2] = {NoOp(v.WithOpName("barrier0").WithControlDependencies({grads[0][0]})),
                      NoOp(v.WithOpName("barrier1").WithControlDependencies({grads[1][0]}))};
  for (int w = 0; w < 2; ++w) {
    const std::string p = "w" + std::to_string(w) + "_";
    Output mean = Div(v.WithOpName(p + "mean"), AddN(v.WithOpName(p + "sum"), grads[static_cast<size_t>(w)]),
                      Const(v, 2.0f));
    vars.push_back(VariableV2(v.WithOpName(p + "var"), TensorShape{6, 3}, kFloat32));
    Output accum = VariableV2(v.WithOpName(p + "accum"), TensorShape{6, 3}, kFloat32);
    inits.push_back(Assign(v, vars.back(), Const(v, Random<float>({6, 3}, 7))).node);
    inits.push_back(Assign(v, accum, Const(v, Random<float>({6, 3}, 8))).node);
    updates.push_back(ApplyMomentum(v.WithOpName(p + "update").WithControlDependencies({Output(barrier[1 - w])}),
                                    vars.back(), accum, Const(v, 0.1f), mean, Const(v, 0.9f)));
  }
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Tensor result[2];
  for (bool fuse : {true, false}) {
    SessionOptions options;
    options.fuse_kernels = fuse;
    options.num_cpu_devices = 2;
    options.collect_step_stats = true;
    Session session(graph, options);
    ASSERT_TRUE(session.Run({}, {}, inits).ok());
    FeedList feeds;
    for (size_t i = 0; i < a.size(); ++i) {
      feeds.emplace_back(a[i], Random<float>({4, 6}, 30 + i));
      feeds.emplace_back(b[i], Random<float>({4, 3}, 40 + i));
    }
    StepStats stats;
    auto r = session.Run(feeds, {}, {updates[0].node, updates[1].node}, &stats);  // hangs if both fused
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    int whole_sums = 0;
    for (const auto& timing : stats.nodes) whole_sums += timing.fused.size() == 4;
    EXPECT_EQ(whole_sums, fuse ? 1 : 0) << "one of the two sums fuses, the other runs apart";
    auto values = session.Run({Identity(Scope(graph), vars[0])});
    ASSERT_TRUE(values.ok());
    result[fuse ? 0 : 1] = (*values)[0];
  }
  EXPECT_LE(MaxDiff<float>(result[0], result[1]), 1e-6);
}

TEST(TowerSumMomentumFusionTest, ErrorsAreTheNodesErrors) {
  const Options o{.towers = 2};
  // Towers whose gradients differ in shape: AddN's error, fused or not.
  TowerSum t(kFloat32, 16, 8, o);
  Result fused = Train<float>(t, 16, 8, o, true, false, /*bad_rows=*/17);
  Result apart = Train<float>(t, 16, 8, o, false, false, /*bad_rows=*/17);
  EXPECT_EQ(fused.status.code(), Code::kInvalidArgument);
  EXPECT_EQ(apart.status.code(), Code::kInvalidArgument);
  EXPECT_THAT(apart.status.message(), HasSubstr("AddN inputs must have one shape"));
  EXPECT_THAT(fused.status.message(),
              HasSubstr("AddN inputs must have one shape: input 0 (grad0:0) has shape [16,8] but input 1 (grad1:0) "
                        "has shape [17,8]"));
  EXPECT_THAT(fused.status.message(),
              HasSubstr("fused with 'grad0' (MatMul), 'grad1' (MatMul), 'sum' (AddN), 'mean' (Div)"));
  // A tower's MatMul with incompatible operands: MatMul's error, naming it.
  SessionOptions options;
  options.num_cpu_devices = 2;
  Session session(t.graph, options);
  ASSERT_TRUE(session.Run(t.init).ok());
  FeedList feeds = {{t.a[0], Random<float>({5, 16}, 1)}, {t.b[0], Random<float>({5, 8}, 2)},
                    {t.a[1], Random<float>({5, 16}, 3)}, {t.b[1], Random<float>({6, 8}, 4)}};
  auto inner = session.Run(feeds, {}, {t.update.node});
  ASSERT_FALSE(inner.ok());
  EXPECT_THAT(inner.status().message(), HasSubstr("'grad1' (MatMul): Matrix size-incompatible"));
  // A variable of another shape than the sum: ApplyMomentum's error, naming the variable.
  FeedList wrong = {{t.a[0], Random<float>({5, 15}, 1)}, {t.b[0], Random<float>({5, 8}, 2)},
                    {t.a[1], Random<float>({5, 15}, 3)}, {t.b[1], Random<float>({5, 8}, 4)}};
  auto shape = session.Run(wrong, {}, {t.update.node});
  ASSERT_FALSE(shape.ok());
  EXPECT_THAT(shape.status().message(), HasSubstr("var and grad do not have the same shape: variable w has shape [16,8]"));
}

}  // namespace
}  // namespace tw
