#include "towerflow/kernels/shape_util.h"

#include <cstdint>
#include <string>

namespace tw {
namespace shape_util {
namespace {

// Output 0 of shape `shape`: input 0 itself when it has that shape (*out
// nullptr), else allocated.
Status ForwardOrAllocate(OpKernelContext* ctx, const TensorShape& shape, Tensor** out) {
  const Tensor& x = ctx->input(0);
  if (shape == x.shape()) {
    ctx->set_output(0, x);
    *out = nullptr;
    return Status::OK();
  }
  return ctx->allocate_output(0, shape, out);
}

}  // namespace

Status FillOutput(OpKernelContext* ctx, Tensor** out) {
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntVector(ctx, 0, "Fill: dims"));
  const Tensor& value = ctx->input(1);
  if (value.rank() != 0) {
    return errors::InvalidArgument("Fill: value must be a scalar, got shape ", value.shape().ToString());
  }
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
  return ctx->allocate_output(0, shape, out);
}

Status ResolveSlice(const TensorShape& shape, const std::vector<int64_t>& begin, std::vector<int64_t>& size) {
  const std::vector<int64_t> given = size;
  auto fail = [&] {
    return errors::InvalidArgument("Slice: begin ", PartialShape(begin).ToString(), " and size ",
                                   PartialShape(given).ToString(), " are out of bounds for input of shape ",
                                   shape.ToString());
  };
  if (static_cast<int>(begin.size()) != shape.rank() || static_cast<int>(size.size()) != shape.rank()) {
    return fail();
  }
  for (int i = 0; i < shape.rank(); ++i) {
    const size_t k = static_cast<size_t>(i);
    if (size[k] == -1) size[k] = shape.dim(i) - begin[k];
    if (begin[k] < 0 || begin[k] > shape.dim(i) || size[k] < 0 || begin[k] + size[k] > shape.dim(i)) {
      return fail();
    }
  }
  return Status::OK();
}

StatusOr<SliceBox> SliceOutput(OpKernelContext* ctx, Tensor** out) {
  SliceBox box;
  TW_ASSIGN_OR_RETURN(box.begin, IntVector(ctx, 1, "Slice: begin"));
  TW_ASSIGN_OR_RETURN(box.size, IntVector(ctx, 2, "Slice: size"));
  TW_RETURN_IF_ERROR(ResolveSlice(ctx->input(0).shape(), box.begin, box.size));
  TW_RETURN_IF_ERROR(ForwardOrAllocate(ctx, TensorShape(box.size), out));
  return box;
}

StatusOr<SliceBox> SliceGradOutput(OpKernelContext* ctx, Tensor** out) {
  SliceBox box;
  TW_ASSIGN_OR_RETURN(box.begin, IntVector(ctx, 1, "SliceGrad: begin"));
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntVector(ctx, 2, "SliceGrad: input_shape"));
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
  box.size = ctx->input(0).shape().dims();
  TW_RETURN_IF_ERROR(ResolveSlice(shape, box.begin, box.size));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return box;
}

StatusOr<ConcatPlan> PlanConcat(OpKernelContext* ctx, const Tensor& axis_t) {
  const int n = ctx->num_inputs() - 1;
  if (axis_t.dtype() != kInt32 || axis_t.NumElements() != 1) {
    return errors::InvalidArgument("ConcatV2: axis must be one int32, got ", axis_t.DebugString());
  }
  const TensorShape& first = ctx->input(0).shape();
  const int rank = first.rank();
  int64_t axis = axis_t.data<int32_t>()[0];
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("ConcatV2: axis ", axis, " is out of range for values of shape ",
                                   first.ToString());
  }
  if (axis < 0) axis += rank;
  int64_t axis_size = 0;
  for (int i = 0; i < n; ++i) {
    const TensorShape& s = ctx->input(i).shape();
    bool ok = s.rank() == rank;
    for (int d = 0; ok && d < rank; ++d) ok = d == axis || s.dim(d) == first.dim(d);
    if (!ok) {
      return errors::InvalidArgument("ConcatV2: value shapes ", first.ToString(), " and ", s.ToString(),
                                     " differ outside axis ", axis);
    }
    // Inputs with a zero dimension are valid whatever their other dimensions,
    // so the joined axis, and the output's element count, can overflow int64.
    if (s.dim(static_cast<int>(axis)) > INT64_MAX - axis_size) {
      return errors::InvalidArgument("ConcatV2: the sizes along axis ", axis,
                                     " add up to more than int64 can count (value shapes ", first.ToString(),
                                     " and ", s.ToString(), ")");
    }
    axis_size += s.dim(static_cast<int>(axis));
  }
  std::vector<int64_t> out_dims = first.dims();
  out_dims[static_cast<size_t>(axis)] = axis_size;
  auto checked = TensorShape::Make(out_dims);
  if (!checked.ok()) {
    return errors::InvalidArgument("ConcatV2: the output ", checked.status().message(), " (value shapes ",
                                   first.ToString(), ", ...)");
  }
  return ConcatPlan{axis, *checked};
}

StatusOr<std::vector<int64_t>> BroadcastStrides(const char* op, const TensorShape& small,
                                                const TensorShape& big) {
  auto fail = [&] {
    return errors::InvalidArgument(op, ": shape ", small.ToString(), " is not broadcast-compatible with ",
                                   big.ToString());
  };
  if (small.rank() > big.rank()) return fail();
  const int off = big.rank() - small.rank();
  std::vector<int64_t> strides(static_cast<size_t>(big.rank()), 0);
  const std::vector<int64_t> own = RowMajorStrides(small.dims());
  for (int i = 0; i < small.rank(); ++i) {
    if (small.dim(i) == big.dim(i + off)) {
      strides[static_cast<size_t>(i + off)] = own[static_cast<size_t>(i)];
    } else if (small.dim(i) != 1) {
      return fail();
    }
  }
  return strides;
}

StatusOr<BroadcastArgs> BroadcastOutput(OpKernelContext* ctx, const char* op, bool to_shape, Tensor** out) {
  const std::string what = std::string(op) + ": shape";
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntVector(ctx, 1, what.c_str()));
  BroadcastArgs args;
  TW_ASSIGN_OR_RETURN(args.shape, TensorShape::Make(dims));
  const TensorShape& x = ctx->input(0).shape();
  TW_ASSIGN_OR_RETURN(args.strides,
                      to_shape ? BroadcastStrides(op, x, args.shape) : BroadcastStrides(op, args.shape, x));
  TW_RETURN_IF_ERROR(ForwardOrAllocate(ctx, args.shape, out));
  return args;
}

}  // namespace shape_util
}  // namespace tw
