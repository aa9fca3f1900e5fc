// Schemas and builders of the resize ops: ResizeBilinear,
// ResizeNearestNeighbor and their gradients (kernels in
// kernels/image_kernels.cc, gradients in graph/grads/image_grad.cc). Shape
// functions check what is known when the graph is built; the kernels check
// again on the real values.
#include "towerflow/graph/ops/image_ops.h"

#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

const std::vector<DataType>& ImageTypes() {
  static const std::vector<DataType> k = {kFloat32, kFloat64, kInt32, kInt64, kUInt8};
  return k;
}

// [batch of input `batch_from`, size, channels of input `batch_from`], size
// read from the int32 vector input `size_at` ([height, width]). As TF's, the
// values and the attrs are checked by the kernel, when the op runs.
Status ResizedShape(InferenceContext* c, int batch_from, int size_at) {
  TW_RETURN_IF_ERROR(c->WithRank(batch_from, 4));
  TW_RETURN_IF_ERROR(c->WithRank(size_at, 1));
  const PartialShape& size = c->input(size_at);
  if (size.known_rank() && size.dim(0) >= 0 && size.dim(0) != 2) {
    return errors::InvalidArgument("size must have two elements [new_height, new_width], got shape ",
                                   size.ToString());
  }
  std::vector<int64_t> hw = {-1, -1};
  if (auto known = shape_fns::KnownIntVector(c, size_at)) {
    for (size_t i = 0; i < 2 && i < known->size(); ++i) hw[i] = (*known)[i] > 0 ? (*known)[i] : -1;
  }
  const PartialShape& images = c->input(batch_from);
  const int64_t batch = images.known_rank() ? images.dim(0) : -1;
  const int64_t channels = images.known_rank() ? images.dim(3) : -1;
  c->set_output(0, PartialShape({batch, hw[0], hw[1], channels}));
  return Status::OK();
}

OpDefBuilder Resize(const char* name, const char* doc) {
  return std::move(OpDefBuilder(name).Attr("align_corners", false).Attr("half_pixel_centers", false).Doc(doc));
}

}  // namespace

void RegisterImageOps(OpRegistry& r) {
  r.Register(Resize("ResizeBilinear", "images resized to size by bilinear interpolation (float32).")
                 .Input("images", "T")
                 .Input("size", "int32")
                 .Output("resized_images", "float")
                 .TypeAttr("T", ImageTypes())
                 .Shape([](InferenceContext* c) { return ResizedShape(c, 0, 1); })
                 .Build()).Check();
  r.Register(Resize("ResizeNearestNeighbor", "images resized to size by taking the nearest pixel.")
                 .Input("images", "T")
                 .Input("size", "int32")
                 .Output("resized_images", "T")
                 .TypeAttr("T", ImageTypes())
                 .Shape([](InferenceContext* c) { return ResizedShape(c, 0, 1); })
                 .Build()).Check();
  r.Register(Resize("ResizeBilinearGrad", "The gradient of ResizeBilinear with respect to its images.")
                 .Input("grads", "float")
                 .Input("original_image", "T")
                 .Output("output", "T")
                 .TypeAttr("T", FloatTypes())
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(c->WithRank(0, 4));
                   TW_RETURN_IF_ERROR(c->WithRank(1, 4));
                   c->set_output(0, c->input(1).known_rank() ? c->input(1) : PartialShape::UnknownOfRank(4));
                   return Status::OK();
                 })
                 .Build()).Check();
  r.Register(Resize("ResizeNearestNeighborGrad", "The gradient of ResizeNearestNeighbor with respect to its images.")
                 .Input("grads", "T")
                 .Input("size", "int32")
                 .Output("output", "T")
                 .TypeAttr("T", FloatTypes())
                 .Shape([](InferenceContext* c) { return ResizedShape(c, 0, 1); })
                 .Build()).Check();
}

namespace {

Output ResizeNode(const Scope& scope, const char* op, const Output& a, const Output& b, ResizeOptions options) {
  return NodeBuilder(scope, op)
      .Input(a)
      .Input(b)
      .Attr("align_corners", options.align_corners)
      .Attr("half_pixel_centers", options.half_pixel_centers)
      .Finalize();
}

}  // namespace

Output ResizeBilinear(const Scope& scope, const Output& images, const Output& size, ResizeOptions options) {
  return ResizeNode(scope, "ResizeBilinear", images, size, options);
}
Output ResizeNearestNeighbor(const Scope& scope, const Output& images, const Output& size, ResizeOptions options) {
  return ResizeNode(scope, "ResizeNearestNeighbor", images, size, options);
}
Output ResizeBilinearGrad(const Scope& scope, const Output& grads, const Output& original_image,
                          ResizeOptions options) {
  return ResizeNode(scope, "ResizeBilinearGrad", grads, original_image, options);
}
Output ResizeNearestNeighborGrad(const Scope& scope, const Output& grads, const Output& size, ResizeOptions options) {
  return ResizeNode(scope, "ResizeNearestNeighborGrad", grads, size, options);
}

}  // namespace tw
