#include "towerflow/kernels/layout_args.h"

#include <limits>

#include "towerflow/graph/ops/reverse_axes.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace layout {

using shape_util::RowMajorStrides;
using shape_util::VecStr;

StatusOr<std::vector<int64_t>> IntList(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.rank() != 1 || (t.dtype() != kInt32 && t.dtype() != kInt64)) {
    return errors::InvalidArgument(what, " must be an int32 or int64 vector, got ", t.DebugString());
  }
  std::vector<int64_t> v(static_cast<size_t>(t.NumElements()));
  for (size_t k = 0; k < v.size(); ++k) {
    v[k] = t.dtype() == kInt32 ? t.data<int32_t>()[k] : t.data<int64_t>()[k];
  }
  return v;
}

Status CheckPermutation(const char* what, const std::vector<int64_t>& perm, int64_t n) {
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= n || seen[static_cast<size_t>(p)]) {
      return errors::InvalidArgument(what, ": ", VecStr(perm), " is not a permutation of [0, ", n, ")");
    }
    seen[static_cast<size_t>(p)] = true;
  }
  return Status::OK();
}

StatusOr<CopyPlan> TransposeOutput(OpKernelContext* ctx, Tensor** out) {
  *out = nullptr;
  const Tensor& x = ctx->input(0);
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> perm, IntList(ctx, 1, "Transpose: perm"));
  const int rank = x.rank();
  if (static_cast<int64_t>(perm.size()) != rank) {
    return errors::InvalidArgument("Transpose: perm ", VecStr(perm), " must have one axis per axis of x of shape ",
                                   x.shape().ToString());
  }
  for (int64_t& p : perm) {
    if (p < 0 && p >= -rank) p += rank;  // counted from the end, as TF's
  }
  TW_RETURN_IF_ERROR(CheckPermutation("Transpose: perm", perm, rank));
  const std::vector<int64_t> in_strides = RowMajorStrides(x.shape().dims());
  CopyPlan plan;
  bool identity = true;
  for (int i = 0; i < rank; ++i) {
    const size_t p = static_cast<size_t>(perm[static_cast<size_t>(i)]);
    identity = identity && p == static_cast<size_t>(i);
    plan.dims.push_back(x.shape().dim(static_cast<int>(p)));
    plan.src_strides.push_back(in_strides[p]);
  }
  if (identity) {
    ctx->set_output(0, x);
    return plan;
  }
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape(plan.dims), out));
  return plan;
}

StatusOr<CopyPlan> ReverseOutput(OpKernelContext* ctx, Tensor** out) {
  *out = nullptr;
  const Tensor& x = ctx->input(0);
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntList(ctx, 1, "ReverseV2: axis"));
  const int64_t rank = x.rank();
  CopyPlan plan;
  plan.dims = x.shape().dims();
  plan.src_strides = RowMajorStrides(plan.dims);
  TW_ASSIGN_OR_RETURN(std::vector<bool> reversed, ReversedAxes(axes, rank, x.shape().ToString()));
  bool identity = true;
  for (size_t k = 0; k < reversed.size(); ++k) {
    if (!reversed[k] || plan.dims[k] <= 1) continue;
    identity = false;
    plan.src_offset += (plan.dims[k] - 1) * plan.src_strides[k];
    plan.src_strides[k] = -plan.src_strides[k];
  }
  if (identity || x.NumElements() == 0) {
    ctx->set_output(0, x);
    return plan;
  }
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, x.shape(), out));
  return plan;
}

StatusOr<std::vector<int64_t>> TileOutput(OpKernelContext* ctx, Tensor** out) {
  const Tensor& x = ctx->input(0);
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> m, IntList(ctx, 1, "Tile: multiples"));
  const int rank = x.rank();
  if (static_cast<int64_t>(m.size()) != rank) {
    return errors::InvalidArgument("Tile: multiples ", VecStr(m), " must have one element per axis of x of shape ",
                                   x.shape().ToString());
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    const int64_t k = m[static_cast<size_t>(i)];
    if (k < 0) return errors::InvalidArgument("Tile: multiples must be non-negative, got ", VecStr(m));
    if (k != 0 && x.shape().dim(i) > std::numeric_limits<int64_t>::max() / k) {
      return errors::InvalidArgument("Tile: x of shape ", x.shape().ToString(), " tiled ", VecStr(m),
                                     " times overflows");
    }
    dims.push_back(x.shape().dim(i) * k);
  }
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return m;
}

StatusOr<std::vector<int64_t>> PadOutput(OpKernelContext* ctx, Tensor** out) {
  const Tensor& x = ctx->input(0);
  const Tensor& p = ctx->input(1);
  const int rank = x.rank();
  if (p.rank() != 2 || p.shape().dim(0) != rank || p.shape().dim(1) != 2 ||
      (p.dtype() != kInt32 && p.dtype() != kInt64)) {
    return errors::InvalidArgument("Pad: paddings must be an int32 or int64 matrix of shape [", rank,
                                   ", 2] for x of shape ", x.shape().ToString(), ", got ", p.DebugString());
  }
  if (ctx->num_inputs() > 2 && ctx->input(2).rank() != 0) {
    return errors::InvalidArgument("PadV2: constant_values must be a scalar, got ",
                                   ctx->input(2).shape().ToString());
  }
  std::vector<int64_t> before, dims;
  for (int i = 0; i < rank; ++i) {
    const int64_t b = p.dtype() == kInt32 ? p.data<int32_t>()[2 * i] : p.data<int64_t>()[2 * i];
    const int64_t a = p.dtype() == kInt32 ? p.data<int32_t>()[2 * i + 1] : p.data<int64_t>()[2 * i + 1];
    if (b < 0 || a < 0) {
      return errors::InvalidArgument("Pad: paddings must be non-negative, got ", b, " and ", a, " at axis ", i);
    }
    if (b > std::numeric_limits<int64_t>::max() / 4 || a > std::numeric_limits<int64_t>::max() / 4) {
      return errors::InvalidArgument("Pad: paddings ", b, " and ", a, " at axis ", i, " are too large");
    }
    before.push_back(b);
    dims.push_back(x.shape().dim(i) + b + a);
  }
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return before;
}

}  // namespace layout
}  // namespace tw
