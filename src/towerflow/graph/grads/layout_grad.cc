// Gradients of the ops that rearrange or repeat elements
// (graph/ops/layout_ops.cc). Permutations, multiples, paddings and Range's
// arguments are integers and get no gradient (nor does PadV2's constant, nor
// ReverseV2's axes).
#include "towerflow/graph/grads/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/layout_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/partial_value.h"

namespace tw {
namespace {

using Grads = std::vector<Output>;

Output AsInt32(const Scope& s, const Output& x) { return x.dtype() == kInt32 ? x : Cast(s, x, kInt32); }

// y = transpose(x, perm): d x = transpose(dy, inverse of perm). A perm known
// when the graph is built (the usual case) is inverted then, its negative
// entries counted from the end as Transpose counts them; InvertPermutation
// inverts one computed at run time.
Status TransposeGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const std::optional<PartialVector> known = internal::PartialOf(op.input(1));
  const int64_t rank = known ? static_cast<int64_t>(known->size()) : -1;
  std::vector<int32_t> inverse(known ? known->size() : 0, -1);
  bool constant = known.has_value();
  for (size_t i = 0; constant && i < inverse.size(); ++i) {
    const std::optional<int64_t>& p = (*known)[i];
    const int64_t a = p && *p < 0 ? *p + rank : p.value_or(-1);
    if (!p || a < 0 || a >= rank || inverse[static_cast<size_t>(a)] >= 0) {
      constant = false;  // left to InvertPermutation's run-time checks
    } else {
      inverse[static_cast<size_t>(a)] = static_cast<int32_t>(i);
    }
  }
  (*dx)[0] = Transpose(s, dy[0], constant ? Const(s, inverse) : InvertPermutation(s, op.input(1)));
  return s.status();
}

// y = tile(x, multiples): dy viewed as [m0, d0, m1, d1, ...], summed over the
// multiples' axes.
Status TileGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output dims = Shape(s, op.input(0));
  const Output multiples = AsInt32(s, op.input(1));
  const Output pairs = Concat(s, {ExpandDims(s, multiples, 0), ExpandDims(s, dims, 0)}, 0);  // [2, rank]
  const Output twice_rank = Mul(s, Shape(s, dims), Const(s, 2));                         // [2 * rank]
  const Output split = Reshape(s, Transpose(s, pairs, std::vector<int32_t>{1, 0}), twice_rank);
  const Output axes = Range(s, Const(s, 0), Reshape(s, twice_rank, std::vector<int32_t>{}), Const(s, 2));
  (*dx)[0] = Reshape(s, SumOverAxes(s, Reshape(s, dy[0], split), axes), dims);
  return s.status();
}

// y = pad(x, paddings): d x is the box of dy where x landed.
Status PadGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = op.input(0);
  const Output before = Slice(s, AsInt32(s, op.input(1)), std::vector<int32_t>{0, 0}, {-1, 1});
  (*dx)[0] = Slice(s, dy[0], Reshape(s, before, Shape(s, Shape(s, x))), Shape(s, x));
  return s.status();
}

// y = reverse(x, axis): d x = reverse(dy, axis), the same permutation undone.
Status ReverseGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  (*dx)[0] = Reverse(s, dy[0], op.input(1));
  return s.status();
}

}  // namespace

void RegisterLayoutGradients(GradientRegistry& r) {
  r.Register("Transpose", TransposeGrad);
  r.Register("Tile", TileGrad);
  r.Register("Pad", PadGrad);
  r.Register("PadV2", PadGrad);
  r.Register("ReverseV2", ReverseGrad);
  for (const char* op : {"InvertPermutation", "Range"}) r.RegisterNoGradient(op);
}

}  // namespace tw
