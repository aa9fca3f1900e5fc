// Schemas and builders of the colour-space ops: RGBToHSV, HSVToRGB,
// AdjustHue, AdjustSaturation, AdjustContrastv2 (kernels in kernels/color_kernels.cc). As TF's:
// RGBToHSV and HSVToRGB need a known last dimension of 3 when the graph knows
// it; AdjustHue and AdjustSaturation check their channels when they run
// (AdjustContrastv2 takes any number).
#include "towerflow/graph/ops/color_ops.h"

#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

// Rank at least 1, a last dimension of 3 where known; the input's shape
// with that last dimension 3.
Status ColorspaceShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 1));
  const PartialShape& in = c->input(0);
  if (!in.known_rank()) {
    c->set_output(0, in);
    return Status::OK();
  }
  std::vector<int64_t> dims = in.dims();
  if (dims.back() >= 0 && dims.back() != 3) {
    return errors::InvalidArgument("the last dimension must hold 3 channels, got shape ", in.ToString());
  }
  dims.back() = 3;
  c->set_output(0, PartialShape(dims));
  return Status::OK();
}

// Images of rank 3 or more, unchanged. TF checks the contrast factor's rank
// here, the hue and saturation factors' when the op runs.
Status AdjustShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 3));
  c->set_output(0, c->input(0));
  return Status::OK();
}

Status AdjustContrastShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(1, 0));
  return AdjustShape(c);
}

}  // namespace

void RegisterColorOps(OpRegistry& r) {
  r.Register(OpDefBuilder("RGBToHSV")
                 .Input("images", "T")
                 .Output("output", "T")
                 .TypeAttr("T", FloatTypes())
                 .Shape(ColorspaceShape)
                 .Doc("RGB pixels (the last dimension) as hue, saturation and value.")
                 .Build()).Check();
  r.Register(OpDefBuilder("HSVToRGB")
                 .Input("images", "T")
                 .Output("output", "T")
                 .TypeAttr("T", FloatTypes())
                 .Shape(ColorspaceShape)
                 .Doc("HSV pixels (the last dimension) as RGB.")
                 .Build()).Check();
  r.Register(OpDefBuilder("AdjustHue")
                 .Input("images", "T")
                 .Input("delta", "float")
                 .Output("output", "T")
                 .TypeAttr("T", {kFloat32})
                 .Shape(AdjustShape)
                 .Doc("The hue of RGB images turned by delta (in turns).")
                 .Build()).Check();
  r.Register(OpDefBuilder("AdjustContrastv2")
                 .Input("images", "T")
                 .Input("contrast_factor", "float")
                 .Output("output", "T")
                 .TypeAttr("T", {kFloat32})
                 .Shape(AdjustContrastShape)
                 .Doc("Each channel of each image moved away from its mean by contrast_factor.")
                 .Build()).Check();
  r.Register(OpDefBuilder("AdjustSaturation")
                 .Input("images", "T")
                 .Input("scale", "float")
                 .Output("output", "T")
                 .TypeAttr("T", {kFloat32})
                 .Shape(AdjustShape)
                 .Doc("The saturation of RGB images multiplied by scale, clamped to [0, 1].")
                 .Build()).Check();
}

Output RGBToHSV(const Scope& scope, const Output& images) {
  return NodeBuilder(scope, "RGBToHSV").Input(images).Finalize();
}
Output HSVToRGB(const Scope& scope, const Output& images) {
  return NodeBuilder(scope, "HSVToRGB").Input(images).Finalize();
}
Output AdjustHue(const Scope& scope, const Output& images, const Output& delta) {
  return NodeBuilder(scope, "AdjustHue").Input(images).Input(delta).Finalize();
}
Output AdjustContrast(const Scope& scope, const Output& images, const Output& contrast_factor) {
  return NodeBuilder(scope, "AdjustContrastv2").Input(images).Input(contrast_factor).Finalize();
}
Output AdjustSaturation(const Scope& scope, const Output& images, const Output& scale) {
  return NodeBuilder(scope, "AdjustSaturation").Input(images).Input(scale).Finalize();
}

}  // namespace tw
