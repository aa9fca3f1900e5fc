#include "towerflow/kernels/lrn_args.h"

#include <limits>

namespace tw {
namespace lrn {

Status ReadAttrs(const OpKernelConstruction& c, Attrs* attrs) {
  TW_RETURN_IF_ERROR(c.GetAttr("depth_radius", &attrs->depth_radius));
  TW_RETURN_IF_ERROR(c.GetAttr("bias", &attrs->bias));
  TW_RETURN_IF_ERROR(c.GetAttr("alpha", &attrs->alpha));
  TW_RETURN_IF_ERROR(c.GetAttr("beta", &attrs->beta));
  if (attrs->depth_radius < 0 || attrs->depth_radius > std::numeric_limits<int32_t>::max()) {
    return errors::InvalidArgument(c.node().op(), ": depth_radius must be in [0, 2^31), got ",
                                   attrs->depth_radius);
  }
  return Status::OK();
}

Status CheckInput(OpKernelContext* ctx) {
  const Tensor& in = ctx->input(0);
  if (in.rank() != 4) {
    return errors::InvalidArgument("LRN: input must be 4-dimensional, got ", in.shape().ToString());
  }
  return Status::OK();
}

Status CheckGradInputs(OpKernelContext* ctx) {
  const TensorShape& g = ctx->input(0).shape();
  const TensorShape& in = ctx->input(1).shape();
  const TensorShape& out = ctx->input(2).shape();
  if (g.rank() != 4 || in != g || out != g) {
    return errors::InvalidArgument(
        "LRNGrad: input_grads, input_image and output_image must be 4-dimensional of one shape, got ", g.ToString(),
        ", ", in.ToString(), " and ", out.ToString());
  }
  return Status::OK();
}

}  // namespace lrn
}  // namespace tw
