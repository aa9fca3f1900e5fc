// Gradients of the ops that pick and place elements (graph/ops/gather_ops.cc).
// Index, depth and condition inputs are not differentiable; OneHot and
// InTopKV2 have no gradient (TF's NotDifferentiable).
#include "towerflow/graph/grads/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/gather_ops.h"
#include "towerflow/graph/ops/layout_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/partial_value.h"

namespace tw {
namespace {

using Grads = std::vector<Output>;

// y = gather(params, indices, axis): d params sums dy's slices into the rows
// they were taken from, UnsortedSegmentSum over the flattened indices. Along
// axis a > 0, the gathered axis is moved to the front and back.
Status GatherV2Grad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output params = op.input(0);
  const std::optional<PartialVector> axis_v = internal::PartialOf(op.input(2));
  if (!axis_v || axis_v->size() != 1 || !(*axis_v)[0]) {
    return errors::Unimplemented("the gradient of ", op.DebugName(), " needs a constant axis");
  }
  int64_t axis = *(*axis_v)[0];
  const PartialShape& ps = params.shape();
  if (axis < 0 && !ps.known_rank()) {
    return errors::Unimplemented("the gradient of ", op.DebugName(), " along axis ", axis,
                                 " needs the rank of params ", params.name(), ", whose shape is unknown");
  }
  if (axis < 0) axis += ps.rank();
  const int32_t a = static_cast<int32_t>(axis);
  const Output shape = Shape(s, params);
  const Output ids = Reshape(s, op.input(1), std::vector<int32_t>{-1});
  const Output m = Shape(s, ids);  // [number of indices]
  const Output n = Reshape(s, Slice(s, shape, std::vector<int32_t>{a}, {1}), std::vector<int32_t>{});
  const Output inner = Slice(s, shape, std::vector<int32_t>{a + 1}, {-1});
  if (axis == 0) {
    // dy: indices.shape + params.shape[1:] -> [m] + params.shape[1:].
    const Output values = Reshape(s, dy[0], Concat(s, {m, inner}, 0));
    (*dx)[0] = UnsortedSegmentSum(s, values, ids, n);
    return s.status();
  }
  // dy: params.shape[:a] + indices.shape + params.shape[a+1:] -> the same with
  // [m] for the indices, the gathered axis moved to the front and back.
  const Output outer = Slice(s, shape, std::vector<int32_t>{0}, {a});
  const Output values = Reshape(s, dy[0], Concat(s, {outer, m, inner}, 0));
  Output perm, inverse;
  if (ps.known_rank()) {
    std::vector<int32_t> p = {a};
    for (int32_t i = 0; i < ps.rank(); ++i) {
      if (i != a) p.push_back(i);
    }
    std::vector<int32_t> inv(p.size());
    for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(p[i])] = static_cast<int32_t>(i);
    perm = Const(s, p);
    inverse = Const(s, inv);
  } else {
    // [a, 0, ..., a-1, a+1, ..., rank-1] at run time.
    const Output rank = Reshape(s, Shape(s, shape), std::vector<int32_t>{});
    perm = Concat(s, {Const(s, std::vector<int32_t>{a}), Range(s, Const(s, 0), Const(s, a), Const(s, 1)),
                      Range(s, Const(s, a + 1), rank, Const(s, 1))},
                  0);
    inverse = InvertPermutation(s, perm);
  }
  const Output sums = UnsortedSegmentSum(s, Transpose(s, values, perm), ids, n);
  (*dx)[0] = Transpose(s, sums, inverse);
  return s.status();
}

// y = unsorted_segment_sum(data, ids, n): d data is dy's row of each id (zero
// where the id is negative: that slice was dropped).
Status UnsortedSegmentSumGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output ids = op.input(1);
  const Output zero = ZerosLike(s, ids);
  const Output rows = Gather(s, dy[0], Maximum(s, ids, zero), 0);
  // kept, of ids' shape, gets a 1 for each axis of the slices after it; a
  // selection, not a product, so that an infinite dy of a dropped row gives 0.
  const Output kept = GreaterEqual(s, ids, zero);
  const Output extra = Sub(s, Shape(s, Shape(s, rows)), Shape(s, Shape(s, ids)));
  const Output mask_shape = Concat(s, {Shape(s, ids), Fill(s, extra, Const(s, 1))}, 0);
  (*dx)[0] = SelectV2(s, Reshape(s, kept, mask_shape), rows, ZerosLike(s, rows));
  return s.status();
}

// y = condition ? t : e (broadcast): dy goes to t where condition holds and
// to e elsewhere, each summed back to its input's shape.
Status SelectV2Grad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output c = op.input(0);
  const Output zeros = ZerosLike(s, dy[0]);
  (*dx)[1] = SumToShape(s, SelectV2(s, c, dy[0], zeros), Shape(s, op.input(1)));
  (*dx)[2] = SumToShape(s, SelectV2(s, c, zeros, dy[0]), Shape(s, op.input(2)));
  return s.status();
}

// TF1's Select: t and e have the output's shape, so nothing is summed.
Status SelectGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output c = op.input(0);
  const Output zeros = ZerosLike(s, dy[0]);
  (*dx)[1] = Select(s, c, dy[0], zeros);
  (*dx)[2] = Select(s, c, zeros, dy[0]);
  return s.status();
}

}  // namespace

void RegisterGatherGradients(GradientRegistry& r) {
  r.Register("Select", SelectGrad);
  r.Register("GatherV2", GatherV2Grad);
  r.Register("UnsortedSegmentSum", UnsortedSegmentSumGrad);
  r.Register("SelectV2", SelectV2Grad);
  for (const char* op : {"OneHot", "InTopKV2"}) r.RegisterNoGradient(op);
}

}  // namespace tw
