// Schemas and builders of the shape-manipulating array ops: Shape, Reshape,
// ExpandDims, Squeeze, ConcatV2, Slice, Fill, BroadcastTo, SumToShape, and the
// internal ops their gradients use (ConcatOffset, SliceGrad).
//
// Every shape and index input is an int32 vector (TF's default Tshape/Index).
// Shape functions check what is known at graph-build time; kernels
// (kernels/shape_kernels.cc) check again on the real shapes.
#include <limits>
#include <optional>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

// Element k of a vector input known at build time in part, or nullopt.
std::optional<int64_t> KnownElement(InferenceContext* c, int i, size_t k) {
  const std::optional<PartialVector>& p = c->input_partial(i);
  if (!p || k >= p->size()) return std::nullopt;
  return (*p)[k];
}

std::string VecStr(const std::vector<int64_t>& v) { return PartialShape(v).ToString(); }

Status ShapeShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  c->set_output(0, PartialShape({in.known_rank() ? in.rank() : -1}));
  return Status::OK();
}

Status ReshapeShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 1));
  const PartialShape& in = c->input(0);
  auto target = shape_fns::KnownIntVector(c, 1);
  if (!target) {
    TW_ASSIGN_OR_RETURN(PartialShape s, c->InputAsShape(1));
    c->set_output(0, s);
    return Status::OK();
  }
  std::vector<int64_t> dims = *target;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer >= 0) {
        return errors::InvalidArgument("Reshape: only one dimension of shape ", VecStr(dims),
                                       " may be -1");
      }
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return errors::InvalidArgument("Reshape: shape ", VecStr(dims), " has a negative dimension");
    } else if (dims[i] > 0 && known > std::numeric_limits<int64_t>::max() / dims[i]) {
      return errors::InvalidArgument("Reshape: shape ", VecStr(dims), " has too many elements");
    } else {
      known *= dims[i];
    }
  }
  const int64_t n = in.num_elements();  // -1 unless fully defined
  if (n >= 0) {
    if (infer >= 0) {
      if (known == 0 || n % known != 0) {
        return errors::InvalidArgument("Reshape: cannot reshape a tensor of shape ", in.ToString(), " (", n,
                                       " elements) to shape ", VecStr(dims), ": ", n,
                                       " is not a multiple of ", known);
      }
      dims[static_cast<size_t>(infer)] = n / known;
    } else if (known != n) {
      return errors::InvalidArgument("Reshape: cannot reshape a tensor of shape ", in.ToString(), " (", n,
                                     " elements) to shape ", VecStr(dims), " (", known, " elements)");
    }
  }
  c->set_output(0, PartialShape(dims));
  return Status::OK();
}

Status ExpandDimsShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  auto dim = shape_fns::KnownIntVector(c, 1);
  if (!in.known_rank()) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (!dim) {
    c->set_output(0, PartialShape::UnknownOfRank(in.rank() + 1));
    return Status::OK();
  }
  if (dim->size() != 1) {
    return errors::InvalidArgument("ExpandDims: 'dim' must hold one value, got ", VecStr(*dim));
  }
  int64_t d = (*dim)[0];
  if (d < -in.rank() - 1 || d > in.rank()) {
    return errors::InvalidArgument("ExpandDims: dim ", d, " is out of range [", -in.rank() - 1, ", ",
                                   in.rank(), "] for input of shape ", in.ToString());
  }
  if (d < 0) d += in.rank() + 1;
  std::vector<int64_t> dims = in.dims();
  dims.insert(dims.begin() + d, 1);
  c->set_output(0, PartialShape(dims));
  return Status::OK();
}

Status SqueezeShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> axes, c->GetAttr<std::vector<int64_t>>("squeeze_dims"));
  if (!in.known_rank()) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<bool> drop(static_cast<size_t>(in.rank()), false);
  for (int64_t a : axes) {
    if (a < -in.rank() || a >= in.rank()) {
      return errors::InvalidArgument("Squeeze: axis ", a, " is out of range for input of shape ",
                                     in.ToString());
    }
    if (a < 0) a += in.rank();
    if (in.dim(static_cast<int>(a)) != 1 && in.dim(static_cast<int>(a)) != -1) {
      return errors::InvalidArgument("Squeeze: cannot squeeze axis ", a, " of input of shape ",
                                     in.ToString(), ": its size is not 1");
    }
    drop[static_cast<size_t>(a)] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (axes.empty() && in.dim(i) == -1) {  // might or might not be squeezed
      c->set_output(0, PartialShape::Unknown());
      return Status::OK();
    }
    if (axes.empty() ? in.dim(i) != 1 : !drop[static_cast<size_t>(i)]) dims.push_back(in.dim(i));
  }
  c->set_output(0, PartialShape(dims));
  return Status::OK();
}

Status ConcatShape(InferenceContext* c) {
  const int n = c->num_inputs() - 1;
  TW_RETURN_IF_ERROR(c->WithRank(n, 0));
  if (n < 1) return errors::InvalidArgument("ConcatV2 needs at least one value");
  int rank = -1;
  for (int i = 0; i < n; ++i) {
    if (!c->input(i).known_rank()) continue;
    if (rank >= 0 && c->input(i).rank() != rank) {
      return errors::InvalidArgument("ConcatV2: all values must have one rank, got shapes ",
                                     c->input(0).ToString(), " and ", c->input(i).ToString());
    }
    rank = c->input(i).rank();
  }
  auto axis_v = shape_fns::KnownIntVector(c, n);
  if (rank < 0 || !axis_v) {
    c->set_output(0, rank < 0 ? PartialShape::Unknown() : PartialShape::UnknownOfRank(rank));
    return Status::OK();
  }
  int64_t axis = (*axis_v)[0];
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("ConcatV2: axis ", axis, " is out of range for values of rank ", rank);
  }
  if (axis < 0) axis += rank;
  PartialShape out = PartialShape::UnknownOfRank(rank);
  int64_t axis_size = 0;
  for (int i = 0; i < n; ++i) {
    const PartialShape& in = c->input(i);
    if (!in.known_rank()) {
      axis_size = -1;
      continue;
    }
    std::vector<int64_t> masked = in.dims();
    const int64_t d = masked[static_cast<size_t>(axis)];
    axis_size = (axis_size < 0 || d < 0) ? -1 : axis_size + d;
    masked[static_cast<size_t>(axis)] = -1;
    auto merged = out.Merge(PartialShape(masked));
    if (!merged.ok()) {
      return errors::InvalidArgument("ConcatV2: value shapes ", c->input(0).ToString(), " and ",
                                     in.ToString(), " differ outside axis ", axis);
    }
    out = *merged;
  }
  std::vector<int64_t> dims = out.dims();
  dims[static_cast<size_t>(axis)] = axis_size;
  c->set_output(0, PartialShape(dims));
  return Status::OK();
}

Status SliceShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 1));
  TW_RETURN_IF_ERROR(c->WithRank(2, 1));
  const PartialShape& in = c->input(0);
  auto begin = shape_fns::KnownIntVector(c, 1);
  auto size = shape_fns::KnownIntVector(c, 2);
  int rank = in.known_rank() ? in.rank() : -1;
  for (int i : {1, 2}) {
    const PartialShape& s = c->input(i);
    if (s.known_rank() && s.dim(0) >= 0) {
      if (rank >= 0 && s.dim(0) != rank) {
        return errors::InvalidArgument("Slice: begin and size must have one entry per dimension of input ",
                                       in.ToString(), ", got shapes ", c->input(1).ToString(), " and ",
                                       c->input(2).ToString());
      }
      rank = static_cast<int>(s.dim(0));
    }
  }
  if (rank < 0) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> out(static_cast<size_t>(rank), -1);
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = in.known_rank() ? in.dim(i) : -1;
    // Each element as far as it is known (a begin of [0, n - 1, 0] knows its 0s).
    const std::optional<int64_t> known_b = begin ? (*begin)[static_cast<size_t>(i)] : KnownElement(c, 1, i);
    const std::optional<int64_t> known_sz = size ? (*size)[static_cast<size_t>(i)] : KnownElement(c, 2, i);
    const int64_t b = known_b.value_or(-1);
    const int64_t sz = known_sz.value_or(-2);
    const bool bad_begin = known_b && (b < 0 || (dim >= 0 && b > dim));
    const bool bad_size = known_sz && (sz < -1 || (dim >= 0 && b >= 0 && sz >= 0 && b + sz > dim));
    if (bad_begin || bad_size) {
      return errors::InvalidArgument("Slice: out of bounds in dimension ", i, ": input shape ", in.ToString(),
                                     ", begin ", begin ? VecStr(*begin) : "?", ", size ",
                                     size ? VecStr(*size) : "?");
    }
    if (sz >= 0) {
      out[static_cast<size_t>(i)] = sz;
    } else if (sz == -1 && dim >= 0 && b >= 0) {
      out[static_cast<size_t>(i)] = dim - b;
    }
  }
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

// Output 0 is the shape held by int32 vector input `i`.
Status ShapeFromInput(InferenceContext* c, int i) {
  TW_RETURN_IF_ERROR(c->WithRank(i, 1));
  TW_ASSIGN_OR_RETURN(PartialShape s, c->InputAsShape(i));
  c->set_output(0, s);
  return Status::OK();
}

// Checks that `small` broadcasts to `big` (numpy rules, right-aligned);
// returns the most specific version of `big`.
StatusOr<PartialShape> CheckBroadcastable(const char* op, const PartialShape& small, const PartialShape& big) {
  if (!small.known_rank() || !big.known_rank()) return big;
  auto fail = [&] {
    return errors::InvalidArgument(op, ": shape ", small.ToString(), " is not broadcast-compatible with ",
                                   big.ToString());
  };
  if (small.rank() > big.rank()) return fail();
  std::vector<int64_t> out = big.dims();
  const int off = big.rank() - small.rank();
  for (int i = 0; i < small.rank(); ++i) {
    const int64_t s = small.dim(i), b = big.dim(i + off);
    if (s == 1 || s == -1) continue;
    if (b >= 0 && b != s) return fail();
    out[static_cast<size_t>(i + off)] = s;
  }
  return PartialShape(out);
}

}  // namespace

void RegisterShapeOps(OpRegistry& r) {
  r.Register(OpDefBuilder("Shape").Input("input", "T").Output("output", "int32").TypeAttr("T", {})
                 .Shape(ShapeShape).Doc("The dimensions of the input, as an int32 vector.").Build()).Check();
  r.Register(OpDefBuilder("Reshape").Input("tensor", "T").Input("shape", "int32").Output("output", "T")
                 .TypeAttr("T", {}).Shape(ReshapeShape)
                 .Doc("The same elements with another shape; one -1 dimension is inferred.").Build()).Check();
  r.Register(OpDefBuilder("ExpandDims").Input("input", "T").Input("dim", "int32").Output("output", "T")
                 .TypeAttr("T", {}).Shape(ExpandDimsShape).Doc("Inserts a size-1 axis at 'dim'.").Build()).Check();
  r.Register(OpDefBuilder("Squeeze").Input("input", "T").Output("output", "T").TypeAttr("T", {})
                 .Attr("squeeze_dims", std::vector<int64_t>{}).Shape(SqueezeShape)
                 .Doc("Removes size-1 axes (the listed ones, or all).").Build()).Check();
  r.Register(OpDefBuilder("ConcatV2").ListInput("values", "T", "N").Input("axis", "int32").Output("output", "T")
                 .TypeAttr("T", {}).Shape(ConcatShape).Doc("Concatenates values along axis.").Build()).Check();
  r.Register(OpDefBuilder("Slice").Input("input", "T").Input("begin", "int32").Input("size", "int32")
                 .Output("output", "T").TypeAttr("T", {}).Shape(SliceShape)
                 .Doc("input[begin : begin + size]; size -1 means to the end.").Build()).Check();
  r.Register(OpDefBuilder("Fill").Input("dims", "int32").Input("value", "T").Output("output", "T")
                 .TypeAttr("T", {})
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(c->WithRank(1, 0));
                   return ShapeFromInput(c, 0);
                 })
                 .Doc("A tensor of shape dims filled with the scalar value.").Build()).Check();
  r.Register(OpDefBuilder("BroadcastTo").Input("input", "T").Input("shape", "int32").Output("output", "T")
                 .TypeAttr("T", {})
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(ShapeFromInput(c, 1));
                   TW_ASSIGN_OR_RETURN(PartialShape s, CheckBroadcastable("BroadcastTo", c->input(0), c->outputs()[0]));
                   c->set_output(0, s);
                   return Status::OK();
                 })
                 .Doc("Broadcasts input to shape (numpy rules).").Build()).Check();
  r.Register(OpDefBuilder("SumToShape").Input("input", "T").Input("shape", "int32").Output("output", "T")
                 .TypeAttr("T", NumericTypes())
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(ShapeFromInput(c, 1));
                   return CheckBroadcastable("SumToShape", c->outputs()[0], c->input(0)).status();
                 })
                 .Doc("Sums input over the axes along which shape was broadcast: BroadcastTo's adjoint.")
                 .Build()).Check();
  // Internal: the gradient of ConcatV2 slices dy at these offsets (TF's op).
  OpDef offset = OpDefBuilder("ConcatOffset").Input("concat_dim", "int32").ListInput("shape", "int32", "N")
                     .Output("offset", "int32")
                     .Shape([](InferenceContext* c) {
                       for (int i = 1; i < c->num_inputs(); ++i) c->set_output(i - 1, c->input(i));
                       return Status::OK();
                     })
                     .Doc("Internal: where each ConcatV2 value starts in the output.").Build();
  offset.outputs.back().number_attr = std::string("N");  // one offset per shape; OpDefBuilder has no list outputs
  r.Register(std::move(offset)).Check();
  // Internal: the gradient of Slice, dy placed at `begin` in zeros of input_shape.
  r.Register(OpDefBuilder("SliceGrad").Input("dy", "T").Input("begin", "int32").Input("input_shape", "int32")
                 .Output("output", "T").TypeAttr("T", NumericTypes())
                 .Shape([](InferenceContext* c) { return ShapeFromInput(c, 2); })
                 .Doc("Internal: zeros of input_shape with dy placed at begin.").Build()).Check();
}

Output Shape(const Scope& scope, const Output& x) { return NodeBuilder(scope, "Shape").Input(x).Finalize(); }
Output Reshape(const Scope& scope, const Output& x, const Output& shape) {
  return NodeBuilder(scope, "Reshape").Input(x).Input(shape).Finalize();
}
Output Reshape(const Scope& scope, const Output& x, const std::vector<int32_t>& shape) {
  return Reshape(scope, x, Const(scope.WithOpName("Reshape/shape"), shape));
}
Output ExpandDims(const Scope& scope, const Output& x, int axis) {
  return NodeBuilder(scope, "ExpandDims").Input(x).Input(Const(scope.WithOpName("ExpandDims/dim"), axis)).Finalize();
}
Output Squeeze(const Scope& scope, const Output& x, const std::vector<int64_t>& axes) {
  return NodeBuilder(scope, "Squeeze").Input(x).Attr("squeeze_dims", axes).Finalize();
}
Output Concat(const Scope& scope, const std::vector<Output>& values, int axis) {
  return NodeBuilder(scope, "ConcatV2")
      .Inputs(values)
      .Input(Const(scope.WithOpName("concat/axis"), axis))
      .Finalize();
}
Output Slice(const Scope& scope, const Output& x, const Output& begin, const Output& size) {
  return NodeBuilder(scope, "Slice").Input(x).Input(begin).Input(size).Finalize();
}
Output Slice(const Scope& scope, const Output& x, const std::vector<int32_t>& begin,
             const std::vector<int32_t>& size) {
  return Slice(scope, x, Const(scope.WithOpName("Slice/begin"), begin),
               Const(scope.WithOpName("Slice/size"), size));
}
Output Fill(const Scope& scope, const Output& dims, const Output& value) {
  return NodeBuilder(scope, "Fill").Input(dims).Input(value).Finalize();
}
Output BroadcastTo(const Scope& scope, const Output& x, const Output& shape) {
  return NodeBuilder(scope, "BroadcastTo").Input(x).Input(shape).Finalize();
}
Output SumToShape(const Scope& scope, const Output& x, const Output& shape) {
  return NodeBuilder(scope, "SumToShape").Input(x).Input(shape).Finalize();
}

}  // namespace tw
