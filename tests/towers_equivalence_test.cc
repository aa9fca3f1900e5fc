// Towers are data parallelism, not a different algorithm: a step of N towers on
// N devices, each on its own batch, must leave the variables where one tower
// leaves them after a step on the concatenation of the N batches. Checked in
// float64 for N = 2 and 3, GradientDescent and Momentum (three steps, so that
// momentum's accumulator matters), shared (CPU-pinned) and mirrored variables,
// fed by placeholders per tower and by one FIFOQueue the towers dequeue from.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "towerflow/data/queue_ops.h"
#include "towerflow/towerflow.h"
#include "towerflow/train/replicate.h"

namespace tw::train {
namespace {

constexpr int kB = 5, kF = 4, kH = 6, kC = 3, kSteps = 3;

// SessionOptions with `cpus` virtual CPU devices once sessions have them (until
// then every node runs on CPU:0 whatever it requests).
template <typename O = SessionOptions>
O WithCpus(int cpus, O o = {}) {
  if constexpr (requires { o.num_cpu_devices; }) o.num_cpu_devices = cpus;
  o.inter_op_threads = 2;
  return o;
}

// Expects `node` placed on `device` ("/device:CPU:1").
void ExpectPlacedOn(const Session& session, const Node* node, const std::string& device) {
  ASSERT_NE(node, nullptr);
  const std::string placed = session.PlacedDevice(*node);
  EXPECT_TRUE(placed.ends_with(device)) << node->name() << " placed on '" << placed << "', expected " << device;
}

// A float64 MLP F -> H (tanh) -> C with seeded initializers, so every graph
// built from it starts from the same values.
Output Mlp(const Scope& s, const tw::Batch& b) {
  Scope h = s.WithVariableScope("hidden");
  Variable w1 = GetVariable(h, "kernel", {kF, kH},
                            {.dtype = kFloat64, .initializer = RandomUniformInitializer(-0.7, 0.7, 11)});
  Variable b1 = GetVariable(h, "bias", {kH},
                            {.dtype = kFloat64, .initializer = RandomUniformInitializer(-0.1, 0.1, 12)});
  Output a = Tanh(h, BiasAdd(h, MatMul(h, b[0], w1.value), b1.value));
  Scope o = s.WithVariableScope("logits");
  Variable w2 = GetVariable(o, "kernel", {kH, kC},
                            {.dtype = kFloat64, .initializer = RandomUniformInitializer(-0.7, 0.7, 13)});
  Variable b2 = GetVariable(o, "bias", {kC},
                            {.dtype = kFloat64, .initializer = RandomUniformInitializer(-0.1, 0.1, 14)});
  Output logits = BiasAdd(o, MatMul(o, a, w2.value), b2.value);
  return Mean(s, SoftmaxCrossEntropyWithLogits(s, logits, b[1]).loss, {0});
}

enum class Opt { kGradientDescent, kMomentum };

std::unique_ptr<Optimizer> MakeOptimizer(Opt opt) {
  if (opt == Opt::kMomentum)
    return std::make_unique<Momentum>(MomentumOptions{.learning_rate = 0.3, .momentum = 0.9});
  return std::make_unique<GradientDescent>(GradientDescentOptions{.learning_rate = 0.5});
}

// Step `step`'s rows: x uniform in [-1, 1], one-hot labels.
void MakeRows(int rows, int step, Tensor* x, Tensor* y) {
  std::mt19937 rng(static_cast<unsigned>(100 + step));
  std::uniform_real_distribution<double> u(-1, 1);
  *x = Tensor(kFloat64, TensorShape{rows, kF});
  *y = Tensor(kFloat64, TensorShape{rows, kC});
  for (double& v : x->flat<double>()) v = u(rng);
  for (double& v : y->flat<double>()) v = 0;
  for (int r = 0; r < rows; ++r) y->flat<double>()[static_cast<size_t>(r * kC) + rng() % kC] = 1;
}

// Rows [begin, begin + n) of a [rows, cols] tensor.
Tensor RowsOf(const Tensor& t, int begin, int n) {
  const int64_t cols = t.dim(1);
  Tensor out(kFloat64, TensorShape{n, cols});
  std::copy_n(t.data<double>() + begin * cols, n * cols, out.data<double>());
  return out;
}

std::vector<std::vector<double>> Values(Session& session, const std::vector<Variable>& vars) {
  std::vector<Output> fetch;
  for (const Variable& v : vars) fetch.push_back(v.value);
  auto r = session.Run(fetch);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::vector<double>> out;
  if (r.ok()) {
    for (const Tensor& t : *r) out.push_back(t.ToVector<double>());
  }
  return out;
}

void ExpectClose(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t v = 0; v < got.size(); ++v) {
    ASSERT_EQ(got[v].size(), want[v].size()) << what;
    for (size_t k = 0; k < got[v].size(); ++k) {
      EXPECT_NEAR(got[v][k], want[v][k], 1e-12 * std::max(1.0, std::abs(want[v][k])))
          << what << ": variable " << v << " element " << k;
    }
  }
}

// One tower on all the rows: the reference.
struct Reference {
  Graph graph;
  Output x, y, loss;
  Node* train_op = nullptr;
  std::vector<Variable> vars;
  std::unique_ptr<Optimizer> opt;
  std::unique_ptr<Session> session;

  Reference(Opt which, int rows) : opt(MakeOptimizer(which)) {
    Scope root(graph);
    x = Placeholder(root, kFloat64, PartialShape({rows, kF}));
    y = Placeholder(root, kFloat64, PartialShape({rows, kC}));
    loss = Mlp(root, {x, y});
    // Minimize, with the updates waiting for every gradient: variables change
    // in place, and without the barrier an update may land before backprop
    // reads the old value (dX = dY W^T), which Replicate's barrier rules out.
    auto grads = opt->ComputeGradients(root, loss);
    EXPECT_TRUE(grads.ok()) << grads.status().ToString();
    std::vector<Output> all;
    for (const auto& [g, v] : *grads) all.push_back(g);
    train_op = opt->ApplyGradients(root.WithControlDependencies(all), *grads);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
    vars = TrainableVariables(graph);
    session = std::make_unique<Session>(graph, WithCpus(1));
    EXPECT_TRUE(session->Run(GlobalVariablesInitializer(graph)).ok());
  }
};

struct Case {
  int towers;
  Opt opt;
  VariablePlacement placement;
};

std::string Name(const Case& c) {
  return std::to_string(c.towers) + (c.opt == Opt::kMomentum ? "_momentum" : "_sgd") +
         (c.placement == VariablePlacement::kMirrored ? "_mirrored" : "_single");
}

class TowersEquivalence : public testing::TestWithParam<Case> {};

TEST_P(TowersEquivalence, StepsMatchOneTowerOnTheConcatenatedBatches) {
  const Case c = GetParam();
  const int n = c.towers;
  const bool mirrored = c.placement == VariablePlacement::kMirrored;
  Reference ref(c.opt, n * kB);

  // Towers on CPU:1..N with the variables on CPU:0, or mirrored on CPU:0..N-1.
  std::string devices;
  for (int i = 0; i < n; ++i) devices += (i ? ",cpu:" : "cpu:") + std::to_string(mirrored ? i : i + 1);
  Graph graph;
  Scope root(graph);
  auto placeholders = [](const Scope& s) -> tw::Batch {
    return {Placeholder(s.WithOpName("x"), kFloat64, PartialShape({kB, kF})),
            Placeholder(s.WithOpName("y"), kFloat64, PartialShape({kB, kC}))};
  };
  std::unique_ptr<Optimizer> opt = MakeOptimizer(c.opt);
  ReplicaStep step =
      Replicate(root, Devices(devices), placeholders, *opt, Mlp, {.variable_placement = c.placement});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_EQ(step.tower_variables.size(), static_cast<size_t>(n));
  Session session(graph, WithCpus(n + 1));
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());

  // Same seeds, same start (every mirrored copy too).
  const auto start = Values(*ref.session, ref.vars);
  for (int i = 0; i < n; ++i) {
    ExpectClose(Values(session, step.tower_variables[static_cast<size_t>(i)]), start, "initial values");
  }
  for (int s = 0; s < kSteps; ++s) {
    Tensor x, y;
    MakeRows(n * kB, s, &x, &y);
    FeedList feeds;
    for (int i = 0; i < n; ++i) {
      feeds.emplace_back(step.tower_batches[static_cast<size_t>(i)][0], RowsOf(x, i * kB, kB));
      feeds.emplace_back(step.tower_batches[static_cast<size_t>(i)][1], RowsOf(y, i * kB, kB));
    }
    auto multi = session.Run(feeds, {step.loss}, {step.train_op});
    ASSERT_TRUE(multi.ok()) << multi.status().ToString();
    auto single = ref.session->Run({{ref.x, x}, {ref.y, y}}, {ref.loss}, {ref.train_op});
    ASSERT_TRUE(single.ok()) << single.status().ToString();
    // The mean of the towers' mean losses is the mean loss over all rows.
    EXPECT_NEAR((*multi)[0].scalar<double>(), (*single)[0].scalar<double>(), 1e-12);
    const auto want = Values(*ref.session, ref.vars);
    for (int i = 0; i < n; ++i) {
      ExpectClose(Values(session, step.tower_variables[static_cast<size_t>(i)]), want,
                  "step " + std::to_string(s) + " tower " + std::to_string(i));
    }
  }
  // The values moved: the comparison above is not between two starts.
  EXPECT_GT(std::abs(Values(session, step.tower_variables[0])[0][0] - start[0][0]), 1e-4);

  // Where things ran, once sessions place nodes on their requested devices.
  for (int i = 0; i < n; ++i) {
    const std::string tower_device = step.devices[static_cast<size_t>(i)];
    ExpectPlacedOn(session, graph.FindNode(step.tower_scopes[static_cast<size_t>(i)] + "/hidden/MatMul"),
                   tower_device);
    ExpectPlacedOn(session, step.tower_variables[static_cast<size_t>(i)][0].ref.node,
                   mirrored ? tower_device : "/device:CPU:0");
  }
}

INSTANTIATE_TEST_SUITE_P(Towers, TowersEquivalence,
                         testing::Values(Case{2, Opt::kGradientDescent, VariablePlacement::kSingleDevice},
                                         Case{3, Opt::kGradientDescent, VariablePlacement::kSingleDevice},
                                         Case{2, Opt::kMomentum, VariablePlacement::kSingleDevice},
                                         Case{3, Opt::kMomentum, VariablePlacement::kSingleDevice},
                                         Case{2, Opt::kGradientDescent, VariablePlacement::kMirrored},
                                         Case{3, Opt::kGradientDescent, VariablePlacement::kMirrored},
                                         Case{2, Opt::kMomentum, VariablePlacement::kMirrored},
                                         Case{3, Opt::kMomentum, VariablePlacement::kMirrored}),
                         [](const testing::TestParamInfo<Case>& info) { return Name(info.param); });

// The towers dequeue from one FIFOQueue holding exactly a step's rows. Which
// tower gets which rows depends on scheduling, but the averaged gradient does
// not (up to the order of one addition), so the result still matches.
TEST(TowersEquivalenceQueue, TowersDequeuingFromOneQueueMatchOneTower) {
  for (VariablePlacement placement : {VariablePlacement::kSingleDevice, VariablePlacement::kMirrored}) {
    constexpr int n = 3;
    Reference ref(Opt::kMomentum, n * kB);
    Graph graph;
    Scope root(graph);
    Scope input = root.WithDevice("/device:CPU:0");
    io::Queue queue = io::FIFOQueue(input, n * kB, {kFloat64, kFloat64}, {.shapes = {{kF}, {kC}}});
    Output all_x = Placeholder(input, kFloat64, PartialShape({n * kB, kF}));
    Output all_y = Placeholder(input, kFloat64, PartialShape({n * kB, kC}));
    Node* enqueue = queue.EnqueueMany(input, {all_x, all_y});
    auto dequeue = [&](const Scope& s) -> tw::Batch { return queue.DequeueMany(s, kB); };
    std::unique_ptr<Optimizer> opt = MakeOptimizer(Opt::kMomentum);
    ReplicaStep step =
        Replicate(root, Devices("cpu:0,cpu:1,cpu:2"), dequeue, *opt, Mlp, {.variable_placement = placement});
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    EXPECT_NE(step.tower_batches[0][0].node, step.tower_batches[1][0].node);  // one dequeue per tower
    Session session(graph, WithCpus(n));
    ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
    for (int s = 0; s < kSteps; ++s) {
      Tensor x, y;
      MakeRows(n * kB, s, &x, &y);
      ASSERT_TRUE(session.Run({{all_x, x}, {all_y, y}}, {}, {enqueue}).ok());
      ASSERT_TRUE(session.Run({}, {}, {step.train_op}).ok());
      ASSERT_TRUE(ref.session->Run({{ref.x, x}, {ref.y, y}}, {}, {ref.train_op}).ok());
    }
    auto size = session.Run({queue.Size(input)});
    ASSERT_TRUE(size.ok());
    EXPECT_EQ((*size)[0].scalar<int32_t>(), 0);  // every row consumed
    const auto want = Values(*ref.session, ref.vars);
    for (int i = 0; i < n; ++i) {
      ExpectClose(Values(session, step.tower_variables[static_cast<size_t>(i)]), want,
                  "tower " + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace tw::train
