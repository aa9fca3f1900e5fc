// Schemas and builders of the ops that pick and place elements by index or
// condition: GatherV2, UnsortedSegmentSum, OneHot, Select, SelectV2 and InTopKV2
// (kernels in kernels/gather_kernels.cc). Shape functions check what is known
// when the graph is built; the kernels check again on the real values.
#include "towerflow/graph/ops/gather_ops.h"

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

const std::vector<DataType>& AllTypes() {
  static const std::vector<DataType> k = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool, kString};
  return k;
}

// A scalar int input known at build time (a Const or a known partial value).
std::optional<int64_t> KnownScalar(InferenceContext* c, int i) {
  if (c->input(i).known_rank() && c->input(i).rank() != 0) return std::nullopt;
  auto v = shape_fns::KnownIntVector(c, i);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

// Output dims a..b of `s` appended to `out` (unknown rank: none).
void AppendDims(const PartialShape& s, int a, int b, std::vector<int64_t>& out) {
  for (int i = a; i < b; ++i) out.push_back(s.dim(i));
}

// params.shape[:axis] + indices.shape + params.shape[axis+1:].
Status GatherShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(2, 0));
  const PartialShape& params = c->input(0);
  const PartialShape& indices = c->input(1);
  const std::optional<int64_t> axis_v = KnownScalar(c, 2);
  if (!params.known_rank() || !indices.known_rank() || !axis_v) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  int64_t axis = *axis_v;
  if (axis < -params.rank() || axis >= params.rank()) {
    return errors::InvalidArgument("GatherV2 axis ", axis, " is out of range for params of shape ",
                                   params.ToString(), " (expected an axis in [", -params.rank(), ", ",
                                   params.rank(), "))");
  }
  if (axis < 0) axis += params.rank();
  std::vector<int64_t> out;
  AppendDims(params, 0, static_cast<int>(axis), out);
  AppendDims(indices, 0, indices.rank(), out);
  AppendDims(params, static_cast<int>(axis) + 1, params.rank(), out);
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

// [num_segments] + data.shape[segment_ids.rank:], segment_ids' shape a prefix
// of data's.
Status UnsortedSegmentSumShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(2, 0));
  const PartialShape& data = c->input(0);
  const PartialShape& ids = c->input(1);
  const std::optional<int64_t> known_n = KnownScalar(c, 2);
  if (known_n && *known_n < 0) {
    return errors::InvalidArgument("UnsortedSegmentSum: num_segments must be at least 0, got ", *known_n);
  }
  const int64_t n = known_n.value_or(-1);
  if (!data.known_rank() || !ids.known_rank()) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (ids.rank() > data.rank()) {
    return errors::InvalidArgument("UnsortedSegmentSum: segment_ids of shape ", ids.ToString(),
                                   " must be a prefix of data's shape ", data.ToString());
  }
  for (int i = 0; i < ids.rank(); ++i) {
    if (ids.dim(i) >= 0 && data.dim(i) >= 0 && ids.dim(i) != data.dim(i)) {
      return errors::InvalidArgument("UnsortedSegmentSum: segment_ids of shape ", ids.ToString(),
                                     " must be a prefix of data's shape ", data.ToString());
    }
  }
  std::vector<int64_t> out = {n};
  AppendDims(data, ids.rank(), data.rank(), out);
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

// indices' shape with `depth` inserted at `axis`.
Status OneHotShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 0));
  TW_RETURN_IF_ERROR(c->WithRank(2, 0));
  TW_RETURN_IF_ERROR(c->WithRank(3, 0));
  TW_ASSIGN_OR_RETURN(int64_t axis, c->GetAttr<int64_t>("axis"));
  const PartialShape& indices = c->input(0);
  const std::optional<int64_t> known_depth = KnownScalar(c, 1);
  if (known_depth && *known_depth < 0) {
    return errors::InvalidArgument("OneHot: depth must be non-negative, got: ", *known_depth);
  }
  const int64_t depth = known_depth.value_or(-1);
  if (!indices.known_rank()) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (axis < -1 || axis > indices.rank()) {
    return errors::InvalidArgument("OneHot: axis ", axis, " is out of range for indices of shape ",
                                   indices.ToString(), " (expected -1 or an axis in [0, ", indices.rank(), "])");
  }
  const int at = axis == -1 ? indices.rank() : static_cast<int>(axis);
  std::vector<int64_t> out;
  AppendDims(indices, 0, at, out);
  out.push_back(depth);
  AppendDims(indices, at, indices.rank(), out);
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

Status SelectShape(InferenceContext* c) {
  auto te = shape_fns::BroadcastShapes(c->input(1), c->input(2));
  if (!te.ok()) {
    return errors::InvalidArgument("SelectV2: t of shape ", c->input(1).ToString(), " and e of shape ",
                                   c->input(2).ToString(), " do not broadcast together");
  }
  auto all = shape_fns::BroadcastShapes(c->input(0), *te);
  if (!all.ok()) {
    return errors::InvalidArgument("SelectV2: condition of shape ", c->input(0).ToString(),
                                   " does not broadcast with t and e of shape ", te->ToString());
  }
  c->set_output(0, *all);
  return Status::OK();
}

// TF1's Select: t and e of one shape; condition a scalar, a vector along
// t's first axis, or of t's shape.
Status SelectV1Shape(InferenceContext* c) {
  auto te = c->input(1).Merge(c->input(2));
  if (!te.ok()) {
    return errors::InvalidArgument("Select: t of shape ", c->input(1).ToString(), " and e of shape ",
                                   c->input(2).ToString(), " must have one shape");
  }
  const PartialShape& cond = c->input(0);
  if (cond.known_rank() && te->known_rank() && cond.rank() != 0) {
    const bool rows = cond.rank() == 1 && te->rank() > 1;
    const bool ok = rows ? (cond.dim(0) < 0 || te->dim(0) < 0 || cond.dim(0) == te->dim(0))
                         : cond.IsCompatibleWith(*te);
    if (!ok) {
      return errors::InvalidArgument("Select: condition of shape ", cond.ToString(),
                                     " must be a scalar, a vector of t's first dimension, or of t's shape ",
                                     te->ToString());
    }
  }
  c->set_output(0, *te);
  return Status::OK();
}

Status InTopKShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 2));
  TW_RETURN_IF_ERROR(c->WithRank(1, 1));
  TW_RETURN_IF_ERROR(c->WithRank(2, 0));
  const PartialShape& p = c->input(0);
  const PartialShape& t = c->input(1);
  const int64_t pb = p.known_rank() ? p.dim(0) : -1;
  const int64_t tb = t.known_rank() ? t.dim(0) : -1;
  if (pb >= 0 && tb >= 0 && pb != tb) {
    return errors::InvalidArgument("InTopKV2: predictions of shape ", p.ToString(), " and targets of shape ",
                                   t.ToString(), " have different batch sizes");
  }
  c->set_output(0, PartialShape({pb >= 0 ? pb : tb}));
  return Status::OK();
}

}  // namespace

void RegisterGatherOps(OpRegistry& r) {
  const std::vector<DataType> ints = {kInt32, kInt64};
  r.Register(OpDefBuilder("GatherV2")
                 .Input("params", "Tparams")
                 .Input("indices", "Tindices")
                 .Input("axis", "Taxis")
                 .Output("output", "Tparams")
                 .TypeAttr("Tparams", AllTypes())
                 .TypeAttr("Tindices", ints)
                 .TypeAttr("Taxis", ints, kInt32)
                 .Shape(GatherShape)
                 .Doc("Slices of params at indices along axis.")
                 .Build()).Check();
  r.Register(OpDefBuilder("UnsortedSegmentSum")
                 .Input("data", "T")
                 .Input("segment_ids", "Tindices")
                 .Input("num_segments", "Tnumsegments")
                 .Output("output", "T")
                 .TypeAttr("T", NumericTypes())
                 .TypeAttr("Tindices", ints)
                 .TypeAttr("Tnumsegments", ints, kInt32)
                 .Shape(UnsortedSegmentSumShape)
                 .Doc("Sums of data's slices per segment id.")
                 .Build()).Check();
  r.Register(OpDefBuilder("OneHot")
                 .Input("indices", "TI")
                 .Input("depth", "int32")
                 .Input("on_value", "T")
                 .Input("off_value", "T")
                 .Output("output", "T")
                 .TypeAttr("T", AllTypes())
                 .TypeAttr("TI", {kUInt8, kInt32, kInt64}, kInt64)
                 .Attr("axis", int64_t{-1})
                 .Shape(OneHotShape)
                 .Doc("One-hot encoding of indices.")
                 .Build()).Check();
  r.Register(OpDefBuilder("Select")
                 .Input("condition", "bool")
                 .Input("t", "T")
                 .Input("e", "T")
                 .Output("output", "T")
                 .TypeAttr("T", AllTypes())
                 .Shape(SelectV1Shape)
                 .Doc("condition ? t : e: whole, by rows, or by elements (TF1's rule).")
                 .Build()).Check();
  r.Register(OpDefBuilder("SelectV2")
                 .Input("condition", "bool")
                 .Input("t", "T")
                 .Input("e", "T")
                 .Output("output", "T")
                 .TypeAttr("T", AllTypes())
                 .Shape(SelectShape)
                 .Doc("condition ? t : e, broadcasting.")
                 .Build()).Check();
  r.Register(OpDefBuilder("InTopKV2")
                 .Input("predictions", "float")
                 .Input("targets", "T")
                 .Input("k", "T")
                 .Output("precision", "bool")
                 .TypeAttr("T", ints, kInt32)
                 .Shape(InTopKShape)
                 .Doc("Whether each target is among its row's k largest predictions.")
                 .Build()).Check();
}

Output Gather(const Scope& scope, const Output& params, const Output& indices, int axis) {
  return NodeBuilder(scope, "GatherV2")
      .Input(params)
      .Input(indices)
      .Input(Const(scope.WithOpName("GatherV2/axis"), static_cast<int32_t>(axis)))
      .Finalize();
}

Output UnsortedSegmentSum(const Scope& scope, const Output& data, const Output& segment_ids,
                          const Output& num_segments) {
  return NodeBuilder(scope, "UnsortedSegmentSum").Input(data).Input(segment_ids).Input(num_segments).Finalize();
}

Output OneHot(const Scope& scope, const Output& indices, const Output& depth, const Output& on_value,
              const Output& off_value, int axis) {
  return NodeBuilder(scope, "OneHot")
      .Input(indices)
      .Input(depth)
      .Input(on_value)
      .Input(off_value)
      .Attr("axis", int64_t{axis})
      .Finalize();
}

Output Select(const Scope& scope, const Output& condition, const Output& t, const Output& e) {
  return NodeBuilder(scope, "Select").Input(condition).Input(t).Input(e).Finalize();
}

Output SelectV2(const Scope& scope, const Output& condition, const Output& t, const Output& e) {
  return NodeBuilder(scope, "SelectV2").Input(condition).Input(t).Input(e).Finalize();
}

Output InTopK(const Scope& scope, const Output& predictions, const Output& targets, const Output& k) {
  return NodeBuilder(scope, "InTopKV2").Input(predictions).Input(targets).Input(k).Finalize();
}

}  // namespace tw
