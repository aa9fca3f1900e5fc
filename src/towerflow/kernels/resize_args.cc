#include "towerflow/kernels/resize_args.h"

#include <limits>

namespace tw {
namespace resize {

Status ReadAttrs(const OpKernelConstruction& c, Attrs* attrs, bool has_half_pixel_centers) {
  TW_RETURN_IF_ERROR(c.GetAttr("align_corners", &attrs->align_corners));
  if (has_half_pixel_centers) TW_RETURN_IF_ERROR(c.GetAttr("half_pixel_centers", &attrs->half_pixel_centers));
  if (attrs->align_corners && attrs->half_pixel_centers) {
    return errors::InvalidArgument("If half_pixel_centers is True, align_corners must be False.");
  }
  return Status::OK();
}

float Scale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 && in > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

StatusOr<std::pair<int64_t, int64_t>> SizeArg(OpKernelContext* ctx, int i, const char* op) {
  const Tensor& size = ctx->input(i);
  if (size.dtype() != kInt32 || size.rank() != 1 || size.NumElements() != 2) {
    return errors::InvalidArgument(op, ": size must be an int32 vector of two elements [height, width], got ",
                                   size.DebugString());
  }
  const int32_t h = size.data<int32_t>()[0], w = size.data<int32_t>()[1];
  if (h <= 0 || w <= 0) {
    return errors::InvalidArgument(op, ": output dimensions must be positive, got size [", h, ", ", w, "]");
  }
  return std::make_pair(int64_t{h}, int64_t{w});
}

Status CheckImages(const Tensor& images, const char* what, const char* op) {
  if (images.rank() != 4) {
    return errors::InvalidArgument(op, ": ", what, " must be 4-dimensional [batch, height, width, channels], got ",
                                   images.shape().ToString());
  }
  for (int d = 1; d < 3; ++d) {
    if (images.dim(d) > std::numeric_limits<int32_t>::max()) {
      return errors::InvalidArgument(op, ": ", what, " of shape ", images.shape().ToString(),
                                     " is larger than int32 in height or width");
    }
  }
  return Status::OK();
}

StatusOr<Geometry> Output(OpKernelContext* ctx, const Attrs& attrs, const char* op, Tensor** out) {
  const Tensor& images = ctx->input(0);
  TW_RETURN_IF_ERROR(CheckImages(images, "input", op));
  TW_ASSIGN_OR_RETURN(auto hw, SizeArg(ctx, 1, op));
  if (images.dim(1) == 0 || images.dim(2) == 0) {
    return errors::InvalidArgument(op, ": input image must be of non-zero size, got shape ",
                                   images.shape().ToString());
  }
  if (images.dim(3) == 0) {
    return errors::InvalidArgument(op, ": image must have at least one channel, got shape ",
                                   images.shape().ToString());
  }
  Geometry g{images.dim(0), images.dim(1), images.dim(2), images.dim(3), hw.first, hw.second};
  g.h_scale = Scale(g.in_h, g.out_h, attrs.align_corners);
  g.w_scale = Scale(g.in_w, g.out_w, attrs.align_corners);
  TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make({g.batch, g.out_h, g.out_w, g.channels}));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, out));
  return g;
}

StatusOr<Geometry> GradGeometry(OpKernelContext* ctx, const Attrs& attrs, const char* op) {
  const Tensor& grads = ctx->input(0);
  const Tensor& original = ctx->input(1);
  TW_RETURN_IF_ERROR(CheckImages(grads, "grads", op));
  TW_RETURN_IF_ERROR(CheckImages(original, "original_image", op));
  if (grads.dim(0) != original.dim(0) || grads.dim(3) != original.dim(3)) {
    return errors::InvalidArgument(op, ": grads of shape ", grads.shape().ToString(), " and original_image of shape ",
                                   original.shape().ToString(), " must agree in batch and channels");
  }
  if (grads.dim(1) == 0 || grads.dim(2) == 0) {
    return errors::InvalidArgument(op, ": resized dimensions must be positive, got grads of shape ",
                                   grads.shape().ToString());
  }
  if (original.dim(1) == 0 || original.dim(2) == 0) {
    return errors::InvalidArgument(op, ": original dimensions must be positive, got original_image of shape ",
                                   original.shape().ToString());
  }
  Geometry g{grads.dim(0), original.dim(1), original.dim(2), grads.dim(3), grads.dim(1), grads.dim(2)};
  g.h_scale = Scale(g.in_h, g.out_h, attrs.align_corners);
  g.w_scale = Scale(g.in_w, g.out_w, attrs.align_corners);
  return g;
}

}  // namespace resize
}  // namespace tw
