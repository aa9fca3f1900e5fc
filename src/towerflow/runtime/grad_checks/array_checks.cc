// Numeric gradient checks of the array and shape ops: one case per op and per
// code path of its gradient (both concat axes, slices with -1 sizes, broadcasts
// that add along the last axis and that sum it).
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/gradient_checker.h"

namespace tw {
namespace {

using In = GradCheckCase::Input;

GradCheckCase Case(std::string op, std::string name, std::vector<In> inputs,
                   std::function<Output(const Scope&, const std::vector<Output>&)> build) {
  GradCheckCase c;
  c.op = std::move(op);
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.build = std::move(build);
  return c;
}

}  // namespace

void AddArrayGradChecks(std::vector<GradCheckCase>& cases) {
  using V = const std::vector<Output>&;
  cases.push_back(Case("Identity", "[2,3]", {{kFloat64, {2, 3}}}, [](const Scope& s, V x) { return Identity(s, x[0]); }));
  cases.push_back(Case("EnsureShape", "[2,3] as [?,3]", {{kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return EnsureShape(s, x[0], PartialShape({-1, 3})); }));
  cases.push_back(Case("Cast", "double->double [3]", {{kFloat64, {3}}},
                       [](const Scope& s, V x) { return Cast(s, x[0], kFloat64); }));
  cases.push_back(Case("Reshape", "[2,3] -> [3,-1]", {{kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return Reshape(s, x[0], std::vector<int32_t>{3, -1}); }));
  cases.push_back(Case("ExpandDims", "[2,3] axis 1", {{kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return ExpandDims(s, x[0], 1); }));
  cases.push_back(Case("ExpandDims", "[2,3] axis -1", {{kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return ExpandDims(s, x[0], -1); }));
  cases.push_back(Case("Squeeze", "[2,1,3,1] all", {{kFloat64, {2, 1, 3, 1}}},
                       [](const Scope& s, V x) { return Squeeze(s, x[0]); }));
  cases.push_back(Case("Squeeze", "[2,1,3,1] axis 1", {{kFloat64, {2, 1, 3, 1}}},
                       [](const Scope& s, V x) { return Squeeze(s, x[0], {1}); }));
  cases.push_back(Case("ConcatV2", "[2,3] [2,1] [2,2] axis 1", {{kFloat64, {2, 3}}, {kFloat64, {2, 1}}, {kFloat64, {2, 2}}},
                       [](const Scope& s, V x) { return Concat(s, x, 1); }));
  cases.push_back(Case("ConcatV2", "[1,3] [2,3] axis -2", {{kFloat64, {1, 3}}, {kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return Concat(s, x, -2); }));
  cases.push_back(Case("Slice", "[3,4,5] begin [1,0,2] size [2,-1,2]", {{kFloat64, {3, 4, 5}}},
                       [](const Scope& s, V x) { return Slice(s, x[0], {1, 0, 2}, {2, -1, 2}); }));
  cases.push_back(Case("SliceGrad", "[2,2] into [3,4] at [1,1]", {{kFloat64, {2, 2}}}, [](const Scope& s, V x) {
    return Output(NodeBuilder(s, "SliceGrad")
                      .Input(x[0])
                      .Input(Const(s, std::vector<int32_t>{1, 1}))
                      .Input(Const(s, std::vector<int32_t>{3, 4}))
                      .Finalize());
  }));
  cases.push_back(Case("Fill", "scalar -> [2,3]", {{kFloat64, {}}},
                       [](const Scope& s, V x) { return Fill(s, Const(s, std::vector<int32_t>{2, 3}), x[0]); }));
  cases.push_back(Case("BroadcastTo", "[3,1] -> [2,3,4]", {{kFloat64, {3, 1}}},
                       [](const Scope& s, V x) { return BroadcastTo(s, x[0], Const(s, std::vector<int32_t>{2, 3, 4})); }));
  cases.push_back(Case("SumToShape", "[2,3,4] -> [3,1]", {{kFloat64, {2, 3, 4}}},
                       [](const Scope& s, V x) { return SumToShape(s, x[0], Const(s, std::vector<int32_t>{3, 1})); }));
  cases.push_back(Case("SumToShape", "[2,3] -> [3]", {{kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return SumToShape(s, x[0], Const(s, std::vector<int32_t>{3})); }));
}

}  // namespace tw
