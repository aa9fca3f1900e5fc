// Gradients of the math ops. Broadcasting binary ops sum their gradient back to
// each input's shape (SumToShape), except where the static shapes prove that an
// input was not expanded; that skip keeps the MLP's backward pass free of no-op
// reductions ([?,256] + [256]: the left input's gradient is dz itself).
#include <limits>
#include <string>
#include <vector>

#include "towerflow/graph/grads/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"

namespace tw {
namespace {

using Grads = std::vector<Output>;

Output OutputOf(const Node& op, int i = 0) { return Output(const_cast<Node*>(&op), i); }

// True when broadcasting x against `other` can never expand x: x has at least
// other's rank and, on every aligned dimension, other's size is 1 or x's size is
// known and not 1.
bool NeverExpanded(const PartialShape& x, const PartialShape& other) {
  if (!x.known_rank() || !other.known_rank() || x.rank() < other.rank()) return false;
  for (int i = 0; i < other.rank(); ++i) {
    const int64_t dx = x.dim(x.rank() - other.rank() + i);
    const int64_t dother = other.dim(i);
    if (dother != 1 && (dx < 0 || dx == 1)) return false;
  }
  return true;
}

// x's shape as an int32 vector: a constant when fully known.
Output ShapeOf(const Scope& s, const Output& x) {
  const PartialShape& p = x.shape();
  if (!p.IsFullyDefined()) return Shape(s, x);
  std::vector<int32_t> dims(p.dims().begin(), p.dims().end());
  return Const(s, dims);
}

// The gradient of a broadcast input: grad summed over the axes along which x
// was expanded to the output's shape.
Output ReduceTo(const Scope& s, const Output& grad, const Output& x, const Output& other) {
  if (NeverExpanded(x.shape(), other.shape())) return grad;
  return SumToShape(s, grad, ShapeOf(s, x));
}

// What a reduction node reduced: its input's rank must be known and its
// reduction_indices a constant. reduced[i] marks axis i.
StatusOr<std::vector<bool>> ReducedAxes(const Node& op) {
  const PartialShape& in = op.input(0).shape();
  const Node* axes = op.input(1).node;
  if (!in.known_rank()) {
    return errors::Unimplemented("the gradient of ", op.DebugName(), " needs the rank of its input ",
                                 op.input(0).name(), ", whose shape is unknown");
  }
  const AttrValue* v = axes->op() == "Const" ? axes->attrs().Find("value") : nullptr;
  const Tensor* t = v ? std::get_if<Tensor>(v) : nullptr;
  if (t == nullptr) {
    return errors::Unimplemented("the gradient of ", op.DebugName(),
                                 " needs constant reduction_indices, but they come from ",
                                 axes->DebugName());
  }
  std::vector<bool> reduced(static_cast<size_t>(in.rank()), false);
  for (int64_t k = 0; k < t->NumElements(); ++k) {
    int64_t a = t->data<int32_t>()[k];
    if (a < 0) a += in.rank();
    if (a >= 0 && a < in.rank()) reduced[static_cast<size_t>(a)] = true;
  }
  return reduced;
}

// x's shape with the reduced axes set to 1 (the keep_dims shape), for Reshape:
// a constant with at most one -1 when that determines it, else computed at run
// time as shape(x) * kept + reduced.
Output KeepDimsShape(const Scope& s, const Output& x, const std::vector<bool>& reduced) {
  std::vector<int32_t> dims, kept, red;
  int unknown = 0;
  bool zero = false;
  for (size_t i = 0; i < reduced.size(); ++i) {
    const int64_t d = reduced[i] ? 1 : x.shape().dim(static_cast<int>(i));
    unknown += d < 0;
    zero |= d == 0;
    dims.push_back(static_cast<int32_t>(d));
    kept.push_back(reduced[i] ? 0 : 1);
    red.push_back(reduced[i] ? 1 : 0);
  }
  // One -1 is inferred by Reshape, unless another dimension is 0.
  if (unknown == 0 || (unknown == 1 && !zero)) return Const(s, dims);
  return Add(s, Mul(s, Shape(s, x), Const(s, kept)), Const(s, red));
}

// The number of input elements per output element of a reduction, as a scalar
// of `dtype`: a constant when the reduced dimensions are known.
Output ReducedCount(const Scope& s, const Output& x, const std::vector<bool>& reduced, DataType dtype) {
  int64_t known = 1;
  Output dynamic;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) continue;
    const int64_t d = x.shape().dim(static_cast<int>(i));
    if (d >= 0) {
      known *= d;
      continue;
    }
    const int32_t axis = static_cast<int32_t>(i);
    Output di = Slice(s, Shape(s, x), std::vector<int32_t>{axis}, std::vector<int32_t>{1});
    dynamic = dynamic.valid() ? Mul(s, dynamic, di) : di;
  }
  if (!dynamic.valid()) return ScalarLike(s, static_cast<double>(known), dtype);
  Output count = Cast(s, Reshape(s, dynamic, std::vector<int32_t>{}), dtype);
  return known == 1 ? count : Mul(s, count, ScalarLike(s, static_cast<double>(known), dtype));
}

// Sum, Mean and Max share the shape work; `kind` picks the calculus.
enum class Reduction { kSum, kMean, kMax };

Status ReductionGrad(Reduction kind, const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output x = op.input(0);
  TW_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedAxes(op));
  TW_ASSIGN_OR_RETURN(bool keep_dims, op.attrs().Get<bool>("keep_dims"));
  std::vector<int32_t> axes;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (reduced[i]) axes.push_back(static_cast<int32_t>(i));
  }
  if (axes.empty()) {  // nothing reduced: the op was the identity
    (*dx)[0] = dy[0];
    return Status::OK();
  }
  Output shape;  // computed once, shared by the Reshapes below
  auto keep = [&](const Output& t) {
    if (keep_dims) return t;
    if (!shape.valid()) shape = KeepDimsShape(s, x, reduced);
    return Reshape(s, t, shape);
  };
  switch (kind) {
    case Reduction::kSum:
      // d sum(x)/dx_i = 1: dz broadcast back over the reduced axes.
      (*dx)[0] = BroadcastTo(s, keep(dy[0]), ShapeOf(s, x));
      break;
    case Reduction::kMean:
      // d mean(x)/dx_i = 1/count: divide the (smaller) dz first, then broadcast.
      (*dx)[0] = BroadcastTo(s, keep(Div(s, dy[0], ReducedCount(s, x, reduced, x.dtype()))), ShapeOf(s, x));
      break;
    case Reduction::kMax: {
      // d max(x)/dx_i = 1 where x_i is the max, shared equally among ties:
      // mask = (x == y) over the count of maxima per output element.
      Output mask = Cast(s, Equal(s, x, keep(OutputOf(op))), x.dtype());
      Output ties = Sum(s, mask, axes, /*keep_dims=*/true);
      (*dx)[0] = Mul(s, mask, Div(s, keep(dy[0]), ties));
      break;
    }
  }
  return Status::OK();
}

}  // namespace

void RegisterMathGradients(GradientRegistry& r) {
  // z = x + y: dx = dz, dy = dz, each summed to its input's shape.
  r.Register("Add", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), y = op.input(1);
    (*dx)[0] = ReduceTo(s, dy[0], x, y);
    (*dx)[1] = ReduceTo(s, dy[0], y, x);
    return Status::OK();
  });
  // z = x - y: dx = dz, dy = -dz.
  r.Register("Sub", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), y = op.input(1);
    (*dx)[0] = ReduceTo(s, dy[0], x, y);
    (*dx)[1] = ReduceTo(s, Neg(s, dy[0]), y, x);
    return Status::OK();
  });
  // z = x * y: dx = dz * y, dy = dz * x.
  r.Register("Mul", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), y = op.input(1);
    (*dx)[0] = ReduceTo(s, Mul(s, dy[0], y), x, y);
    (*dx)[1] = ReduceTo(s, Mul(s, x, dy[0]), y, x);
    return Status::OK();
  });
  // z = x / y: dx = dz / y, dy = -dz * x / y^2 = -dz * z / y (reusing z).
  r.Register("Div", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), y = op.input(1);
    (*dx)[0] = ReduceTo(s, Div(s, dy[0], y), x, y);
    (*dx)[1] = ReduceTo(s, Mul(s, Neg(s, dy[0]), Div(s, OutputOf(op), y)), y, x);
    return Status::OK();
  });
  // z = max(x, y): dz goes to the larger input, to x on ties (mask = x >= y).
  r.Register("Maximum", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), y = op.input(1);
    Output to_x = Mul(s, dy[0], Cast(s, GreaterEqual(s, x, y), x.dtype()));
    (*dx)[0] = ReduceTo(s, to_x, x, y);
    (*dx)[1] = ReduceTo(s, Sub(s, dy[0], to_x), y, x);
    return Status::OK();
  });
  // d(-x)/dx = -1.
  // TF's: dx = dz * y * x^(y - 1); dy = dz * z * log(x) where x > 0, else 0
  // (no false infinity from log(0) where the power's slope is finite). The
  // mask is a product, from ops every device has (a GPU has no Select): log
  // of max(x, the least normal value), which is log(x) for every normal x > 0
  // (a subnormal one, which flush-to-zero may read as 0, gets the least
  // normal's log) and finite elsewhere, times 1 where x > 0 and 0 elsewhere.
  r.Register("Pow", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), y = op.input(1);
    const DataType t = x.dtype();
    const Output one = ScalarLike(s, 1.0, t);
    (*dx)[0] = ReduceTo(s, Mul(s, Mul(s, dy[0], y), Pow(s, x, Sub(s, y, one))), x, y);
    const double least = t == kFloat32 ? static_cast<double>(std::numeric_limits<float>::min())
                                       : std::numeric_limits<double>::min();
    const Output positive = Sub(s, one, Cast(s, GreaterEqual(s, ZerosLike(s, x), x), t));
    const Output log_x = Mul(s, Log(s, Maximum(s, x, ScalarLike(s, least, t))), positive);
    (*dx)[1] = ReduceTo(s, Mul(s, Mul(s, dy[0], OutputOf(op)), log_x), y, x);
    return Status::OK();
  });
  // TF's: x % y = x - floor(x / y) * y, so dx = dz and dy = -dz * floor(x / y).
  r.Register("FloorMod", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), y = op.input(1);
    (*dx)[0] = ReduceTo(s, dy[0], x, y);
    (*dx)[1] = ReduceTo(s, Mul(s, dy[0], Neg(s, FloorDiv(s, x, y))), y, x);
    return Status::OK();
  });
  r.Register("Neg", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = Neg(s, dy[0]);
    return Status::OK();
  });
  // d x^2/dx = 2x.
  r.Register("Square", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0);
    (*dx)[0] = Mul(s, dy[0], Mul(s, ScalarLike(s, 2.0, x.dtype()), x));
    return Status::OK();
  });
  // d sqrt(x)/dx = 1 / (2 sqrt(x)) = 0.5 / y, reusing y.
  r.Register("Sqrt", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output y = OutputOf(op);
    (*dx)[0] = Div(s, Mul(s, dy[0], ScalarLike(s, 0.5, y.dtype())), y);
    return Status::OK();
  });
  // d e^x/dx = e^x = y, reusing y.
  r.Register("Exp", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = Mul(s, dy[0], OutputOf(op));
    return Status::OK();
  });
  // d log(x)/dx = 1 / x.
  r.Register("Log", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = Div(s, dy[0], op.input(0));
    return Status::OK();
  });
  // d log(1 + x)/dx = 1 / (1 + x).
  r.Register("Log1p", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0);
    (*dx)[0] = Div(s, dy[0], Add(s, x, ScalarLike(s, 1.0, x.dtype())));
    return Status::OK();
  });
  // d sigmoid(x)/dx = y (1 - y), reusing y.
  r.Register("Sigmoid", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output y = OutputOf(op);
    (*dx)[0] = Mul(s, dy[0], Mul(s, y, Sub(s, ScalarLike(s, 1.0, y.dtype()), y)));
    return Status::OK();
  });
  // d tanh(x)/dx = 1 - y^2, reusing y.
  r.Register("Tanh", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output y = OutputOf(op);
    (*dx)[0] = Mul(s, dy[0], Sub(s, ScalarLike(s, 1.0, y.dtype()), Square(s, y)));
    return Status::OK();
  });
  // d (x_0 + ... + x_{N-1})/dx_i = 1: every input gets dz.
  r.Register("AddN", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    for (auto& g : *dx) g = dy[0];
    return Status::OK();
  });
  // z = op(a) op(b) with op = transpose or not; dz has z's shape [M,N]:
  //   z = a b:       da = dz b^T,    db = a^T dz
  //   z = a^T b:     da = b dz^T,    db = a dz
  //   z = a b^T:     da = dz b,      db = dz^T a
  //   z = a^T b^T:   da = b^T dz^T,  db = dz^T a^T
  r.Register("MatMul", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    TW_ASSIGN_OR_RETURN(bool ta, op.attrs().Get<bool>("transpose_a"));
    TW_ASSIGN_OR_RETURN(bool tb, op.attrs().Get<bool>("transpose_b"));
    const Output a = op.input(0), b = op.input(1), dz = dy[0];
    if (!ta && !tb) {
      (*dx)[0] = MatMul(s, dz, b, {false, true});
      (*dx)[1] = MatMul(s, a, dz, {true, false});
    } else if (ta && !tb) {
      (*dx)[0] = MatMul(s, b, dz, {false, true});
      (*dx)[1] = MatMul(s, a, dz, {false, false});
    } else if (!ta && tb) {
      (*dx)[0] = MatMul(s, dz, b, {false, false});
      (*dx)[1] = MatMul(s, dz, a, {true, false});
    } else {
      (*dx)[0] = MatMul(s, b, dz, {true, true});
      (*dx)[1] = MatMul(s, dz, a, {true, true});
    }
    return Status::OK();
  });
  // As MatMul's per matrix (adj for transpose), then summed over the batch
  // dimensions along which each operand was broadcast.
  r.Register("BatchMatMulV2", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    TW_ASSIGN_OR_RETURN(bool adj_x, op.attrs().Get<bool>("adj_x"));
    TW_ASSIGN_OR_RETURN(bool adj_y, op.attrs().Get<bool>("adj_y"));
    const Output x = op.input(0), y = op.input(1), dz = dy[0];
    Output gx, gy;
    if (!adj_x && !adj_y) {
      gx = BatchMatMul(s, dz, y, false, true);
      gy = BatchMatMul(s, x, dz, true, false);
    } else if (!adj_x && adj_y) {
      gx = BatchMatMul(s, dz, y, false, false);
      gy = BatchMatMul(s, dz, x, true, false);
    } else if (adj_x && !adj_y) {
      gx = BatchMatMul(s, y, dz, false, true);
      gy = BatchMatMul(s, x, dz, false, false);
    } else {
      gx = BatchMatMul(s, y, dz, true, true);
      gy = BatchMatMul(s, dz, x, true, true);
    }
    (*dx)[0] = ReduceTo(s, gx, x, y);
    (*dx)[1] = ReduceTo(s, gy, y, x);
    return Status::OK();
  });
  r.Register("Sum", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    return ReductionGrad(Reduction::kSum, s, op, dy, dx);
  });
  r.Register("Mean", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    return ReductionGrad(Reduction::kMean, s, op, dy, dx);
  });
  r.Register("Max", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    return ReductionGrad(Reduction::kMax, s, op, dy, dx);
  });
  // FloorDiv is a step function (TF registers no gradient either).
  for (const char* op : {"Equal", "GreaterEqual", "ArgMax", "FloorDiv"}) r.RegisterNoGradient(op);
}

}  // namespace tw
