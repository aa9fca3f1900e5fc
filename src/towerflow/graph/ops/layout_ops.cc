// Schemas and builders of the ops that rearrange or repeat elements and of
// Range: Transpose, InvertPermutation, Tile, Pad, PadV2, ReverseV2, Range (kernels in
// kernels/layout_kernels.cc). Shape functions check what is known when the
// graph is built; the kernels check again on the real values.
#include "towerflow/graph/ops/layout_ops.h"

#include <optional>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/range_count.h"
#include "towerflow/graph/ops/register.h"
#include "towerflow/graph/ops/reverse_axes.h"

namespace tw {
namespace {

const std::vector<DataType>& AllTypes() {
  static const std::vector<DataType> k = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool, kString};
  return k;
}

std::string VecStr(const std::vector<int64_t>& v) { return PartialShape(v).ToString(); }

// TF's largest rank: a perm, multiples or paddings argument longer than this
// cannot describe a tensor (and must not size a static shape).
constexpr int64_t kMaxRank = 254;

// A rank read from an argument's length, or InvalidArgument.
StatusOr<int> RankFromLength(const char* op, const char* what, int64_t n) {
  if (n > kMaxRank) {
    return errors::InvalidArgument(op, ": ", what, " of ", n, " entries exceeds the largest rank, ", kMaxRank);
  }
  return static_cast<int>(n);
}

// a + b, or nullopt when it overflows int64.
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

Status TransposeShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 1));
  const PartialShape& x = c->input(0);
  const PartialShape& perm_shape = c->input(1);
  const int64_t n = perm_shape.known_rank() ? perm_shape.dim(0) : -1;
  if (x.known_rank() && n >= 0 && n != x.rank()) {
    return errors::InvalidArgument("Transpose: perm must be a vector of ", x.rank(), " axes for x of shape ",
                                   x.ToString(), ", got ", n);
  }
  int rank = x.known_rank() ? x.rank() : -1;
  if (rank < 0 && n >= 0) {
    TW_ASSIGN_OR_RETURN(rank, RankFromLength("Transpose", "perm", n));
  }
  auto perm = shape_fns::KnownIntVector(c, 1);
  if (rank < 0) {
    c->set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (!perm) {
    c->set_output(0, PartialShape::UnknownOfRank(rank));
    return Status::OK();
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  std::vector<int64_t> out;
  for (int64_t p : *perm) {
    if (p < 0 && p >= -rank) p += rank;  // TF's Transpose counts negative axes from the end
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      return errors::InvalidArgument("Transpose: perm ", VecStr(*perm), " is not a permutation of [0, ", rank, ")");
    }
    seen[static_cast<size_t>(p)] = true;
    out.push_back(x.known_rank() ? x.dim(static_cast<int>(p)) : -1);
  }
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

Status InvertPermutationShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 1));
  c->set_output(0, c->input(0));
  return Status::OK();
}

// x.dims[i] * multiples[i].
Status TileShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 1));
  const PartialShape& x = c->input(0);
  const PartialShape& m_shape = c->input(1);
  if (x.known_rank() && m_shape.known_rank() && m_shape.dim(0) >= 0 && m_shape.dim(0) != x.rank()) {
    return errors::InvalidArgument("Tile: multiples must have one element per axis of x of shape ", x.ToString(),
                                   ", got ", m_shape.dim(0));
  }
  if (!x.known_rank()) {
    if (!m_shape.known_rank() || m_shape.dim(0) < 0) {
      c->set_output(0, PartialShape::Unknown());
    } else {
      TW_ASSIGN_OR_RETURN(int rank, RankFromLength("Tile", "multiples", m_shape.dim(0)));
      c->set_output(0, PartialShape::UnknownOfRank(rank));
    }
    return Status::OK();
  }
  const std::optional<PartialVector>& m = c->input_partial(1);
  std::vector<int64_t> out;
  for (int i = 0; i < x.rank(); ++i) {
    const std::optional<int64_t> k = m && static_cast<size_t>(i) < m->size() ? (*m)[static_cast<size_t>(i)]
                                                                             : std::nullopt;
    if (k && *k < 0) return errors::InvalidArgument("Tile: multiples must be non-negative, got ", *k, " at ", i);
    int64_t d = k && *k == 0 ? 0 : -1;
    if (k && x.dim(i) >= 0 && __builtin_mul_overflow(x.dim(i), *k, &d)) {
      return errors::InvalidArgument("Tile: dimension ", i, " of x of shape ", x.ToString(), " tiled ", *k,
                                     " times overflows");
    }
    out.push_back(d);
  }
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

// x.dims[i] + paddings[i][0] + paddings[i][1].
Status PadShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 2));
  if (c->num_inputs() > 2) TW_RETURN_IF_ERROR(c->WithRank(2, 0));
  const PartialShape& x = c->input(0);
  const PartialShape& p = c->input(1);
  if (p.known_rank() && p.dim(1) >= 0 && p.dim(1) != 2) {
    return errors::InvalidArgument("Pad: paddings must be of shape [rank, 2], got ", p.ToString());
  }
  if (x.known_rank() && p.known_rank() && p.dim(0) >= 0 && p.dim(0) != x.rank()) {
    return errors::InvalidArgument("Pad: paddings of shape ", p.ToString(), " must have one row per axis of x of shape ",
                                   x.ToString());
  }
  const Tensor* pv = c->input_value(1);
  if (!x.known_rank()) {
    if (!p.known_rank() || p.dim(0) < 0) {
      c->set_output(0, PartialShape::Unknown());
    } else {
      TW_ASSIGN_OR_RETURN(int rank, RankFromLength("Pad", "paddings", p.dim(0)));
      c->set_output(0, PartialShape::UnknownOfRank(rank));
    }
    return Status::OK();
  }
  std::vector<int64_t> out = x.dims();
  for (int i = 0; i < x.rank(); ++i) {
    if (pv == nullptr) {
      out[static_cast<size_t>(i)] = -1;
      continue;
    }
    int64_t before = 0, after = 0;
    if (pv->dtype() == kInt32) {
      before = pv->data<int32_t>()[2 * i];
      after = pv->data<int32_t>()[2 * i + 1];
    } else {
      before = pv->data<int64_t>()[2 * i];
      after = pv->data<int64_t>()[2 * i + 1];
    }
    if (before < 0 || after < 0) {
      return errors::InvalidArgument("Pad: paddings must be non-negative, got ", before, " and ", after, " at axis ", i);
    }
    if (x.dim(i) < 0) continue;
    const std::optional<int64_t> padded = CheckedAdd(x.dim(i), before);
    const std::optional<int64_t> total = padded ? CheckedAdd(*padded, after) : std::nullopt;
    if (!total) {
      return errors::InvalidArgument("Pad: dimension ", i, " of x of shape ", x.ToString(), " padded by ", before,
                                     " and ", after, " overflows");
    }
    out[static_cast<size_t>(i)] = *total;
  }
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

// x's shape; the axes, when known, checked against x's rank as the kernel
// checks them.
Status ReverseShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 1));
  const PartialShape& x = c->input(0);
  c->set_output(0, x);
  auto axes = shape_fns::KnownIntVector(c, 1);
  if (!x.known_rank() || !axes) return Status::OK();
  return ReversedAxes(*axes, x.rank(), x.ToString()).status();
}

template <typename T>
StatusOr<int64_t> ConstRangeCount(const Tensor* s, const Tensor* l, const Tensor* d) {
  return RangeCount<T>(s->data<T>()[0], l->data<T>()[0], d->data<T>()[0]);
}

// The count when start, limit and delta are constants.
Status RangeShape(InferenceContext* c) {
  for (int i = 0; i < 3; ++i) TW_RETURN_IF_ERROR(c->WithRank(i, 0));
  const Tensor* s = c->input_value(0);
  const Tensor* l = c->input_value(1);
  const Tensor* d = c->input_value(2);
  if (s == nullptr || l == nullptr || d == nullptr || s->NumElements() != 1 || l->NumElements() != 1 ||
      d->NumElements() != 1) {
    c->set_output(0, PartialShape({-1}));
    return Status::OK();
  }
  StatusOr<int64_t> n = errors::InvalidArgument("Range: unsupported dtype");
  switch (s->dtype()) {
    case kInt32: n = ConstRangeCount<int32_t>(s, l, d); break;
    case kInt64: n = ConstRangeCount<int64_t>(s, l, d); break;
    case kFloat32: n = ConstRangeCount<float>(s, l, d); break;
    case kFloat64: n = ConstRangeCount<double>(s, l, d); break;
    default: break;
  }
  TW_RETURN_IF_ERROR(n.status());
  c->set_output(0, PartialShape({*n}));
  return Status::OK();
}

}  // namespace

void RegisterLayoutOps(OpRegistry& r) {
  const std::vector<DataType> ints = {kInt32, kInt64};
  r.Register(OpDefBuilder("Transpose")
                 .Input("x", "T")
                 .Input("perm", "Tperm")
                 .Output("y", "T")
                 .TypeAttr("T", AllTypes())
                 .TypeAttr("Tperm", ints, kInt32)
                 .Shape(TransposeShape)
                 .Doc("Permutes x's axes: output axis i is input axis perm[i].")
                 .Build()).Check();
  r.Register(OpDefBuilder("InvertPermutation")
                 .Input("x", "T")
                 .Output("y", "T")
                 .TypeAttr("T", ints, kInt32)
                 .Shape(InvertPermutationShape)
                 .Doc("The inverse of a permutation.")
                 .Build()).Check();
  r.Register(OpDefBuilder("Tile")
                 .Input("input", "T")
                 .Input("multiples", "Tmultiples")
                 .Output("output", "T")
                 .TypeAttr("T", AllTypes())
                 .TypeAttr("Tmultiples", ints, kInt32)
                 .Shape(TileShape)
                 .Doc("input repeated multiples[i] times along axis i.")
                 .Build()).Check();
  r.Register(OpDefBuilder("Pad")
                 .Input("input", "T")
                 .Input("paddings", "Tpaddings")
                 .Output("output", "T")
                 .TypeAttr("T", AllTypes())
                 .TypeAttr("Tpaddings", ints, kInt32)
                 .Shape(PadShape)
                 .Doc("input padded with zeros.")
                 .Build()).Check();
  r.Register(OpDefBuilder("PadV2")
                 .Input("input", "T")
                 .Input("paddings", "Tpaddings")
                 .Input("constant_values", "T")
                 .Output("output", "T")
                 .TypeAttr("T", AllTypes())
                 .TypeAttr("Tpaddings", ints, kInt32)
                 .Shape(PadShape)
                 .Doc("input padded with a constant.")
                 .Build()).Check();
  r.Register(OpDefBuilder("ReverseV2")
                 .Input("tensor", "T")
                 .Input("axis", "Tidx")
                 .Output("output", "T")
                 .TypeAttr("T", AllTypes())
                 .TypeAttr("Tidx", ints, kInt32)
                 .Shape(ReverseShape)
                 .Doc("tensor with the order of its elements reversed along each axis in `axis`.")
                 .Build()).Check();
  r.Register(OpDefBuilder("Range")
                 .Input("start", "Tidx")
                 .Input("limit", "Tidx")
                 .Input("delta", "Tidx")
                 .Output("output", "Tidx")
                 .TypeAttr("Tidx", {kInt32, kInt64, kFloat32, kFloat64}, kInt32)
                 .Shape(RangeShape)
                 .Doc("[start, start + delta, ...) up to limit.")
                 .Build()).Check();
}

Output Transpose(const Scope& scope, const Output& x, const Output& perm) {
  return NodeBuilder(scope, "Transpose").Input(x).Input(perm).Finalize();
}
Output Transpose(const Scope& scope, const Output& x, const std::vector<int32_t>& perm) {
  return Transpose(scope, x, Const(scope.WithOpName("Transpose/perm"), perm));
}
Output InvertPermutation(const Scope& scope, const Output& x) {
  return NodeBuilder(scope, "InvertPermutation").Input(x).Finalize();
}
Output Tile(const Scope& scope, const Output& x, const Output& multiples) {
  return NodeBuilder(scope, "Tile").Input(x).Input(multiples).Finalize();
}
Output Pad(const Scope& scope, const Output& x, const Output& paddings) {
  return NodeBuilder(scope, "Pad").Input(x).Input(paddings).Finalize();
}
Output Pad(const Scope& scope, const Output& x, const Output& paddings, const Output& constant_value) {
  return NodeBuilder(scope, "PadV2").Input(x).Input(paddings).Input(constant_value).Finalize();
}
Output Reverse(const Scope& scope, const Output& x, const Output& axis) {
  return NodeBuilder(scope, "ReverseV2").Input(x).Input(axis).Finalize();
}
Output Reverse(const Scope& scope, const Output& x, const std::vector<int32_t>& axis) {
  return Reverse(scope, x, Const(scope.WithOpName("ReverseV2/axis"), axis));
}
Output Range(const Scope& scope, const Output& start, const Output& limit, const Output& delta) {
  return NodeBuilder(scope, "Range").Input(start).Input(limit).Input(delta).Finalize();
}

}  // namespace tw
