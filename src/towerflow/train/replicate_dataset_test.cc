// Towers fed by a dataset: Replicate takes a GraphIterator as its batch
// source, each tower runs its own IteratorGetNext, so the towers of a step
// train on different batches and N epochs deliver every element exactly N
// times across the towers; one GetNext shared by the towers is found by the
// pitfall detector as a shared dequeue is.
#include <gtest/gtest.h>

#include <map>

#include "towerflow/data/iterator_ops.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/runtime/pitfall_detector.h"
#include "towerflow/runtime/session.h"
#include "towerflow/train/gradient_descent.h"
#include "towerflow/train/replicate.h"

namespace tw::train {
namespace {

constexpr int kBatch = 5, kRecords = 60, kEpochs = 2;

// Element i: x = [i, i, i] (float), id = i.
data::Dataset Ids() {
  return data::Dataset::Range(kRecords)
      .Shuffle(16, {.seed = 2})
      .Repeat(kEpochs)
      .Map([](const Scope& s, const std::vector<Output>& e) {
        Output f = Reshape(s, Cast(s, e[0], kFloat32), std::vector<int32_t>{1});
        return std::vector<Output>{Concat(s, {f, f, f}, 0), e[0]};
      })
      .Batch(kBatch, /*drop_remainder=*/true)
      .Prefetch(2);
}

Output Model(const Scope& tower, const tw::Batch& b) {
  Variable w = GetVariable(tower.WithVariableScope("dense"), "kernel", {3, 1});
  return Mean(tower, Square(tower, MatMul(tower, b[0], w.value)), {});
}

TEST(ReplicateDataset, EachTowerTakesItsOwnBatchAndEveryElementComesOncePerEpoch) {
  Graph graph;
  Scope root(graph);
  data::GraphIterator it = data::MakeIterator(root.WithDevice("/device:CPU:0"), Ids());
  GradientDescent sgd;
  ReplicaStep step = Replicate(root, Devices("cpu:0,cpu:1"), it, sgd, Model);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_EQ(step.tower_batches.size(), 2u);
  EXPECT_NE(step.tower_batches[0][1].node, step.tower_batches[1][1].node);
  EXPECT_TRUE(FindSharedBatchesByRequest(graph).empty());
  Session session(graph, {.num_cpu_devices = 2, .strict_tower_inputs = true});
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  std::map<int64_t, int> seen;
  int steps = 0;
  while (true) {
    auto got = session.Run({step.tower_batches[0][1], step.tower_batches[1][1]}, {step.train_op});
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), Code::kOutOfRange) << got.status().ToString();
      break;
    }
    ++steps;
    const auto a = (*got)[0].ToVector<int64_t>(), b = (*got)[1].ToVector<int64_t>();
    EXPECT_NE(a, b);
    for (int64_t v : a) ++seen[v];
    for (int64_t v : b) ++seen[v];
  }
  // 2 epochs of 60 = 24 batches of 5 = 12 steps of two towers.
  EXPECT_EQ(steps, kRecords * kEpochs / kBatch / 2);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kRecords));
  for (const auto& [id, n] : seen) EXPECT_EQ(n, kEpochs) << id;
}

TEST(ReplicateDataset, OneGetNextSharedByTowersIsThePitfall) {
  Graph graph;
  Scope root(graph);
  data::GraphIterator it = data::MakeIterator(root.WithDevice("/device:CPU:0"), Ids());
  tw::Batch shared = it.GetNext(root.WithDevice("/device:CPU:0"));
  GradientDescent sgd;
  Replicate(root, Devices("cpu:0,cpu:1"), [&](const Scope&) { return shared; }, sgd, Model);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  auto findings = FindSharedBatchesByRequest(graph);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].dequeue->op(), "IteratorGetNext");
  EXPECT_NE(findings[0].Message().find("all towers will train on the same batch"), std::string::npos);
}

}  // namespace
}  // namespace tw::train
