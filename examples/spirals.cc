// Trains a two-layer MLP on the two-spirals problem through towerflow's graph API:
// placeholders, variables in variable scopes, symbolic gradients, Adam, a session.
// The smallest complete towerflow program; `scripts/demo` runs it.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "towerflow/towerflow.h"

namespace {

// Two interleaved spirals, `n` points each, with a little noise.
void MakeSpirals(int n, uint64_t seed, tw::Tensor* x, tw::Tensor* y) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  *x = tw::Tensor(tw::kFloat32, tw::TensorShape{2 * n, 2});
  *y = tw::Tensor(tw::kInt32, tw::TensorShape{2 * n});
  for (int i = 0; i < n; ++i) {
    const float r = 0.2f + 2.8f * static_cast<float>(i) / static_cast<float>(n);
    const float theta = 1.75f * static_cast<float>(M_PI) * static_cast<float>(i) / static_cast<float>(n) * 2.0f;
    for (int c = 0; c < 2; ++c) {
      const float sign = c == 0 ? 1.0f : -1.0f;
      const int row = 2 * i + c;
      x->data<float>()[2 * row] = sign * r * std::cos(theta) + noise(rng);
      x->data<float>()[2 * row + 1] = sign * r * std::sin(theta) + noise(rng);
      y->data<int32_t>()[row] = c;
    }
  }
}

tw::Output Dense(const tw::Scope& scope, const std::string& name, tw::Output in, int64_t fan_in,
                 int64_t units, bool activate) {
  tw::Scope s = scope.WithVariableScope(name);
  auto w = tw::GetVariable(s, "kernel", {fan_in, units}, {.initializer = tw::GlorotUniformInitializer()});
  auto b = tw::GetVariable(s, "bias", {units}, {.initializer = tw::ZerosInitializer()});
  auto z = tw::BiasAdd(s, tw::MatMul(s, in, w.value), b.value);
  return activate ? tw::Tanh(s, z) : z;
}

}  // namespace

int main() {
  tw::Tensor x_data, y_data;
  MakeSpirals(500, 7, &x_data, &y_data);

  tw::Graph graph;
  graph.set_seed(1234);
  tw::Scope root(graph);
  auto x = tw::Placeholder(root.WithOpName("x"), tw::kFloat32, tw::PartialShape({-1, 2}));
  auto labels = tw::Placeholder(root.WithOpName("labels"), tw::kInt32, tw::PartialShape({-1}));
  auto h1 = Dense(root, "hidden1", x, 2, 64, true);
  auto h2 = Dense(root, "hidden2", h1, 64, 64, true);
  auto logits = Dense(root, "logits", h2, 64, 2, false);
  auto xent = tw::SparseSoftmaxCrossEntropyWithLogits(root, logits, labels);
  auto loss = tw::Mean(root.WithOpName("loss"), xent.loss, {0});
  auto correct = tw::Equal(root, tw::Cast(root, tw::ArgMax(root, logits, 1), tw::kInt32), labels);
  auto accuracy = tw::Mean(root.WithOpName("accuracy"), tw::Cast(root, correct, tw::kFloat32), {0});
  tw::train::Adam optimizer({.learning_rate = 0.01});
  tw::Node* train_op = optimizer.Minimize(root, loss);
  if (!root.ok()) return tw::Fail(root.status());

  tw::Session session(graph);
  if (int rc = tw::Fail(session.Run(tw::GlobalVariablesInitializer(graph)))) return rc;
  const auto start = std::chrono::steady_clock::now();
  const tw::FeedList feeds = {{x, x_data}, {labels, y_data}};
  std::vector<tw::Tensor> out;
  for (int step = 1; step <= 1500; ++step) {
    auto r = session.Run(feeds, {loss, accuracy}, {train_op});
    if (!r.ok()) return tw::Fail(r.status());
    out = std::move(r).value();
    if (step % 250 == 0) {
      std::printf("step %4d  loss %.4f  accuracy %.3f\n", step, out[0].scalar<float>(), out[1].scalar<float>());
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"problem\": \"two-spirals\", \"examples\": %lld, \"steps\": 1500, \"seconds\": %.2f, "
              "\"final_loss\": %.4f, \"train_accuracy\": %.4f}\n",
              static_cast<long long>(x_data.dim(0)), secs, out[0].scalar<float>(), out[1].scalar<float>());
  return out[1].scalar<float>() >= 0.95f ? 0 : 1;
}
