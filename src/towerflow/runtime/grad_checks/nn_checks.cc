// Numeric gradient checks of the nn ops, including the internal ops gradients
// build (ReluGrad, BiasAddGrad, the conv backprops, MaxPoolGrad(Grad)), so that
// second derivatives are checked too. Inputs that sit on kinks are generated
// away from them: Relu inputs away from 0, max-pool inputs distinct.
#include <algorithm>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/runtime/gradient_checker.h"

namespace tw {
namespace {

using In = GradCheckCase::Input;
using V = const std::vector<Output>&;
using Build = std::function<Output(const Scope&, V)>;
using MakeInput = std::function<Tensor(int, std::mt19937_64&)>;

GradCheckCase Case(std::string op, std::string name, std::vector<In> inputs, Build build, MakeInput make = nullptr) {
  GradCheckCase c;
  c.op = std::move(op);
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.build = std::move(build);
  c.make_input = std::move(make);
  return c;
}

Tensor Uniform(const TensorShape& shape, double lo, double hi, std::mt19937_64& rng) {
  Tensor t(kFloat64, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (double& v : t.flat<double>()) v = u(rng);
  return t;
}

// Values in +-[0.1, 1]: no Relu input within a finite-difference step of 0.
Tensor AwayFromZero(const TensorShape& shape, std::mt19937_64& rng) {
  Tensor t = Uniform(shape, 0.1, 1.0, rng);
  std::bernoulli_distribution sign(0.5);
  for (double& v : t.flat<double>()) v = sign(rng) ? v : -v;
  return t;
}

// A shuffled grid of values 0.05 apart: every pooling window has one clear max.
Tensor Distinct(const TensorShape& shape, std::mt19937_64& rng) {
  Tensor t(kFloat64, shape);
  auto f = t.flat<double>();
  for (size_t i = 0; i < f.size(); ++i) f[i] = -1.0 + 0.05 * static_cast<double>(i);
  std::shuffle(f.begin(), f.end(), rng);
  return t;
}

// Every input uniform in [-1, 1] except `special`, made by `make`.
MakeInput With(std::vector<In> inputs, int special, std::function<Tensor(std::mt19937_64&)> make) {
  return [inputs, special, make](int i, std::mt19937_64& rng) {
    return i == special ? make(rng) : Uniform(inputs[static_cast<size_t>(i)].shape, -1, 1, rng);
  };
}

Output Window(const Scope& s, const std::string& op, const std::vector<Output>& inputs, std::vector<int64_t> strides,
              const std::string& padding, std::vector<int64_t> ksize = {}) {
  NodeBuilder b(s, op);
  b.Inputs(inputs).Attr("strides", strides).Attr("padding", padding);
  if (!ksize.empty()) b.Attr("ksize", ksize);
  return b.Finalize();
}

void AddConvChecks(std::vector<GradCheckCase>& cases) {
  cases.push_back(Case("Conv2D", "SAME stride 2 [2,5,5,3] * [3,3,3,2]", {{kFloat64, {2, 5, 5, 3}}, {kFloat64, {3, 3, 3, 2}}},
                       [](const Scope& s, V x) { return Conv2D(s, x[0], x[1], {{1, 2, 2, 1}, "SAME"}); }));
  cases.push_back(Case("Conv2D", "VALID stride 2 [1,7,6,2] * [3,2,2,3]", {{kFloat64, {1, 7, 6, 2}}, {kFloat64, {3, 2, 2, 3}}},
                       [](const Scope& s, V x) { return Conv2D(s, x[0], x[1], {{1, 2, 2, 1}, "VALID"}); }));
  cases.push_back(Case("Conv2D", "SAME strides 1x3 [1,4,7,2] * [2,3,2,2]", {{kFloat64, {1, 4, 7, 2}}, {kFloat64, {2, 3, 2, 2}}},
                       [](const Scope& s, V x) { return Conv2D(s, x[0], x[1], {{1, 1, 3, 1}, "SAME"}); }));
  cases.push_back(Case("Conv2D", "1x1 [2,3,3,2] * [1,1,2,3]", {{kFloat64, {2, 3, 3, 2}}, {kFloat64, {1, 1, 2, 3}}},
                       [](const Scope& s, V x) { return Conv2D(s, x[0], x[1]); }));
  // Backprops as functions of their two float inputs (second derivatives of Conv2D).
  cases.push_back(Case("Conv2DBackpropInput", "SAME stride 2 -> [1,5,5,2]", {{kFloat64, {3, 3, 2, 2}}, {kFloat64, {1, 3, 3, 2}}},
                       [](const Scope& s, V x) {
                         return Window(s, "Conv2DBackpropInput", {Const(s, std::vector<int32_t>{1, 5, 5, 2}), x[0], x[1]},
                                       {1, 2, 2, 1}, "SAME");
                       }));
  cases.push_back(Case("Conv2DBackpropFilter", "VALID stride 2 [1,5,6,2] -> [3,2,2,2]",
                       {{kFloat64, {1, 5, 6, 2}}, {kFloat64, {1, 2, 3, 2}}}, [](const Scope& s, V x) {
                         return Window(s, "Conv2DBackpropFilter", {x[0], Const(s, std::vector<int32_t>{3, 2, 2, 2}), x[1]},
                                       {1, 2, 2, 1}, "VALID");
                       }));
}

void AddPoolChecks(std::vector<GradCheckCase>& cases) {
  const std::vector<In> same_in = {{kFloat64, {1, 5, 5, 2}}};
  cases.push_back(Case("MaxPool", "SAME 3x3 stride 2 [1,5,5,2]", same_in,
                       [](const Scope& s, V x) { return MaxPool(s, x[0], {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"}); },
                       [](int, std::mt19937_64& rng) { return Distinct({1, 5, 5, 2}, rng); }));
  cases.push_back(Case("MaxPool", "VALID 2x2 stride 2 [2,4,5,1]", {{kFloat64, {2, 4, 5, 1}}},
                       [](const Scope& s, V x) { return MaxPool(s, x[0], {{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"}); },
                       [](int, std::mt19937_64& rng) { return Distinct({2, 4, 5, 1}, rng); }));
  // orig_input is fixed (distinct values); the gradient flows through `grad`.
  const std::vector<In> grad_in = {{kFloat64, {1, 5, 5, 2}, false}, {kFloat64, {1, 3, 3, 2}}};
  cases.push_back(Case("MaxPoolGrad", "SAME 3x3 stride 2", grad_in,
                       [](const Scope& s, V x) {
                         Output y = MaxPool(s, x[0], {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"});
                         return Window(s, "MaxPoolGrad", {x[0], y, x[1]}, {1, 2, 2, 1}, "SAME", {1, 3, 3, 1});
                       },
                       With(grad_in, 0, [](std::mt19937_64& rng) { return Distinct({1, 5, 5, 2}, rng); })));
  const std::vector<In> gg_in = {{kFloat64, {1, 5, 5, 2}, false}, {kFloat64, {1, 5, 5, 2}}};
  cases.push_back(Case("MaxPoolGradGrad", "SAME 3x3 stride 2", gg_in,
                       [](const Scope& s, V x) {
                         Output y = MaxPool(s, x[0], {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"});
                         return Window(s, "MaxPoolGradGrad", {x[0], y, x[1]}, {1, 2, 2, 1}, "SAME", {1, 3, 3, 1});
                       },
                       With(gg_in, 0, [](std::mt19937_64& rng) { return Distinct({1, 5, 5, 2}, rng); })));
  // Average pooling is linear: no kinks, any values.
  cases.push_back(Case("AvgPool", "SAME 3x3 stride 2 [2,5,4,2]", {{kFloat64, {2, 5, 4, 2}}},
                       [](const Scope& s, V x) { return AvgPool(s, x[0], {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"}); }));
  cases.push_back(Case("AvgPool", "VALID 2x3 stride 1x2 [1,4,7,3]", {{kFloat64, {1, 4, 7, 3}}},
                       [](const Scope& s, V x) { return AvgPool(s, x[0], {{1, 2, 3, 1}, {1, 1, 2, 1}, "VALID"}); }));
  cases.push_back(Case("AvgPoolGrad", "SAME 3x3 stride 2 into [1,5,5,2]", {{kFloat64, {1, 3, 3, 2}}},
                       [](const Scope& s, V x) {
                         return Window(s, "AvgPoolGrad", {Const(s, std::vector<int32_t>{1, 5, 5, 2}), x[0]},
                                       {1, 2, 2, 1}, "SAME", {1, 3, 3, 1});
                       }));
  // LRN: smooth everywhere (bias > 0); the three forms of the power.
  cases.push_back(Case("LRN", "radius 5, beta 0.5 [2,2,3,7]", {{kFloat64, {2, 2, 3, 7}}},
                       [](const Scope& s, V x) { return LRN(s, x[0]); }));
  cases.push_back(Case("LRN", "radius 2, bias 2, alpha 0.3, beta 0.75 [1,3,2,9]", {{kFloat64, {1, 3, 2, 9}}},
                       [](const Scope& s, V x) { return LRN(s, x[0], {2, 2.0, 0.3, 0.75}); }));
  cases.push_back(Case("LRN", "radius 1, beta 1 [1,1,2,4]", {{kFloat64, {1, 1, 2, 4}}},
                       [](const Scope& s, V x) { return LRN(s, x[0], {1, 1.5, 0.5, 1.0}); }));
}

}  // namespace

void AddNnGradChecks(std::vector<GradCheckCase>& cases) {
  cases.push_back(Case("BiasAdd", "[2,3,4] + [4]", {{kFloat64, {2, 3, 4}}, {kFloat64, {4}}},
                       [](const Scope& s, V x) { return BiasAdd(s, x[0], x[1]); }));
  // Values away from the kink: |value| >= 0.1 and |bias| <= 0.05.
  const std::vector<In> bias_relu_in = {{kFloat64, {3, 4}}, {kFloat64, {4}}};
  cases.push_back(Case("BiasAddRelu", "[3,4] + [4]", bias_relu_in,
                       [](const Scope& s, V x) { return BiasAddRelu(s, x[0], x[1]); },
                       [](int i, std::mt19937_64& rng) {
                         return i == 0 ? AwayFromZero({3, 4}, rng) : Uniform({4}, -0.05, 0.05, rng);
                       }));
  cases.push_back(Case("BiasAddGrad", "[3,4]", {{kFloat64, {3, 4}}},
                       [](const Scope& s, V x) { return Output(NodeBuilder(s, "BiasAddGrad").Input(x[0]).Finalize()); }));
  cases.push_back(Case("Relu", "[3,4]", {{kFloat64, {3, 4}}}, [](const Scope& s, V x) { return Relu(s, x[0]); },
                       [](int, std::mt19937_64& rng) { return AwayFromZero({3, 4}, rng); }));
  const std::vector<In> relu_grad_in = {{kFloat64, {3, 4}}, {kFloat64, {3, 4}, false}};
  cases.push_back(Case("ReluGrad", "[3,4]", relu_grad_in,
                       [](const Scope& s, V x) { return Output(NodeBuilder(s, "ReluGrad").Input(x[0]).Input(x[1]).Finalize()); },
                       With(relu_grad_in, 1, [](std::mt19937_64& rng) { return AwayFromZero({3, 4}, rng); })));
  // BiasAddRelu's gradient op: each output alone, and both at once (the
  // bias sums broadcast back onto the masked gradient).
  const auto bias_relu_grad = [](const Scope& s, V x) {
    return NodeBuilder(s, "BiasAddReluGrad").Input(x[0]).Input(x[1]).Finalize();
  };
  const auto away = With(relu_grad_in, 1, [](std::mt19937_64& rng) { return AwayFromZero({3, 4}, rng); });
  cases.push_back(Case("BiasAddReluGrad", "backprops [3,4]", relu_grad_in,
                       [=](const Scope& s, V x) { return Output(bias_relu_grad(s, x), 0); }, away));
  cases.push_back(Case("BiasAddReluGrad", "bias_backprops [3,4]", relu_grad_in,
                       [=](const Scope& s, V x) { return Output(bias_relu_grad(s, x), 1); }, away));
  cases.push_back(Case("BiasAddReluGrad", "both [3,4]", relu_grad_in,
                       [=](const Scope& s, V x) {
                         Node* g = bias_relu_grad(s, x);
                         return BiasAdd(s, Output(g, 0), Output(g, 1));
                       },
                       away));
  cases.push_back(Case("Softmax", "[2,5]", {{kFloat64, {2, 5}}}, [](const Scope& s, V x) { return Softmax(s, x[0]); }));
  cases.push_back(Case("Softmax", "[2,2,3]", {{kFloat64, {2, 2, 3}}}, [](const Scope& s, V x) { return Softmax(s, x[0]); }));

  // Dense labels: each row a probability distribution.
  const std::vector<In> xent_in = {{kFloat64, {3, 4}}, {kFloat64, {3, 4}, false}};
  auto labels = With(xent_in, 1, [](std::mt19937_64& rng) {
    Tensor t = Uniform({3, 4}, 0.1, 1.0, rng);
    double* p = t.data<double>();
    for (int r = 0; r < 3; ++r) {
      double sum = 0;
      for (int j = 0; j < 4; ++j) sum += p[r * 4 + j];
      for (int j = 0; j < 4; ++j) p[r * 4 + j] /= sum;
    }
    return t;
  });
  cases.push_back(Case("SoftmaxCrossEntropyWithLogits", "loss [3,4]", xent_in,
                       [](const Scope& s, V x) { return SoftmaxCrossEntropyWithLogits(s, x[0], x[1]).loss; }, labels));
  cases.push_back(Case("SoftmaxCrossEntropyWithLogits", "backprop [3,4]", xent_in,
                       [](const Scope& s, V x) { return SoftmaxCrossEntropyWithLogits(s, x[0], x[1]).backprop; }, labels));
  const std::vector<In> sparse_in = {{kFloat64, {3, 5}}, {kInt32, {3}, false}};
  auto classes = [](int i, std::mt19937_64& rng) {
    if (i == 0) return Uniform({3, 5}, -1, 1, rng);
    std::uniform_int_distribution<int32_t> u(0, 4);
    return Tensor::Vec<int32_t>({u(rng), u(rng), u(rng)});
  };
  cases.push_back(Case("SparseSoftmaxCrossEntropyWithLogits", "loss [3,5]", sparse_in,
                       [](const Scope& s, V x) { return SparseSoftmaxCrossEntropyWithLogits(s, x[0], x[1]).loss; }, classes));
  cases.push_back(Case("SparseSoftmaxCrossEntropyWithLogits", "backprop [3,5]", sparse_in,
                       [](const Scope& s, V x) { return SparseSoftmaxCrossEntropyWithLogits(s, x[0], x[1]).backprop; },
                       classes));
  cases.push_back(Case("SparseSoftmaxCrossEntropyMean", "loss [3,5]", sparse_in,
                       [](const Scope& s, V x) { return SparseSoftmaxCrossEntropyMean(s, x[0], x[1]).loss; }, classes));
  cases.push_back(Case("SparseSoftmaxCrossEntropyMean", "backprop [3,5]", sparse_in,
                       [](const Scope& s, V x) { return SparseSoftmaxCrossEntropyMean(s, x[0], x[1]).backprop; },
                       classes));
  cases.push_back(Case("L2Loss", "[3,4]", {{kFloat64, {3, 4}}}, [](const Scope& s, V x) { return L2Loss(s, x[0]); }));
  // The mask is redrawn every run, which finite differences cannot follow: rate 0
  // checks the wiring (d x = dy * mask); nn_kernels_test checks masks at rate > 0.
  cases.push_back(Case("Dropout", "rate 0 [3,4]", {{kFloat64, {3, 4}}},
                       [](const Scope& s, V x) { return Dropout(s, x[0], 0.0f, 7).output; }));
  AddConvChecks(cases);
  AddPoolChecks(cases);
}

}  // namespace tw
