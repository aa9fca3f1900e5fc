// Helpers of the runtime's training tests (step_arena_test, update_groups_test,
// device_memory_test): variables from fixed values, one-hot labels, and a
// small MLP trained with momentum.
#ifndef TOWERFLOW_RUNTIME_TRAINING_TEST_UTIL_H_
#define TOWERFLOW_RUNTIME_TRAINING_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/runtime/fusion_test_util.h"
#include "towerflow/runtime/session.h"
#include "towerflow/train/momentum.h"

namespace tw::training_test {

// Each variable it initializes gets Random values of the next seed from `first`.
inline Initializer FixedValues(uint64_t first = 1) {
  auto seed = std::make_shared<uint64_t>(first);
  return [seed](const Scope& scope, const TensorShape& shape, DataType) {
    return Const(scope, fusion_test::Random<float>(shape, (*seed)++));
  };
}

// Row i is class (i + step) % classes.
inline Tensor OneHotLabels(int64_t batch, int64_t classes, uint64_t step) {
  Tensor y(kFloat32, TensorShape{batch, classes});
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < classes; ++j) {
      y.flat<float>()[i * classes + j] = (i + static_cast<int64_t>(step)) % classes == j;
    }
  }
  return y;
}

// widths {in, hidden..., classes}: BiasAdd+Relu layers, then BiasAdd logits,
// softmax cross-entropy, momentum; everything under `device` ("" for none).
struct Mlp {
  Graph graph;
  Output x, labels, loss;
  Node* train = nullptr;
  Node* init = nullptr;
  std::vector<Variable> vars;
  int64_t batch;
  std::vector<int64_t> widths;
  Mlp(std::vector<int64_t> layer_widths, int64_t batch_size, const std::string& device,
      train::MomentumOptions optimizer)
      : batch(batch_size), widths(std::move(layer_widths)) {
    Scope root(graph);
    Scope s = device.empty() ? root : root.WithDevice(device);
    x = Placeholder(s.WithOpName("x"), kFloat32, PartialShape({batch, widths.front()}));
    labels = Placeholder(s.WithOpName("labels"), kFloat32, PartialShape({batch, widths.back()}));
    const Initializer fixed = FixedValues();
    Output h = x;
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      Variable w = GetVariable(s, "w" + std::to_string(l + 1), {widths[l], widths[l + 1]}, {.initializer = fixed});
      Variable b = GetVariable(s, "b" + std::to_string(l + 1), {widths[l + 1]}, {.initializer = fixed});
      vars.push_back(w);
      vars.push_back(b);
      h = BiasAdd(s, MatMul(s, h, w.value), b.value);
      if (l + 2 < widths.size()) h = Relu(s, h);
    }
    loss = Mean(s.WithOpName("loss"), SoftmaxCrossEntropyWithLogits(s, h, labels).loss, {0});
    train = train::Momentum(optimizer).Minimize(s, loss);
    init = GlobalVariablesInitializer(graph);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
  }
  FeedList Batch(uint64_t step) const {
    return {{x, fusion_test::Random<float>({batch, widths.front()}, 100 + step)},
            {labels, OneHotLabels(batch, widths.back(), step)}};
  }
};

}  // namespace tw::training_test

#endif  // TOWERFLOW_RUNTIME_TRAINING_TEST_UTIL_H_
