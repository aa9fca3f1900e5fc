// Gradients of the resize ops (graph/ops/image_ops.cc), as TF's: the images'
// gradient spreads dy back over the pixels each output read; `size` is an
// integer and gets none. ResizeBilinear and ResizeBicubic of integer images
// have no gradient (their gradient ops write float or double); the gradient
// ops themselves have none; ResizeArea and the colour ops (color_ops.h) have
// none either, marked as TF marks them.
#include "towerflow/graph/grads/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/image_ops.h"

namespace tw {
namespace {

using Grads = std::vector<Output>;

// The resize attrs of `op`, copied onto a gradient node being built.
NodeBuilder& WithResizeAttrs(NodeBuilder& b, const Node& op) {
  for (const char* attr : {"align_corners", "half_pixel_centers"}) {
    if (const AttrValue* v = op.attrs().Find(attr)) b.Attr(attr, *v);
  }
  return b;
}

// ResizeBilinear and ResizeBicubic: their gradient op reads dy and the images.
template <const char* kGradOp>
Status InterpolatingResizeGradFn(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output images = op.input(0);
  if (images.dtype() != kFloat32 && images.dtype() != kFloat64) return Status::OK();
  NodeBuilder b(s, kGradOp);
  b.Input(dy[0]).Input(images);
  (*dx)[0] = WithResizeAttrs(b, op).Finalize();
  return s.status();
}
constexpr char kBilinearGrad[] = "ResizeBilinearGrad";
constexpr char kBicubicGrad[] = "ResizeBicubicGrad";

Status ResizeNearestNeighborGradFn(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  const Output images = op.input(0);
  if (images.dtype() != kFloat32 && images.dtype() != kFloat64) return Status::OK();
  // The input's [height, width]: constants when the graph knows them.
  const PartialShape& shape = images.shape();
  Output hw;
  if (shape.known_rank() && shape.dim(1) >= 0 && shape.dim(2) >= 0) {
    hw = Const(s, std::vector<int32_t>{static_cast<int32_t>(shape.dim(1)), static_cast<int32_t>(shape.dim(2))});
  } else {
    hw = Slice(s, Shape(s, images), std::vector<int32_t>{1}, {2});
  }
  NodeBuilder b(s, "ResizeNearestNeighborGrad");
  b.Input(dy[0]).Input(hw);
  (*dx)[0] = WithResizeAttrs(b, op).Finalize();
  return s.status();
}

}  // namespace

void RegisterImageGradients(GradientRegistry& r) {
  r.Register("ResizeBilinear", InterpolatingResizeGradFn<kBilinearGrad>);
  r.Register("ResizeBicubic", InterpolatingResizeGradFn<kBicubicGrad>);
  r.Register("ResizeNearestNeighbor", ResizeNearestNeighborGradFn);
  r.RegisterNoGradient("ResizeBilinearGrad");
  r.RegisterNoGradient("ResizeNearestNeighborGrad");
  r.RegisterNoGradient("ResizeBicubicGrad");
  // A random crop's integers, as TF's.
  r.RegisterNoGradient("SampleDistortedBoundingBox");
  r.RegisterNoGradient("SampleDistortedBoundingBoxV2");
  // As TF1 (TF2 added one for RGBToHSV): asking for these is an error; HSVToRGB
  // passes none, as TF's (it is marked not differentiable there).
  for (const char* op : {"ResizeArea", "RGBToHSV", "AdjustHue", "AdjustSaturation", "AdjustContrastv2"}) {
    r.RegisterGradientUndefined(op);
  }
  r.RegisterNoGradient("HSVToRGB");
}

}  // namespace tw
