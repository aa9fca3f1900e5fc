// Step graphs (step_graph.h) on a CUDA GPU, where they are CUDA graphs
// recorded by stream capture: an MLP with dropout trains bit for bit as it
// does with the graph off (same losses, same variables, so the replays draw
// the masks the kernels draw one by one: Dropout's offset advances on the
// device); the graph is recorded once and replayed; a last batch of another
// size runs one by one and the next full one replays again. Skipped without
// a GPU.
#include <gtest/gtest.h>

#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/step_graph.h"
#include "towerflow/runtime/training_test_util.h"

namespace tw {
namespace {

using fusion_test::Random;

struct Trained {
  std::vector<std::vector<float>> fetched;  // losses, then each variable
  StepGraphStats stats;
  PlanCounts counts;
};

Trained Train(SessionOptions::StepGraphMode mode) {
  Graph graph;
  Scope root(graph);
  Scope g = root.WithDevice("/device:GPU:0");
  Output x = Placeholder(root.WithOpName("x"), kFloat32, PartialShape({-1, 64}));
  Output labels = Placeholder(root.WithOpName("labels"), kFloat32, PartialShape({-1, 10}));
  const Initializer fixed = training_test::FixedValues();
  Variable w1 = GetVariable(g, "w1", {64, 128}, {.initializer = fixed});
  Variable b1 = GetVariable(g, "b1", {128}, {.initializer = fixed});
  Variable w2 = GetVariable(g, "w2", {128, 10}, {.initializer = fixed});
  Output h = Dropout(g, Relu(g, BiasAdd(g, MatMul(g, x, w1.value), b1.value)), 0.25f, /*seed=*/5).output;
  Output loss = Mean(g, SoftmaxCrossEntropyWithLogits(g, MatMul(g, h, w2.value), labels).loss, {0});
  Node* train = train::Momentum({.learning_rate = 0.05, .momentum = 0.9}).Minimize(g, loss);
  Node* init = GlobalVariablesInitializer(graph);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  SessionOptions options;
  options.allow_soft_placement = true;
  options.cuda_graphs = mode;
  Session session(graph, options);
  EXPECT_TRUE(session.Run(init).ok());
  Trained out;
  auto batch = [&](int step, int64_t rows) {
    return FeedList{{x, Random<float>({rows, 64}, 300 + static_cast<uint64_t>(step))},
                    {labels, training_test::OneHotLabels(rows, 10, static_cast<uint64_t>(step))}};
  };
  // Rows per step: a smaller batch at step 6, the full one after.
  const std::vector<int64_t> rows = {100, 100, 100, 100, 100, 100, 37, 100, 100, 100};
  for (size_t step = 0; step < rows.size(); ++step) {
    auto r = session.Run(batch(static_cast<int>(step), rows[step]), {loss}, {train});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return out;
    out.fetched.push_back({(*r)[0].scalar<float>()});
  }
  for (const Variable& v : {w1, b1, w2}) {
    auto r = session.Run({}, {v.value}, {});
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return out;
    auto f = (*r)[0].flat<float>();
    out.fetched.emplace_back(f.begin(), f.end());
  }
  auto plan = session.impl().GetPlan(batch(0, 100), {loss}, {train});
  EXPECT_TRUE(plan.ok());
  if (plan.ok()) {
    out.counts = CountItems(**plan);
    if (!(*plan)->step_graphs.empty()) out.stats = (*plan)->step_graphs[0]->stats();
  }
  return out;
}

TEST(StepGraphCudaTest, ACudaGraphTrainsBitForBitAsKernelsOneByOne) {
  TW_SKIP_WITHOUT_GPU();
  const Trained plain = Train(SessionOptions::StepGraphMode::kOff);
  const Trained graph = Train(SessionOptions::StepGraphMode::kAuto);
  EXPECT_EQ(plain.fetched, graph.fetched);
  EXPECT_EQ(plain.counts.step_graphs, 0);
  EXPECT_EQ(graph.counts.step_graphs, 1) << graph.counts.ToString();
  EXPECT_TRUE(graph.stats.device_graph);
  EXPECT_FALSE(graph.stats.off) << graph.stats.off_reason;
  EXPECT_EQ(graph.stats.captures, 1);
  EXPECT_EQ(graph.stats.shape_changes, 1);
  EXPECT_EQ(graph.stats.replays, 6) << "steps 3-5 and 7-9";
}

}  // namespace
}  // namespace tw
