// A/B of the CNN training step on one thread, steps interleaved in one
// process: the tutorial CNN (conv 5x5x32, pool, conv 5x5x64, pool, dense 1024,
// dense 10; no dropout) at batch 100 with momentum SGD, as two sessions on one
// graph that differ in one setting, run A, B, A, B, ... so that the drift of a
// shared machine (2x within minutes on the CI VM) hits both alike. Reports
// each side's median step and the ratio of medians with the spread of the
// per-pair ratios. A single run of each, minutes apart, cannot resolve the
// few-percent effects of a kernel change here.
//
// Usage: cnn_ab_bench [--mlp] [A] [B] [pairs, default 150]
//   --mlp: the MLP 784-256-256-10 instead of the CNN (same batch and optimizer)
//   a side is "fuse" (default) or "nofuse" (SessionOptions::fuse_kernels),
//   optionally with ",conv=<path>" (TOWERFLOW_CONV while its kernels are
//   built: direct | onednn | im2col).
//   e.g. cnn_ab_bench fuse nofuse;  cnn_ab_bench fuse fuse,conv=onednn
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "towerflow/towerflow.h"

namespace {

constexpr int64_t kBatch = 100;

struct Side {
  std::string spec;
  bool fuse = true;
  std::string conv;  // empty: the default path
  std::unique_ptr<tw::Session> session;
  std::vector<double> ms;
};

Side ParseSide(const std::string& spec) {
  Side side;
  side.spec = spec;
  side.fuse = spec.rfind("nofuse", 0) != 0;
  const size_t conv = spec.find("conv=");
  if (conv != std::string::npos) side.conv = spec.substr(conv + 5);
  return side;
}

tw::Output Conv(const tw::Scope& scope, const std::string& name, const tw::Output& in, int64_t c, int64_t o) {
  tw::Scope s = scope.WithVariableScope(name);
  auto w = tw::GetVariable(s, "kernel", {5, 5, c, o}, {.initializer = tw::GlorotUniformInitializer()});
  auto b = tw::GetVariable(s, "bias", {o}, {.initializer = tw::ZerosInitializer()});
  return tw::BiasAddRelu(s, tw::Conv2D(s, in, w.value, {.padding = "SAME"}), b.value);
}

tw::Output Dense(const tw::Scope& scope, const std::string& name, const tw::Output& in, int64_t n, int64_t m,
                 bool relu) {
  tw::Scope s = scope.WithVariableScope(name);
  auto w = tw::GetVariable(s, "kernel", {n, m}, {.initializer = tw::GlorotUniformInitializer()});
  auto b = tw::GetVariable(s, "bias", {m}, {.initializer = tw::ZerosInitializer()});
  tw::Output z = tw::MatMul(s, in, w.value);
  return relu ? tw::BiasAddRelu(s, z, b.value) : tw::BiasAdd(s, z, b.value);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool mlp = argc > 1 && std::string(argv[1]) == "--mlp";
  if (mlp) {
    --argc;
    ++argv;
  }
  Side sides[2] = {ParseSide(argc > 1 ? argv[1] : "fuse"), ParseSide(argc > 2 ? argv[2] : "nofuse")};
  const int pairs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 150;

  tw::Graph graph;
  graph.set_seed(1);
  tw::Scope root(graph);
  auto x = tw::Placeholder(root.WithOpName("x"), tw::kFloat32, tw::PartialShape({kBatch, 28, 28, 1}));
  auto labels = tw::Placeholder(root.WithOpName("labels"), tw::kInt32, tw::PartialShape({kBatch}));
  tw::Output logits;
  if (mlp) {
    tw::Output flat = tw::Reshape(root, x, {-1, 784});
    tw::Output h1 = Dense(root, "hidden1", flat, 784, 256, true);
    logits = Dense(root, "logits", Dense(root, "hidden2", h1, 256, 256, true), 256, 10, false);
  } else {
    tw::Output p1 = tw::MaxPool(root.WithOpName("pool1"), Conv(root, "conv1", x, 1, 32));
    tw::Output p2 = tw::MaxPool(root.WithOpName("pool2"), Conv(root, "conv2", p1, 32, 64));
    tw::Output flat = tw::Reshape(root, p2, {-1, 7 * 7 * 64});
    logits = Dense(root, "logits", Dense(root, "dense", flat, 7 * 7 * 64, 1024, true), 1024, 10, false);
  }
  tw::Output loss = tw::Mean(root, tw::SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).loss, {0});
  tw::train::Momentum optimizer({.learning_rate = 0.01, .momentum = 0.9});
  tw::Node* train_op = optimizer.Minimize(root, loss);
  if (!root.ok()) {
    std::fprintf(stderr, "cnn_ab_bench: %s\n", root.status().ToString().c_str());
    return 1;
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  tw::Tensor x_data(tw::kFloat32, tw::TensorShape{kBatch, 28, 28, 1}), y_data(tw::kInt32, tw::TensorShape{kBatch});
  for (float& v : x_data.flat<float>()) v = pixel(rng);
  for (int32_t& v : y_data.flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
  const tw::FeedList feeds = {{x, x_data}, {labels, y_data}};

  // Each side's kernels are built by its first run, under its TOWERFLOW_CONV.
  for (Side& side : sides) {
    tw::SessionOptions options{.inter_op_threads = 1, .intra_op_threads = 1};
    options.fuse_kernels = side.fuse;
    side.session = std::make_unique<tw::Session>(graph, options);
    if (side.conv.empty()) {
      unsetenv("TOWERFLOW_CONV");
    } else {
      setenv("TOWERFLOW_CONV", side.conv.c_str(), 1);
    }
    tw::Status s = side.session->Run(tw::GlobalVariablesInitializer(graph));
    for (int i = 0; s.ok() && i < 5; ++i) s = side.session->Run(feeds, {}, {train_op}).status();
    if (!s.ok()) {
      std::fprintf(stderr, "cnn_ab_bench: %s: %s\n", side.spec.c_str(), s.ToString().c_str());
      return 1;
    }
  }
  unsetenv("TOWERFLOW_CONV");
  std::vector<double> ratios;
  for (int i = 0; i < pairs; ++i) {
    for (int k = 0; k < 2; ++k) {
      Side& side = sides[(i + k) % 2];  // alternate which side goes first
      const auto start = std::chrono::steady_clock::now();
      tw::Status s = side.session->Run(feeds, {}, {train_op}).status();
      const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
      if (!s.ok()) {
        std::fprintf(stderr, "cnn_ab_bench: %s: %s\n", side.spec.c_str(), s.ToString().c_str());
        return 1;
      }
      side.ms.push_back(took.count());
    }
    ratios.push_back(sides[1].ms.back() / sides[0].ms.back());
  }
  std::sort(ratios.begin(), ratios.end());
  const double a = Median(sides[0].ms), b = Median(sides[1].ms);
  std::printf("A %-24s median %7.2f ms/step  %7.0f examples/s\n", sides[0].spec.c_str(), a, kBatch * 1000.0 / a);
  std::printf("B %-24s median %7.2f ms/step  %7.0f examples/s\n", sides[1].spec.c_str(), b, kBatch * 1000.0 / b);
  std::printf("B/A step time: %.3f (per-pair ratios: median %.3f, middle half %.3f-%.3f), %d pairs\n", b / a,
              ratios[ratios.size() / 2], ratios[ratios.size() / 4], ratios[ratios.size() * 3 / 4], pairs);
  return 0;
}
