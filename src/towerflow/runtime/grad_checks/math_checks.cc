// Numeric gradient checks of the math ops: broadcasting shapes for the binary
// ops, every MatMul transpose combination, and reductions over one axis, every
// axis and with keep_dims. Max and Maximum draw distinct values (no ties, no
// kinks within the finite-difference step); Sqrt, Log and Div's divisor stay
// away from 0.
#include <algorithm>

#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/gradient_checker.h"

namespace tw {
namespace {

using Builder = std::function<Output(const Scope&, const std::vector<Output>&)>;
using Shapes = std::vector<TensorShape>;

GradCheckCase Case(std::string op, std::string name, const Shapes& shapes, Builder build) {
  GradCheckCase c;
  c.op = std::move(op);
  c.name = std::move(name);
  for (const TensorShape& s : shapes) c.inputs.push_back({kFloat64, s, true});
  c.build = std::move(build);
  return c;
}

Builder BinaryFn(Output (*fn)(const Scope&, const Output&, const Output&)) {
  return [fn](const Scope& s, const std::vector<Output>& in) { return fn(s, in[0], in[1]); };
}
Builder UnaryFn(Output (*fn)(const Scope&, const Output&)) {
  return [fn](const Scope& s, const std::vector<Output>& in) { return fn(s, in[0]); };
}

// Distinct values 0.1 apart, shuffled; input i is offset by 0.03 * i so no
// value of one input equals (or comes within 0.03 of) a value of another.
Tensor DistinctValues(const TensorShape& shape, int i, std::mt19937_64& rng) {
  std::vector<double> v(static_cast<size_t>(shape.num_elements()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = -1.0 + 0.1 * static_cast<double>(k) + 0.03 * i;
  std::shuffle(v.begin(), v.end(), rng);
  return Tensor::FromVector<double>(v, shape);
}

// Uniform in [lo, hi].
Tensor UniformValues(const TensorShape& shape, double lo, double hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape.num_elements()));
  for (double& x : v) x = dist(rng);
  return Tensor::FromVector<double>(v, shape);
}

GradCheckCase Distinct(GradCheckCase c) {
  Shapes shapes;
  for (const auto& in : c.inputs) shapes.push_back(in.shape);
  c.make_input = [shapes](int i, std::mt19937_64& rng) {
    return DistinctValues(shapes[static_cast<size_t>(i)], i, rng);
  };
  return c;
}

// Inputs in [0.5, 2]: away from the poles of 1/x, log x and sqrt x.
GradCheckCase Positive(GradCheckCase c) {
  Shapes shapes;
  for (const auto& in : c.inputs) shapes.push_back(in.shape);
  c.make_input = [shapes](int i, std::mt19937_64& rng) {
    return UniformValues(shapes[static_cast<size_t>(i)], 0.5, 2.0, rng);
  };
  return c;
}

// Input 0 in [-1, 1], input 1 (the divisor) in [0.5, 2].
GradCheckCase PositiveDivisor(GradCheckCase c) {
  Shapes shapes;
  for (const auto& in : c.inputs) shapes.push_back(in.shape);
  c.make_input = [shapes](int i, std::mt19937_64& rng) {
    const TensorShape& s = shapes[static_cast<size_t>(i)];
    return i == 1 ? UniformValues(s, 0.5, 2.0, rng) : UniformValues(s, -1.0, 1.0, rng);
  };
  return c;
}

// Input 0 in [1.15, 1.35], input 1 in [0.5, 0.55]: x / y in [2.09, 2.7], so
// floor(x / y) = 2 everywhere near the point and FloorMod is smooth there, with
// a gradient of -2 dz for y.
GradCheckCase AwayFromSteps(GradCheckCase c) {
  Shapes shapes;
  for (const auto& in : c.inputs) shapes.push_back(in.shape);
  c.make_input = [shapes](int i, std::mt19937_64& rng) {
    const TensorShape& s = shapes[static_cast<size_t>(i)];
    return i == 1 ? UniformValues(s, 0.5, 0.55, rng) : UniformValues(s, 1.15, 1.35, rng);
  };
  return c;
}

Builder ReduceFn(Output (*fn)(const Scope&, const Output&, const std::vector<int32_t>&, bool),
                 std::vector<int32_t> axes, bool keep_dims) {
  return [fn, axes, keep_dims](const Scope& s, const std::vector<Output>& in) {
    return fn(s, in[0], axes, keep_dims);
  };
}

void AddReductionChecks(std::vector<GradCheckCase>& cases, const std::string& op,
                        Output (*fn)(const Scope&, const Output&, const std::vector<int32_t>&, bool),
                        bool distinct) {
  auto add = [&](std::string name, TensorShape shape, std::vector<int32_t> axes, bool keep) {
    GradCheckCase c = Case(op, std::move(name), {shape}, ReduceFn(fn, std::move(axes), keep));
    cases.push_back(distinct ? Distinct(std::move(c)) : std::move(c));
  };
  add("[3,4] axis 0", {3, 4}, {0}, false);
  add("[3,4] axis 1", {3, 4}, {1}, false);
  add("[3,4] axis -1 keep_dims", {3, 4}, {-1}, true);
  add("[2,3,4] axis 1", {2, 3, 4}, {1}, false);
  add("[2,3,4] axes 0,2 keep_dims", {2, 3, 4}, {0, 2}, true);
  add("[2,3] all axes", {2, 3}, {}, false);
  add("[2,3] all axes keep_dims", {2, 3}, {}, true);
}

}  // namespace

void AddMathGradChecks(std::vector<GradCheckCase>& cases) {
  cases.push_back(Case("Add", "same shape [2,3]", {{2, 3}, {2, 3}}, BinaryFn(Add)));
  cases.push_back(Case("Add", "broadcast [3,4] + [4]", {{3, 4}, {4}}, BinaryFn(Add)));
  cases.push_back(Case("Add", "broadcast scalar + [2,3]", {{}, {2, 3}}, BinaryFn(Add)));
  cases.push_back(Case("Sub", "broadcast [3,1] - [1,4]", {{3, 1}, {1, 4}}, BinaryFn(Sub)));
  cases.push_back(Case("Sub", "broadcast [4] - [3,4]", {{4}, {3, 4}}, BinaryFn(Sub)));
  cases.push_back(Case("Mul", "same shape [2,3]", {{2, 3}, {2, 3}}, BinaryFn(Mul)));
  cases.push_back(Case("Mul", "broadcast [3,1] * [1,4]", {{3, 1}, {1, 4}}, BinaryFn(Mul)));
  cases.push_back(Case("Mul", "broadcast [2,3] * scalar", {{2, 3}, {}}, BinaryFn(Mul)));
  cases.push_back(Case("Mul", "broadcast [2,1,3] * [4,1]", {{2, 1, 3}, {4, 1}}, BinaryFn(Mul)));
  cases.push_back(PositiveDivisor(Case("Div", "same shape [2,3]", {{2, 3}, {2, 3}}, BinaryFn(Div))));
  cases.push_back(PositiveDivisor(Case("Div", "broadcast [3,4] / [4]", {{3, 4}, {4}}, BinaryFn(Div))));
  cases.push_back(PositiveDivisor(Case("Div", "broadcast [4] / [3,1]", {{4}, {3, 1}}, BinaryFn(Div))));
  cases.push_back(Distinct(Case("Maximum", "same shape [2,3]", {{2, 3}, {2, 3}}, BinaryFn(Maximum))));
  cases.push_back(Distinct(Case("Maximum", "broadcast [3,4] and [4]", {{3, 4}, {4}}, BinaryFn(Maximum))));
  cases.push_back(Distinct(Case("Maximum", "broadcast scalar and [2,3]", {{}, {2, 3}}, BinaryFn(Maximum))));
  cases.push_back(Positive(Case("Pow", "same shape [2,3]", {{2, 3}, {2, 3}}, BinaryFn(Pow))));
  cases.push_back(Positive(Case("Pow", "broadcast [3,4] ^ [4]", {{3, 4}, {4}}, BinaryFn(Pow))));
  cases.push_back(Positive(Case("Pow", "broadcast scalar ^ [2,3]", {{}, {2, 3}}, BinaryFn(Pow))));
  cases.push_back(AwayFromSteps(Case("FloorMod", "same shape [2,3]", {{2, 3}, {2, 3}}, BinaryFn(FloorMod))));
  cases.push_back(AwayFromSteps(Case("FloorMod", "broadcast [3,4] % [4]", {{3, 4}, {4}}, BinaryFn(FloorMod))));

  auto bmm = [](bool adj_x, bool adj_y) -> Builder {
    return [=](const Scope& s, const std::vector<Output>& in) { return BatchMatMul(s, in[0], in[1], adj_x, adj_y); };
  };
  cases.push_back(Case("BatchMatMulV2", "[2,3,4] x [2,4,5]", {{2, 3, 4}, {2, 4, 5}}, bmm(false, false)));
  cases.push_back(Case("BatchMatMulV2", "adj_x [2,4,3] x [2,4,5]", {{2, 4, 3}, {2, 4, 5}}, bmm(true, false)));
  cases.push_back(Case("BatchMatMulV2", "adj_y [2,3,4] x [2,5,4]", {{2, 3, 4}, {2, 5, 4}}, bmm(false, true)));
  cases.push_back(Case("BatchMatMulV2", "adj both [2,4,3] x [2,5,4]", {{2, 4, 3}, {2, 5, 4}}, bmm(true, true)));
  cases.push_back(Case("BatchMatMulV2", "broadcast [2,1,3,4] x [3,4,2]", {{2, 1, 3, 4}, {3, 4, 2}}, bmm(false, false)));
  cases.push_back(Case("BatchMatMulV2", "matrix [3,4] x batch [2,4,5]", {{3, 4}, {2, 4, 5}}, bmm(false, false)));

  cases.push_back(Case("Neg", "[2,3]", {{2, 3}}, UnaryFn(Neg)));
  cases.push_back(Case("Square", "[2,3]", {{2, 3}}, UnaryFn(Square)));
  cases.push_back(Positive(Case("Sqrt", "[2,3] in [0.5,2]", {{2, 3}}, UnaryFn(Sqrt))));
  cases.push_back(Case("Exp", "[2,3]", {{2, 3}}, UnaryFn(Exp)));
  cases.push_back(Positive(Case("Log", "[2,3] in [0.5,2]", {{2, 3}}, UnaryFn(Log))));
  cases.push_back(Positive(Case("Log1p", "[2,3] in [0.5,2]", {{2, 3}}, UnaryFn(Log1p))));
  cases.push_back(Case("Sigmoid", "[2,3]", {{2, 3}}, UnaryFn(Sigmoid)));
  cases.push_back(Case("Tanh", "[2,3]", {{2, 3}}, UnaryFn(Tanh)));
  cases.push_back(Case("AddN", "3 inputs [2,3]", {{2, 3}, {2, 3}, {2, 3}},
                       [](const Scope& s, const std::vector<Output>& in) { return AddN(s, in); }));

  auto matmul = [](bool ta, bool tb) -> Builder {
    return [ta, tb](const Scope& s, const std::vector<Output>& in) {
      return MatMul(s, in[0], in[1], {ta, tb});
    };
  };
  cases.push_back(Case("MatMul", "[2,3] x [3,4]", {{2, 3}, {3, 4}}, matmul(false, false)));
  cases.push_back(Case("MatMul", "[3,2]^T x [3,4]", {{3, 2}, {3, 4}}, matmul(true, false)));
  cases.push_back(Case("MatMul", "[2,3] x [4,3]^T", {{2, 3}, {4, 3}}, matmul(false, true)));
  cases.push_back(Case("MatMul", "[3,2]^T x [4,3]^T", {{3, 2}, {4, 3}}, matmul(true, true)));

  AddReductionChecks(cases, "Sum", Sum, /*distinct=*/false);
  AddReductionChecks(cases, "Mean", Mean, /*distinct=*/false);
  AddReductionChecks(cases, "Max", Max, /*distinct=*/true);
}

}  // namespace tw
