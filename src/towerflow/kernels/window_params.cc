#include "towerflow/kernels/window_params.h"

namespace tw::window {
namespace {

// [1, h, w, 1] with h, w >= 1.
bool IsNhwcWindow(const std::vector<int64_t>& v) {
  return v.size() == 4 && v[0] == 1 && v[3] == 1 && v[1] >= 1 && v[2] >= 1;
}

Status ParsePadding(const std::string& padding, bool* same) {
  if (padding != "SAME" && padding != "VALID") {
    return errors::InvalidArgument("attr 'padding' must be \"SAME\" or \"VALID\", got \"", padding, "\"");
  }
  *same = padding == "SAME";
  return Status::OK();
}

}  // namespace

Status ReadConvAttrs(const OpKernelConstruction& c, ConvAttrs* attrs) {
  std::string padding;
  TW_RETURN_IF_ERROR(c.GetAttr("strides", &attrs->strides));
  TW_RETURN_IF_ERROR(c.GetAttr("padding", &padding));
  if (!IsNhwcWindow(attrs->strides)) {
    return errors::InvalidArgument("attr 'strides' must be [1, h, w, 1] with h, w >= 1, got ",
                                   PartialShape(attrs->strides).ToString());
  }
  return ParsePadding(padding, &attrs->same);
}

StatusOr<TensorShape> ConvSizesInput(OpKernelContext* ctx, int i) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != kInt32 || t.rank() != 1 || t.NumElements() != 4) {
    return errors::InvalidArgument(ctx->node().op(), ": input ", i, " must be 4 int32 sizes, got ",
                                   t.DebugString());
  }
  const int32_t* p = t.data<int32_t>();
  return TensorShape::Make({p[0], p[1], p[2], p[3]});
}

Status CheckConvBackprop(OpKernelContext* ctx, const conv::ConvGeometry& g) {
  const TensorShape& dy = ctx->input(2).shape();
  if (dy != g.output_shape()) {
    return errors::InvalidArgument(ctx->node().op(), ": out_backprop has shape ", dy.ToString(),
                                   " but the convolution of input ", g.input_shape().ToString(),
                                   " by filter ", g.filter_shape().ToString(), " gives ",
                                   g.output_shape().ToString());
  }
  return Status::OK();
}

Status ReadPoolAttrs(const OpKernelConstruction& c, PoolAttrs* attrs) {
  std::string padding;
  TW_RETURN_IF_ERROR(c.GetAttr("ksize", &attrs->ksize));
  TW_RETURN_IF_ERROR(c.GetAttr("strides", &attrs->strides));
  TW_RETURN_IF_ERROR(c.GetAttr("padding", &padding));
  for (const auto* v : {&attrs->ksize, &attrs->strides}) {
    if (!IsNhwcWindow(*v)) {
      return errors::InvalidArgument("attrs 'ksize' and 'strides' must be [1, h, w, 1] with h, w >= 1, got ",
                                     PartialShape(*v).ToString());
    }
  }
  return ParsePadding(padding, &attrs->same);
}

StatusOr<PoolGeometry> MakePoolGeometry(const std::string& op, const PoolAttrs& attrs,
                                        const TensorShape& in) {
  if (in.rank() != 4) {
    return errors::InvalidArgument(op, ": input must be [N,H,W,C], got ", in.ToString());
  }
  PoolGeometry g{.n = in.dim(0),
                 .h = in.dim(1),
                 .w = in.dim(2),
                 .c = in.dim(3),
                 .kh = attrs.ksize[1],
                 .kw = attrs.ksize[2],
                 .sh = attrs.strides[1],
                 .sw = attrs.strides[2],
                 .oh = 0,
                 .ow = 0,
                 .pad_top = 0,
                 .pad_left = 0};
  auto oh = conv::Windowed(g.h, g.kh, g.sh, attrs.same, &g.pad_top);
  auto ow = conv::Windowed(g.w, g.kw, g.sw, attrs.same, &g.pad_left);
  if (!oh.ok() || !ow.ok()) {
    return errors::InvalidArgument(op, ": a VALID window of ", g.kh, "x", g.kw,
                                   " does not fit input of shape ", in.ToString());
  }
  g.oh = *oh;
  g.ow = *ow;
  return g;
}

StatusOr<PoolGeometry> CheckPoolGradInputs(OpKernelContext* ctx, const PoolAttrs& attrs, bool grad_of_grad) {
  const TensorShape& in = ctx->input(0).shape();
  TW_ASSIGN_OR_RETURN(PoolGeometry g, MakePoolGeometry(ctx->node().op(), attrs, in));
  const TensorShape out = g.output_shape();
  for (int i : {1, 2}) {
    const TensorShape& want = i == 2 && grad_of_grad ? in : out;
    const TensorShape& got = ctx->input(i).shape();
    if (got != want) {
      return errors::InvalidArgument(ctx->node().op(), ": input ", i, " has shape ", got.ToString(),
                                     " but pooling input ", in.ToString(), " requires ", want.ToString());
    }
  }
  return g;
}

StatusOr<PoolGeometry> AvgPoolGradGeometry(OpKernelContext* ctx, const PoolAttrs& attrs) {
  TW_ASSIGN_OR_RETURN(TensorShape in_shape, ConvSizesInput(ctx, 0));
  TW_ASSIGN_OR_RETURN(PoolGeometry g, MakePoolGeometry("AvgPoolGrad", attrs, in_shape));
  const Tensor& grad = ctx->input(1);
  if (grad.shape() != g.output_shape()) {
    return errors::InvalidArgument("AvgPoolGrad: grad has shape ", grad.shape().ToString(), " but pooling input ",
                                   in_shape.ToString(), " gives ", g.output_shape().ToString());
  }
  return g;
}

}  // namespace tw::window
