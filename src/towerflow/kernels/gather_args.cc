#include "towerflow/kernels/gather_args.h"

#include <algorithm>

namespace tw {
namespace gather {
namespace {

// "[i,j]": the position of flat element k in a tensor of `shape`.
std::string Position(const TensorShape& shape, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = shape.dim(d) == 0 ? 0 : k % shape.dim(d);
    k = shape.dim(d) == 0 ? 0 : k / shape.dim(d);
  }
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? "," : "") + std::to_string(idx[i]);
  return s + "]";
}

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

}  // namespace

int64_t IndexAt(const Tensor& t, int64_t k) {
  switch (t.dtype()) {
    case kInt32: return t.data<int32_t>()[k];
    case kUInt8: return t.data<uint8_t>()[k];
    default: return t.data<int64_t>()[k];
  }
}

StatusOr<int64_t> ScalarInput(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.rank() != 0 || (t.dtype() != kInt32 && t.dtype() != kInt64)) {
    return errors::InvalidArgument(what, " must be an int32 or int64 scalar, got ", t.DebugString());
  }
  return IndexAt(t, 0);
}

StatusOr<GatherPlan> GatherOutput(OpKernelContext* ctx, Tensor** out) {
  const Tensor& params = ctx->input(0);
  const Tensor& indices = ctx->input(1);
  TW_ASSIGN_OR_RETURN(int64_t axis, ScalarInput(ctx, 2, "GatherV2: axis"));
  const int rank = params.rank();
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("GatherV2: axis ", axis, " is out of range for params of shape ",
                                   params.shape().ToString(), " (expected an axis in [", -rank, ", ", rank, "))");
  }
  if (axis < 0) axis += rank;
  const std::vector<int64_t>& dims = params.shape().dims();
  const size_t a = static_cast<size_t>(axis);
  GatherPlan plan;
  plan.outer = Product(dims, 0, a);
  plan.n = dims[a];
  plan.inner = Product(dims, a + 1, dims.size());
  const int64_t m = indices.NumElements();
  plan.indices.resize(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) {
    const int64_t v = IndexAt(indices, k);
    if (v < 0 || v >= plan.n) {
      return errors::InvalidArgument("GatherV2: indices", Position(indices.shape(), k), " = ", v,
                                     " is not in [0, ", plan.n, ")");
    }
    plan.indices[static_cast<size_t>(k)] = v;
  }
  std::vector<int64_t> out_dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(a));
  out_dims.insert(out_dims.end(), indices.shape().dims().begin(), indices.shape().dims().end());
  out_dims.insert(out_dims.end(), dims.begin() + static_cast<std::ptrdiff_t>(a) + 1, dims.end());
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(out_dims));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return plan;
}

StatusOr<SegmentSumPlan> UnsortedSegmentSumOutput(OpKernelContext* ctx, Tensor** out) {
  const Tensor& data = ctx->input(0);
  const Tensor& ids = ctx->input(1);
  SegmentSumPlan plan;
  TW_ASSIGN_OR_RETURN(plan.num, ScalarInput(ctx, 2, "UnsortedSegmentSum: num_segments"));
  if (plan.num < 0) {
    return errors::InvalidArgument("UnsortedSegmentSum: num_segments must be at least 0, got ", plan.num);
  }
  const std::vector<int64_t>& dims = data.shape().dims();
  const std::vector<int64_t>& id_dims = ids.shape().dims();
  if (id_dims.size() > dims.size() || !std::equal(id_dims.begin(), id_dims.end(), dims.begin())) {
    return errors::InvalidArgument("UnsortedSegmentSum: segment_ids of shape ", ids.shape().ToString(),
                                   " must be a prefix of data's shape ", data.shape().ToString());
  }
  plan.inner = Product(dims, id_dims.size(), dims.size());
  std::vector<int64_t> out_dims = {plan.num};
  out_dims.insert(out_dims.end(), dims.begin() + static_cast<std::ptrdiff_t>(id_dims.size()), dims.end());
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(out_dims));
  plan.ids.resize(static_cast<size_t>(ids.NumElements()));
  for (int64_t k = 0; k < ids.NumElements(); ++k) {
    const int64_t id = IndexAt(ids, k);
    if (id >= plan.num) {
      return errors::InvalidArgument("UnsortedSegmentSum: segment_ids", Position(ids.shape(), k), " = ", id,
                                     " is out of range [0, ", plan.num, ")");
    }
    plan.ids[static_cast<size_t>(k)] = id;
  }
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return plan;
}

StatusOr<OneHotPlan> OneHotOutput(OpKernelContext* ctx, int64_t axis, Tensor** out) {
  const Tensor& indices = ctx->input(0);
  OneHotPlan plan;
  TW_ASSIGN_OR_RETURN(plan.depth, ScalarInput(ctx, 1, "OneHot: depth"));
  if (plan.depth < 0) return errors::InvalidArgument("OneHot: depth must be non-negative, got: ", plan.depth);
  for (int i : {2, 3}) {
    if (ctx->input(i).rank() != 0) {
      return errors::InvalidArgument("OneHot: ", i == 2 ? "on_value" : "off_value", " must be a scalar, got ",
                                     ctx->input(i).shape().ToString());
    }
  }
  const int rank = indices.rank();
  if (axis < -1 || axis > rank) {
    return errors::InvalidArgument("OneHot: axis ", axis, " is out of range for indices of shape ",
                                   indices.shape().ToString(), " (expected -1 or an axis in [0, ", rank, "])");
  }
  const size_t at = axis == -1 ? static_cast<size_t>(rank) : static_cast<size_t>(axis);
  std::vector<int64_t> out_dims = indices.shape().dims();
  out_dims.insert(out_dims.begin() + static_cast<std::ptrdiff_t>(at), plan.depth);
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(out_dims));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  plan.suffix = Product(indices.shape().dims(), at, static_cast<size_t>(rank));
  return plan;
}

StatusOr<TensorShape> SelectV2Shape(OpKernelContext* ctx) {
  const TensorShape& a = ctx->input(0).shape();
  const TensorShape& b = ctx->input(1).shape();
  const TensorShape& c = ctx->input(2).shape();
  const int rank = std::max({a.rank(), b.rank(), c.rank()});
  std::vector<int64_t> out(static_cast<size_t>(rank), 1);
  for (const TensorShape* s : {&a, &b, &c}) {
    for (int i = 0; i < s->rank(); ++i) {
      int64_t& o = out[static_cast<size_t>(rank - s->rank() + i)];
      const int64_t d = s->dim(i);
      if (d == o || d == 1) continue;
      if (o != 1) {
        return errors::InvalidArgument("SelectV2: condition ", a.ToString(), ", t ", b.ToString(), " and e ",
                                       c.ToString(), " are not broadcast-compatible");
      }
      o = d;
    }
  }
  return TensorShape(out);
}

StatusOr<SelectForm> SelectV1Form(OpKernelContext* ctx) {
  const Tensor& c = ctx->input(0);
  const Tensor& t = ctx->input(1);
  const Tensor& e = ctx->input(2);
  if (t.shape() != e.shape()) {
    return errors::InvalidArgument("Select: t of shape ", t.shape().ToString(), " and e of shape ",
                                   e.shape().ToString(), " must have one shape");
  }
  if (c.rank() == 0) return SelectForm::kWhole;
  const bool rows = c.rank() == 1 && t.rank() > 1;
  if (rows ? c.shape().dim(0) != t.shape().dim(0) : c.shape() != t.shape()) {
    return errors::InvalidArgument("Select: condition of shape ", c.shape().ToString(),
                                   " must be a scalar, a vector of t's first dimension, or of t's shape ",
                                   t.shape().ToString());
  }
  return rows ? SelectForm::kRows : SelectForm::kElements;
}

}  // namespace gather
}  // namespace tw
