// Schemas and builders of the math ops: element-wise binary ops with numpy
// broadcasting (Add, Sub, Mul, Div, Maximum, Equal, GreaterEqual), unary ops,
// AddN, MatMul, the reductions Sum / Mean / Max, and ArgMax. Names, inputs and
// attrs are TensorFlow's, so graphs and errors read like TF's.
#include "towerflow/graph/ops/math_ops.h"

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

const std::vector<DataType>& SignedTypes() {
  static const std::vector<DataType> k = {kFloat32, kFloat64, kInt32, kInt64};
  return k;
}

void RegisterBinary(OpRegistry& r, const char* name, const std::vector<DataType>& types,
                    const char* out_type, const char* doc) {
  r.Register(OpDefBuilder(name)
                 .Input("x", "T")
                 .Input("y", "T")
                 .Output("z", out_type)
                 .TypeAttr("T", types)
                 .Shape(shape_fns::Broadcast)
                 .Doc(doc)
                 .Build()).Check();
}

void RegisterUnary(OpRegistry& r, const char* name, const std::vector<DataType>& types,
                   const char* doc) {
  r.Register(OpDefBuilder(name)
                 .Input("x", "T")
                 .Output("y", "T")
                 .TypeAttr("T", types)
                 .Shape(shape_fns::Unchanged)
                 .Doc(doc)
                 .Build()).Check();
}

void RegisterReduction(OpRegistry& r, const char* name, const std::vector<DataType>& types,
                       const char* doc) {
  r.Register(OpDefBuilder(name)
                 .Input("input", "T")
                 .Input("reduction_indices", "int32")
                 .Output("output", "T")
                 .TypeAttr("T", types)
                 .Attr("keep_dims", false)
                 .Shape(shape_fns::Reduction)
                 .Doc(doc)
                 .Build()).Check();
}

// Every AddN input has one shape: merge them, failing on the first pair that
// cannot match.
Status AddNShape(InferenceContext* c) {
  if (c->num_inputs() == 0) return errors::InvalidArgument("AddN needs at least one input");
  PartialShape merged = c->input(0);
  for (int i = 1; i < c->num_inputs(); ++i) {
    auto m = merged.Merge(c->input(i));
    if (!m.ok()) {
      return errors::InvalidArgument("AddN inputs must have one shape: input 0 has shape ",
                                     c->input(0).ToString(), " but input ", i, " has shape ",
                                     c->input(i).ToString());
    }
    merged = *m;
  }
  c->set_output(0, merged);
  return Status::OK();
}

// [M,K] x [K,N] -> [M,N], each operand possibly transposed.
Status MatMulShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 2));
  TW_RETURN_IF_ERROR(c->WithRank(1, 2));
  TW_ASSIGN_OR_RETURN(bool ta, c->GetAttr<bool>("transpose_a"));
  TW_ASSIGN_OR_RETURN(bool tb, c->GetAttr<bool>("transpose_b"));
  const PartialShape& a = c->input(0);
  const PartialShape& b = c->input(1);
  const int64_t m = a.known_rank() ? a.dim(ta ? 1 : 0) : -1;
  const int64_t ka = a.known_rank() ? a.dim(ta ? 0 : 1) : -1;
  const int64_t kb = b.known_rank() ? b.dim(tb ? 1 : 0) : -1;
  const int64_t n = b.known_rank() ? b.dim(tb ? 0 : 1) : -1;
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return errors::InvalidArgument("MatMul inner dimensions differ: a has shape ", a.ToString(),
                                   ta ? " (transposed)" : "", " and b has shape ", b.ToString(),
                                   tb ? " (transposed)" : "", ": ", ka, " vs ", kb);
  }
  c->set_output(0, PartialShape({m, n}));
  return Status::OK();
}

// [..., M, K] x [..., K, N] -> [broadcast(...), M, N], each operand's last two
// dimensions swapped when adj_x / adj_y; batch dimensions broadcast as NumPy's
// (a known 1 takes the other's size; two unknowns stay unknown).
Status BatchMatMulShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 2));
  TW_RETURN_IF_ERROR(c->WithRankAtLeast(1, 2));
  TW_ASSIGN_OR_RETURN(bool adj_x, c->GetAttr<bool>("adj_x"));
  TW_ASSIGN_OR_RETURN(bool adj_y, c->GetAttr<bool>("adj_y"));
  const PartialShape& x = c->input(0);
  const PartialShape& y = c->input(1);
  if (!x.known_rank() || !y.known_rank()) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  const int rx = x.rank(), ry = y.rank();
  const int64_t m = x.dim(adj_x ? rx - 1 : rx - 2), kx = x.dim(adj_x ? rx - 2 : rx - 1);
  const int64_t ky = y.dim(adj_y ? ry - 1 : ry - 2), n = y.dim(adj_y ? ry - 2 : ry - 1);
  if (kx >= 0 && ky >= 0 && kx != ky) {
    return errors::InvalidArgument("BatchMatMul inner dimensions differ: x has shape ", x.ToString(),
                                   adj_x ? " (adjoint)" : "", " and y has shape ", y.ToString(),
                                   adj_y ? " (adjoint)" : "", ": ", kx, " vs ", ky);
  }
  const int batch = std::max(rx, ry) - 2;
  std::vector<int64_t> out(static_cast<size_t>(batch) + 2);
  for (int i = 0; i < batch; ++i) {
    const int ix = rx - 2 - batch + i, iy = ry - 2 - batch + i;
    const int64_t dx = ix >= 0 ? x.dim(ix) : 1, dy = iy >= 0 ? y.dim(iy) : 1;
    int64_t d;
    if (dx == 1) {
      d = dy;
    } else if (dy == 1 || dx == dy) {
      d = dx;
    } else if (dx < 0 || dy < 0) {
      d = dx < 0 ? (dy < 0 ? -1 : dy) : dx;  // the known one, or the other must be 1
    } else {
      return errors::InvalidArgument("BatchMatMul batch dimensions do not broadcast: x has shape ", x.ToString(),
                                     " and y has shape ", y.ToString());
    }
    out[static_cast<size_t>(i)] = d;
  }
  out[static_cast<size_t>(batch)] = m;
  out[static_cast<size_t>(batch) + 1] = n;
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

// The input shape without `dimension` (when that input is a constant).
Status ArgMaxShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 1));
  const PartialShape& in = c->input(0);
  const Tensor* dim = c->input_value(1);
  if (!in.known_rank()) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (dim == nullptr) {
    c->set_output(0, PartialShape::UnknownOfRank(in.rank() - 1));
    return Status::OK();
  }
  if (dim->NumElements() != 1) {
    return errors::InvalidArgument("ArgMax dimension must be a scalar, got ", dim->DebugString());
  }
  int64_t axis = dim->data<int32_t>()[0];
  if (axis < -in.rank() || axis >= in.rank()) {
    return errors::InvalidArgument("ArgMax dimension ", axis, " is out of range for input of shape ",
                                   in.ToString());
  }
  if (axis < 0) axis += in.rank();
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i) {
    if (i != axis) out.push_back(in.dim(i));
  }
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

}  // namespace

void RegisterMathOps(OpRegistry& r) {
  RegisterBinary(r, "Add", NumericTypes(), "T", "x + y, broadcasting.");
  RegisterBinary(r, "Sub", NumericTypes(), "T", "x - y, broadcasting.");
  RegisterBinary(r, "Mul", NumericTypes(), "T", "x * y, broadcasting.");
  RegisterBinary(r, "Div", NumericTypes(), "T",
                 "x / y, broadcasting; integer division truncates, integer y = 0 is an error.");
  RegisterBinary(r, "Maximum", NumericTypes(), "T", "max(x, y), broadcasting.");
  RegisterBinary(r, "Pow", {kFloat32, kFloat64, kInt32, kInt64}, "T",
                 "x^y, broadcasting; integer y must not be negative.");
  RegisterBinary(r, "FloorDiv", NumericTypes(), "T",
                 "floor(x / y), broadcasting (Python's //); integer y = 0 is an error.");
  RegisterBinary(r, "FloorMod", NumericTypes(), "T",
                 "x - floor(x / y) * y, broadcasting (Python's %, the sign of y); integer y = 0 is an error.");
  std::vector<DataType> eq_types = NumericTypes();
  eq_types.push_back(kBool);
  RegisterBinary(r, "Equal", eq_types, "bool", "x == y (bool), broadcasting.");
  RegisterBinary(r, "GreaterEqual", NumericTypes(), "bool", "x >= y (bool), broadcasting.");

  RegisterUnary(r, "Neg", SignedTypes(), "-x.");
  RegisterUnary(r, "Square", NumericTypes(), "x * x.");
  RegisterUnary(r, "Sqrt", FloatTypes(), "sqrt(x).");
  RegisterUnary(r, "Exp", FloatTypes(), "e^x.");
  RegisterUnary(r, "Log", FloatTypes(), "Natural logarithm of x.");
  RegisterUnary(r, "Log1p", FloatTypes(), "log(1 + x), accurate for x near 0.");
  RegisterUnary(r, "Sigmoid", FloatTypes(), "1 / (1 + e^-x).");
  RegisterUnary(r, "Tanh", FloatTypes(), "Hyperbolic tangent of x.");

  r.Register(OpDefBuilder("AddN")
                 .ListInput("inputs", "T", "N")
                 .Output("sum", "T")
                 .TypeAttr("T", NumericTypes())
                 .Shape(AddNShape)
                 .Doc("Element-wise sum of N tensors of one shape.")
                 .Build()).Check();
  r.Register(OpDefBuilder("MatMul")
                 .Input("a", "T")
                 .Input("b", "T")
                 .Output("product", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("transpose_a", false)
                 .Attr("transpose_b", false)
                 .Shape(MatMulShape)
                 .Doc("Matrix product of two rank-2 tensors, each optionally transposed.")
                 .Build()).Check();
  r.Register(OpDefBuilder("BatchMatMulV2")
                 .Input("x", "T")
                 .Input("y", "T")
                 .Output("output", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("adj_x", false)
                 .Attr("adj_y", false)
                 .Shape(BatchMatMulShape)
                 .Doc("Matrix products over the leading (broadcast) dimensions of two tensors of rank >= 2, each "
                      "matrix optionally transposed.")
                 .Build()).Check();

  RegisterReduction(r, "Sum", NumericTypes(), "Sum over the given axes.");
  RegisterReduction(r, "Mean", NumericTypes(), "Mean over the given axes.");
  RegisterReduction(r, "Max", NumericTypes(), "Maximum over the given axes.");
  r.Register(OpDefBuilder("ArgMax")
                 .Input("input", "T")
                 .Input("dimension", "int32")
                 .Output("output", "output_type")
                 .TypeAttr("T", NumericTypes())
                 .TypeAttr("output_type", {kInt32, kInt64}, kInt64)
                 .Shape(ArgMaxShape)
                 .Doc("Index of the largest value along `dimension` (the first on ties).")
                 .Build()).Check();
}

namespace {

Output Binary(const Scope& scope, const char* op, const Output& x, const Output& y) {
  return NodeBuilder(scope, op).Input(x).Input(y).Finalize();
}
Output Unary(const Scope& scope, const char* op, const Output& x) {
  return NodeBuilder(scope, op).Input(x).Finalize();
}

// The reduction with its axes as a constant. Empty `axes` means every axis: the
// axes are spelled out when x's rank is known; otherwise x is flattened first,
// which gives the same result without keep_dims (and needs the rank with it).
Output Reduce(const Scope& scope, const char* op, const Output& x, const std::vector<int32_t>& axes,
              bool keep_dims) {
  if (!x.valid()) return NodeBuilder(scope, op).Input(x).Finalize();  // records the null input
  // The helper nodes must not take the scope's WithOpName name: that is the op's.
  const Scope helpers = scope.NewSubScope("");
  Output input = x;
  std::vector<int32_t> all = axes;
  if (axes.empty()) {
    if (x.shape().known_rank()) {
      for (int i = 0; i < x.shape().rank(); ++i) all.push_back(i);
    } else if (!keep_dims) {
      input = Reshape(helpers, x, std::vector<int32_t>{-1});
      all = {0};
    } else {
      scope.UpdateStatus(errors::InvalidArgument(
          op, " '", scope.Prefixed(op), "': reducing every axis with keep_dims needs the rank of ",
          x.name(), ", whose shape is unknown"));
      return Output();
    }
  }
  return NodeBuilder(scope, op)
      .Input(input)
      .Input(Const(helpers, all))
      .Attr("keep_dims", keep_dims)
      .Finalize();
}

}  // namespace

Output Add(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "Add", x, y); }
Output Sub(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "Sub", x, y); }
Output Mul(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "Mul", x, y); }
Output Div(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "Div", x, y); }
Output Pow(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "Pow", x, y); }
Output BatchMatMul(const Scope& scope, const Output& x, const Output& y, bool adj_x, bool adj_y) {
  return NodeBuilder(scope, "BatchMatMulV2").Input(x).Input(y).Attr("adj_x", adj_x).Attr("adj_y", adj_y).Finalize();
}
Output FloorDiv(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "FloorDiv", x, y); }
Output FloorMod(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "FloorMod", x, y); }
Output Maximum(const Scope& scope, const Output& x, const Output& y) {
  return Binary(scope, "Maximum", x, y);
}
Output Equal(const Scope& scope, const Output& x, const Output& y) { return Binary(scope, "Equal", x, y); }
Output GreaterEqual(const Scope& scope, const Output& x, const Output& y) {
  return Binary(scope, "GreaterEqual", x, y);
}

Output Neg(const Scope& scope, const Output& x) { return Unary(scope, "Neg", x); }
Output Square(const Scope& scope, const Output& x) { return Unary(scope, "Square", x); }
Output Sqrt(const Scope& scope, const Output& x) { return Unary(scope, "Sqrt", x); }
Output Exp(const Scope& scope, const Output& x) { return Unary(scope, "Exp", x); }
Output Log(const Scope& scope, const Output& x) { return Unary(scope, "Log", x); }
Output Log1p(const Scope& scope, const Output& x) { return Unary(scope, "Log1p", x); }
Output Sigmoid(const Scope& scope, const Output& x) { return Unary(scope, "Sigmoid", x); }
Output Tanh(const Scope& scope, const Output& x) { return Unary(scope, "Tanh", x); }

Output AddN(const Scope& scope, const std::vector<Output>& inputs) {
  if (inputs.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("AddN '", scope.Prefixed("AddN"),
                                               "': needs at least one input"));
    return Output();
  }
  return NodeBuilder(scope, "AddN").Inputs(inputs).Finalize();
}

Output MatMul(const Scope& scope, const Output& a, const Output& b, MatMulOptions options) {
  return NodeBuilder(scope, "MatMul")
      .Input(a)
      .Input(b)
      .Attr("transpose_a", options.transpose_a)
      .Attr("transpose_b", options.transpose_b)
      .Finalize();
}

Output Sum(const Scope& scope, const Output& x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(scope, "Sum", x, axes, keep_dims);
}
Output Mean(const Scope& scope, const Output& x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(scope, "Mean", x, axes, keep_dims);
}
Output Max(const Scope& scope, const Output& x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(scope, "Max", x, axes, keep_dims);
}
Output SumOverAxes(const Scope& scope, const Output& x, const Output& axes, bool keep_dims) {
  return NodeBuilder(scope, "Sum").Input(x).Input(axes).Attr("keep_dims", keep_dims).Finalize();
}

Output ArgMax(const Scope& scope, const Output& x, int axis) {
  return NodeBuilder(scope, "ArgMax")
      .Input(x)
      .Input(Const(scope.NewSubScope(""), static_cast<int32_t>(axis)))
      .Attr("output_type", kInt64)
      .Finalize();
}

}  // namespace tw
