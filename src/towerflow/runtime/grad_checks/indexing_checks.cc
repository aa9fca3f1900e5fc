// Numeric gradient checks of the gather and layout ops: Gather along the
// first, a middle and the last axis with repeated indices (their gradients
// add), UnsortedSegmentSum with a dropped (negative) id, Select by rows and
// by elements, SelectV2 with every input broadcast, Transpose, Tile, Pad / PadV2,
// ReverseV2, and the resizes (ResizeBilinear's and ResizeBicubic's outputs are
// float32: they are linear in their input, so a wide step keeps float32's
// rounding under the tolerance).
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/gather_ops.h"
#include "towerflow/graph/ops/image_ops.h"
#include "towerflow/graph/ops/layout_ops.h"
#include "towerflow/runtime/gradient_checker.h"

namespace tw {
namespace {

using In = GradCheckCase::Input;
using V = const std::vector<Output>&;

GradCheckCase Case(std::string op, std::string name, std::vector<In> inputs,
                   std::function<Output(const Scope&, const std::vector<Output>&)> build) {
  GradCheckCase c;
  c.op = std::move(op);
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.build = std::move(build);
  return c;
}

Output Ints(const Scope& s, const std::vector<int32_t>& v, const TensorShape& shape) {
  return Const(s, Tensor::FromVector<int32_t>(v, shape));
}

}  // namespace

void AddIndexingGradChecks(std::vector<GradCheckCase>& cases) {
  cases.push_back(Case("GatherV2", "[5,3] rows {4,0,4,2}", {{kFloat64, {5, 3}}}, [](const Scope& s, V x) {
    return Gather(s, x[0], Ints(s, {4, 0, 4, 2}, {4}), 0);
  }));
  cases.push_back(Case("GatherV2", "[2,4,3] axis 1, indices [2,2]", {{kFloat64, {2, 4, 3}}}, [](const Scope& s, V x) {
    return Gather(s, x[0], Ints(s, {3, 1, 1, 0}, {2, 2}), 1);
  }));
  cases.push_back(Case("GatherV2", "[3,4] axis -1", {{kFloat64, {3, 4}}}, [](const Scope& s, V x) {
    return Gather(s, x[0], Ints(s, {2, 2, 0}, {3}), -1);
  }));
  cases.push_back(Case("UnsortedSegmentSum", "[4,3] ids {2,-1,0,2} into 3", {{kFloat64, {4, 3}}},
                       [](const Scope& s, V x) {
                         return UnsortedSegmentSum(s, x[0], Ints(s, {2, -1, 0, 2}, {4}), Const(s, 3));
                       }));
  cases.push_back(Case("SelectV2", "condition [2,1], t [2,3], e [3]", {{kFloat64, {2, 3}}, {kFloat64, {3}}},
                       [](const Scope& s, V x) {
                         Output c = Const(s, Tensor::FromVector<bool>({true, false}, {2, 1}));
                         return SelectV2(s, c, x[0], x[1]);
                       }));
  cases.push_back(Case("SelectV2", "condition [2,3], t scalar, e [2,3]", {{kFloat64, {}}, {kFloat64, {2, 3}}},
                       [](const Scope& s, V x) {
                         Output c = Const(s, Tensor::FromVector<bool>({true, false, true, false, false, true}, {2, 3}));
                         return SelectV2(s, c, x[0], x[1]);
                       }));
  cases.push_back(Case("Select", "condition [3] by rows, t and e [3,2]", {{kFloat64, {3, 2}}, {kFloat64, {3, 2}}},
                       [](const Scope& s, V x) {
                         return Select(s, Const(s, Tensor::Vec<bool>({true, false, true})), x[0], x[1]);
                       }));
  cases.push_back(Case("Select", "condition [2,2] by elements", {{kFloat64, {2, 2}}, {kFloat64, {2, 2}}},
                       [](const Scope& s, V x) {
                         Output c = Const(s, Tensor::FromVector<bool>({false, true, true, false}, {2, 2}));
                         return Select(s, c, x[0], x[1]);
                       }));
  cases.push_back(Case("Transpose", "[2,3,4] perm {2,0,1}", {{kFloat64, {2, 3, 4}}},
                       [](const Scope& s, V x) { return Transpose(s, x[0], std::vector<int32_t>{2, 0, 1}); }));
  cases.push_back(Case("Transpose", "[2,3,4] perm {-1,0,1}", {{kFloat64, {2, 3, 4}}},
                       [](const Scope& s, V x) { return Transpose(s, x[0], std::vector<int32_t>{-1, 0, 1}); }));
  cases.push_back(Case("ReverseV2", "[2,3,4] axes {0,-1}", {{kFloat64, {2, 3, 4}}},
                       [](const Scope& s, V x) { return Reverse(s, x[0], std::vector<int32_t>{0, -1}); }));
  cases.push_back(Case("Tile", "[2,3] x {2,3}", {{kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return Tile(s, x[0], Const(s, std::vector<int32_t>{2, 3})); }));
  cases.push_back(Case("Tile", "[3,1,2] x {1,4,2}", {{kFloat64, {3, 1, 2}}},
                       [](const Scope& s, V x) { return Tile(s, x[0], Const(s, std::vector<int32_t>{1, 4, 2})); }));
  cases.push_back(Case("Pad", "[2,3] by {{1,0},{2,1}}", {{kFloat64, {2, 3}}},
                       [](const Scope& s, V x) { return Pad(s, x[0], Ints(s, {1, 0, 2, 1}, {2, 2})); }));
  for (const ResizeOptions o : {ResizeOptions{}, ResizeOptions{true, false}, ResizeOptions{false, true}}) {
    const std::string attrs = o.align_corners ? " align_corners" : o.half_pixel_centers ? " half_pixel_centers" : "";
    GradCheckCase up = Case("ResizeBilinear", "[2,3,4,2] to [5,7]" + attrs, {{kFloat64, {2, 3, 4, 2}}},
                            [o](const Scope& s, V x) {
                              return Cast(s, ResizeBilinear(s, x[0], Const(s, std::vector<int32_t>{5, 7}), o), kFloat64);
                            });
    up.delta = 1e-2;
    up.tolerance = 1e-4;
    cases.push_back(up);
    GradCheckCase down = Case("ResizeBilinear", "[1,6,5,1] to [4,3]" + attrs, {{kFloat64, {1, 6, 5, 1}}},
                              [o](const Scope& s, V x) {
                                return Cast(s, ResizeBilinear(s, x[0], Const(s, std::vector<int32_t>{4, 3}), o),
                                            kFloat64);
                              });
    down.delta = 1e-2;
    down.tolerance = 1e-4;
    cases.push_back(down);
    GradCheckCase cubic_up = Case("ResizeBicubic", "[2,3,4,2] to [5,7]" + attrs, {{kFloat64, {2, 3, 4, 2}}},
                                  [o](const Scope& s, V x) {
                                    return Cast(s, ResizeBicubic(s, x[0], Const(s, std::vector<int32_t>{5, 7}), o),
                                                kFloat64);
                                  });
    GradCheckCase cubic_down = Case("ResizeBicubic", "[1,6,5,1] to [4,3]" + attrs, {{kFloat64, {1, 6, 5, 1}}},
                                    [o](const Scope& s, V x) {
                                      return Cast(s, ResizeBicubic(s, x[0], Const(s, std::vector<int32_t>{4, 3}), o),
                                                  kFloat64);
                                    });
    for (GradCheckCase* c : {&cubic_up, &cubic_down}) {
      c->delta = 1e-2;
      c->tolerance = 1e-4;
      cases.push_back(*c);
    }
    cases.push_back(Case("ResizeNearestNeighbor", "[2,3,4,2] to [5,7]" + attrs, {{kFloat64, {2, 3, 4, 2}}},
                         [o](const Scope& s, V x) {
                           return ResizeNearestNeighbor(s, x[0], Const(s, std::vector<int32_t>{5, 7}), o);
                         }));
    cases.push_back(Case("ResizeNearestNeighbor", "[1,6,5,1] to [4,3]" + attrs, {{kFloat64, {1, 6, 5, 1}}},
                         [o](const Scope& s, V x) {
                           return ResizeNearestNeighbor(s, x[0], Const(s, std::vector<int32_t>{4, 3}), o);
                         }));
  }
  cases.push_back(Case("PadV2", "[3] by {{2,1}} with 5", {{kFloat64, {3}}}, [](const Scope& s, V x) {
    return Pad(s, x[0], Ints(s, {2, 1}, {1, 2}), Const(s, 5.0));
  }));
}

}  // namespace tw
