// The momentum fusions (kernels/momentum_fusions.cc). MatMul -> ApplyMomentum:
// a weight's gradient applied block by block gives the updates of the two
// nodes run apart, for every transpose, one block and several, Nesterov or
// not, float32 and float64; it applies only where the update is the
// gradient's only reader; its errors name the update's variable.
// Div -> ApplyMomentum (the towers' averaged gradient): bit for bit the nodes
// run apart, and only for a divisor known to hold one element.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

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

// var[m, n] -= momentum update with grad = op(a) op(b), fed a and b.
struct Layer {
  Graph graph;
  Output a, b, grad, var, accum, update;
  Node* init = nullptr;
  Layer(DataType dtype, int64_t m, int64_t n, bool ta, bool tb, bool nesterov) {
    Scope s(graph);
    a = Placeholder(s.WithOpName("a"), dtype);
    b = Placeholder(s.WithOpName("b"), dtype);
    grad = MatMul(s.WithOpName("grad"), a, b, {.transpose_a = ta, .transpose_b = tb});
    var = VariableV2(s.WithOpName("w"), TensorShape{m, n}, dtype);
    accum = VariableV2(s.WithOpName("w_momentum"), TensorShape{m, n}, dtype);
    auto cast = [&](double v) { return dtype == kFloat32 ? Const(s, static_cast<float>(v)) : Const(s, v); };
    Output init_w = Assign(s.WithOpName("init_w"), var, Const(s, dtype == kFloat32 ? Random<float>({m, n}, 7) : Random<double>({m, n}, 7)));
    Output init_a = Assign(s.WithOpName("init_a"), accum, Const(s, dtype == kFloat32 ? Random<float>({m, n}, 8) : Random<double>({m, n}, 8)));
    init = NoOp(s.WithOpName("init").WithControlDependencies({init_w, init_a}));
    update = ApplyMomentum(s.WithOpName("update"), var, accum, cast(0.1), grad, cast(0.9), nesterov);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }
};

struct Result {
  Tensor var, accum;
  bool fused = false;
};

// Three updates from the same start, fused or not.
template <typename T>
Result Train(Layer& layer, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool fuse,
             std::vector<Output> extra_fetches = {}) {
  SessionOptions options;
  options.fuse_kernels = fuse;
  options.collect_step_stats = true;
  options.intra_op_threads = 2;
  Session session(layer.graph, options);
  EXPECT_TRUE(session.Run(layer.init).ok());
  Result out;
  for (uint64_t step = 0; step < 3; ++step) {
    FeedList feeds = {{layer.a, Random<T>(ta ? TensorShape{k, m} : TensorShape{m, k}, 10 + step)},
                      {layer.b, Random<T>(tb ? TensorShape{n, k} : TensorShape{k, n}, 20 + step)}};
    std::vector<Output> fetches = extra_fetches;
    StepStats stats;
    auto r = session.Run(feeds, fetches, {layer.update.node}, &stats);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    for (const auto& t : stats.nodes) {
      if (t.fused_producer == nullptr) continue;
      out.fused = true;
      EXPECT_EQ(t.fused_producer->name(), "grad");
      EXPECT_EQ(t.node->name(), "update");
    }
  }
  auto values = session.Run({Identity(Scope(layer.graph), layer.var), Identity(Scope(layer.graph), layer.accum)});
  EXPECT_TRUE(values.ok()) << values.status().ToString();
  if (values.ok()) {
    out.var = (*values)[0];
    out.accum = (*values)[1];
  }
  return out;
}


template <typename T>
void ExpectFusedMatchesApart() {
  // [m, n] with k: one block (64 x 33), several blocks with a short last one
  // (700 x 129: 508 float rows a block), an empty sum (k = 0).
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 33, 17}, {700, 129, 9}, {5, 3, 0}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (bool nesterov : {false, true}) {
          SCOPED_TRACE(testing::Message() << DataTypeName(DataTypeOf<T>()) << " [" << m << "," << n << "] k " << k
                                          << " ta " << ta << " tb " << tb << " nesterov " << nesterov);
          Layer layer(DataTypeOf<T>(), m, n, ta, tb, nesterov);
          Result fused = Train<T>(layer, m, n, k, ta, tb, true);
          Result apart = Train<T>(layer, m, n, k, ta, tb, false);
          EXPECT_TRUE(fused.fused);
          EXPECT_FALSE(apart.fused);
          const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
          EXPECT_LE(MaxDiff<T>(fused.var, apart.var), tol);
          EXPECT_LE(MaxDiff<T>(fused.accum, apart.accum), tol);
          EXPECT_GT(MaxDiff<T>(fused.var, Random<T>({m, n}, 7)), 1e-3) << "the variable moved";
        }
      }
    }
  }
}

TEST(MatMulMomentumFusionTest, FusedUpdateMatchesTheNodesRunApart) {
  ExpectFusedMatchesApart<float>();
  ExpectFusedMatchesApart<double>();
}

TEST(MatMulMomentumFusionTest, NotFusedWhenTheGradientIsReadElsewhere) {
  Layer layer(kFloat32, 8, 4, true, false, false);
  Result r = Train<float>(layer, 8, 4, 5, true, false, true, {layer.grad});
  EXPECT_FALSE(r.fused);
}

TEST(MatMulMomentumFusionTest, ErrorsNameTheVariable) {
  Layer layer(kFloat32, 8, 4, false, false, false);
  SessionOptions options;
  Session session(layer.graph, options);
  FeedList feeds = {{layer.a, Random<float>({8, 5}, 1)}, {layer.b, Random<float>({5, 4}, 2)}};
  // Before the initializer ran.
  auto uninit = session.Run(feeds, {}, {layer.update.node});
  ASSERT_FALSE(uninit.ok());
  EXPECT_EQ(uninit.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(uninit.status().message(), HasSubstr("w"));
  EXPECT_THAT(uninit.status().message(), HasSubstr("fused with 'grad' (MatMul)"));
  ASSERT_TRUE(session.Run(layer.init).ok());
  // A gradient of another shape than the variable's.
  FeedList wrong = {{layer.a, Random<float>({7, 5}, 1)}, {layer.b, Random<float>({5, 4}, 2)}};
  auto shape = session.Run(wrong, {}, {layer.update.node});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(shape.status().message(), HasSubstr("var and grad do not have the same shape: variable w has shape [8,4]"));
  // The MatMul's own checks.
  FeedList bad = {{layer.a, Random<float>({8, 5}, 1)}, {layer.b, Random<float>({6, 4}, 2)}};
  auto inner = session.Run(bad, {}, {layer.update.node});
  ASSERT_FALSE(inner.ok());
  EXPECT_THAT(inner.status().message(), HasSubstr("Matrix size-incompatible"));
}

// sum / divisor -> ApplyMomentum, fed the sum.
struct AveragedUpdate {
  Graph graph;
  Output sum, divisor, mean, update;
  Node* init = nullptr;
  AveragedUpdate(DataType dtype, const TensorShape& shape, Output (*make_divisor)(const Scope&, DataType), bool nesterov) {
    Scope s(graph);
    sum = Placeholder(s.WithOpName("sum"), dtype);
    divisor = make_divisor(s.WithOpName("towers"), dtype);
    mean = Div(s.WithOpName("mean"), sum, divisor);
    Output var = VariableV2(s.WithOpName("w"), shape, dtype);
    Output accum = VariableV2(s.WithOpName("w_momentum"), shape, dtype);
    Output init_w = Assign(s, var, Const(s, dtype == kFloat32 ? Random<float>(shape, 3) : Random<double>(shape, 3)));
    Output init_a = Assign(s, accum, Const(s, dtype == kFloat32 ? Random<float>(shape, 4) : Random<double>(shape, 4)));
    init = NoOp(s.WithOpName("init").WithControlDependencies({init_w, init_a}));
    auto scalar = [&](double v) { return dtype == kFloat32 ? Const(s, static_cast<float>(v)) : Const(s, v); };
    update = ApplyMomentum(s.WithOpName("update"), var, accum, scalar(0.05), mean, scalar(0.9), nesterov);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }
};

Output ScalarThree(const Scope& s, DataType dtype) {
  return dtype == kFloat32 ? Const(s, 3.0f) : Const(s, 3.0);
}
Output OneElementThree(const Scope& s, DataType dtype) {
  return dtype == kFloat32 ? Const(s, Tensor::FromVector<float>({3}, TensorShape{1, 1}))
                           : Const(s, Tensor::FromVector<double>({3}, TensorShape{1, 1}));
}
Output UnknownShape(const Scope& s, DataType dtype) { return Placeholder(s, dtype); }

// The update's variable after two steps (or the first error), and whether it ran fused.
template <typename T>
std::pair<StatusOr<Tensor>, bool> TrainAveraged(AveragedUpdate& u, const TensorShape& shape, bool fuse,
                                                FeedList extra = {}) {
  SessionOptions options;
  options.fuse_kernels = fuse;
  options.collect_step_stats = true;
  Session session(u.graph, options);
  EXPECT_TRUE(session.Run(u.init).ok());
  bool fused = false;
  StatusOr<Tensor> value = errors::Internal("no step ran");
  for (uint64_t step = 0; step < 2; ++step) {
    FeedList feeds = {{u.sum, Random<T>(shape, 30 + step)}};
    for (const auto& f : extra) feeds.push_back(f);
    StepStats stats;
    auto r = session.Run(feeds, {u.update}, {}, &stats);
    for (const auto& t : stats.nodes) fused |= t.fused_producer != nullptr && t.fused_producer->name() == "mean";
    if (!r.ok()) return {r.status(), fused};
    value = (*r)[0];
  }
  return {value, fused};
}

template <typename T>
void ExpectAveragedMatchesApart() {
  for (auto make : {ScalarThree, OneElementThree}) {
    for (bool nesterov : {false, true}) {
      for (const TensorShape& shape : {TensorShape{7, 33}, TensorShape{1000}, TensorShape{}}) {
        SCOPED_TRACE(testing::Message() << DataTypeName(DataTypeOf<T>()) << " " << shape.ToString() << " nesterov "
                                        << nesterov << (make == ScalarThree ? " divisor []" : " divisor [1,1]"));
        AveragedUpdate u(DataTypeOf<T>(), shape, make, nesterov);
        auto [fused, was_fused] = TrainAveraged<T>(u, shape, true);
        auto [apart, apart_fused] = TrainAveraged<T>(u, shape, false);
        EXPECT_FALSE(apart_fused);
        // A [1,1] divisor broadcasts the mean to rank 2: ApplyMomentum's shape
        // error, the same fused or not, except for the [7,33] variable.
        const bool ok = make == ScalarThree || shape.rank() == 2;
        ASSERT_EQ(apart.ok(), ok) << apart.status().ToString();
        ASSERT_EQ(fused.ok(), ok) << fused.status().ToString();
        if (!ok) {
          // The same code and message; a fused item's errors also name its producer.
          std::string message = fused.status().ToString();
          const std::string producer = "fused with 'mean' (Div): ";
          ASSERT_NE(message.find(producer), std::string::npos) << message;
          message.erase(message.find(producer), producer.size());
          EXPECT_EQ(message, apart.status().ToString());
          continue;
        }
        EXPECT_TRUE(was_fused);
        EXPECT_EQ(MaxDiff<T>(*fused, *apart), 0.0) << "the same divisions and updates, bit for bit";
      }
    }
  }
}

TEST(DivMomentumFusionTest, FusedUpdateMatchesTheNodesRunApartBitForBit) {
  ExpectAveragedMatchesApart<float>();
  ExpectAveragedMatchesApart<double>();
}

TEST(DivMomentumFusionTest, OnlyForADivisorKnownToHoldOneElement) {
  // A divisor of unknown shape (fed a scalar): Div runs apart, and still works.
  AveragedUpdate u(kFloat32, TensorShape{4}, UnknownShape, false);
  auto [value, fused] = TrainAveraged<float>(u, TensorShape{4}, true, {{u.divisor, Tensor::Scalar<float>(2)}});
  EXPECT_FALSE(fused);
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(value->NumElements(), 4);
}

}  // namespace
}  // namespace tw
