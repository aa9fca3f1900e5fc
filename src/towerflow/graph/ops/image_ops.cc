// Schemas and builders of the resize ops (ResizeBilinear,
// ResizeNearestNeighbor, ResizeBicubic, their gradients, ResizeArea) and of
// SampleDistortedBoundingBox (V1 and V2). Kernels in kernels/image_kernels.cc,
// bicubic_area_kernels.cc and bounding_box_kernels.cc; gradients in
// graph/grads/image_grad.cc. Shape functions check what is known when the
// graph is built; the kernels check again on the real values.
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

// A resize's inputs (images of ImageTypes, size int32 [2]), its output
// (resized_images of `output`: "float" or "T") and shape function.
OpDefBuilder ResizeSchema(OpDefBuilder b, const char* output) {
  return std::move(b.Input("images", "T")
                       .Input("size", "int32")
                       .Output("resized_images", output)
                       .TypeAttr("T", ImageTypes())
                       .Shape([](InferenceContext* c) { return ResizedShape(c, 0, 1); }));
}

// The gradient of a resize has the original image's shape.
Status ResizeGradShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 4));
  TW_RETURN_IF_ERROR(c->WithRank(1, 4));
  c->set_output(0, c->input(1).known_rank() ? c->input(1) : PartialShape::UnknownOfRank(4));
  return Status::OK();
}

// image_size [3], bounding_boxes [batch, N, 4], min_object_covered (V2) a
// scalar; outputs begin [3], size [3], bboxes [1, 1, 4].
Status DistortedBoxShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 1));
  TW_RETURN_IF_ERROR(c->WithRank(1, 3));
  const PartialShape& size = c->input(0);
  if (size.known_rank() && size.dim(0) >= 0 && size.dim(0) != 3) {
    return errors::InvalidArgument("image_size must have 3 elements [height, width, channels], got shape ",
                                   size.ToString());
  }
  const PartialShape& boxes = c->input(1);
  if (boxes.known_rank() && boxes.dim(2) >= 0 && boxes.dim(2) != 4) {
    return errors::InvalidArgument("bounding_boxes must be [batch, num_boxes, 4], got shape ", boxes.ToString());
  }
  if (c->num_inputs() > 2) TW_RETURN_IF_ERROR(c->WithRank(2, 0));
  c->set_output(0, PartialShape({3}));
  c->set_output(1, PartialShape({3}));
  c->set_output(2, PartialShape({1, 1, 4}));
  return Status::OK();
}

OpDefBuilder DistortedBoxOp(const char* name) {
  return std::move(OpDefBuilder(name)
                       .Input("image_size", "T")
                       .Input("bounding_boxes", "float")
                       .Output("begin", "T")
                       .Output("size", "T")
                       .Output("bboxes", "float")
                       .TypeAttr("T", {kUInt8, kInt32, kInt64})
                       .Attr("seed", int64_t{0})
                       .Attr("seed2", int64_t{0})
                       .Attr("aspect_ratio_range", std::vector<double>{0.75, 1.33})
                       .Attr("area_range", std::vector<double>{0.05, 1.0})
                       .Attr("max_attempts", int64_t{100})
                       .Attr("use_image_if_no_bounding_boxes", false)
                       .Stateful()
                       .Shape(DistortedBoxShape)
                       .Doc("A random crop of an image covering enough of one of its bounding boxes."));
}

}  // namespace

void RegisterImageOps(OpRegistry& r) {
  struct Interpolating {
    const char* op;
    const char* output;  // "float" or the images' "T"
    const char* doc;
  };
  for (const Interpolating& i : {
           Interpolating{"ResizeBilinear", "float", "images resized to size by bilinear interpolation (float32)."},
           Interpolating{"ResizeNearestNeighbor", "T", "images resized to size by taking the nearest pixel."},
           Interpolating{"ResizeBicubic", "float", "images resized to size by bicubic interpolation (float32)."}}) {
    r.Register(ResizeSchema(Resize(i.op, i.doc), i.output).Build()).Check();
  }
  r.Register(ResizeSchema(std::move(OpDefBuilder("ResizeArea").Attr("align_corners", false).Doc(
                              "images resized to size by averaging the area each output pixel covers (float32).")),
                          "float")
                 .Build()).Check();
  for (const char* op : {"ResizeBilinearGrad", "ResizeBicubicGrad"}) {
    r.Register(Resize(op, "The gradient of a resize with respect to its images.")
                   .Input("grads", "float")
                   .Input("original_image", "T")
                   .Output("output", "T")
                   .TypeAttr("T", FloatTypes())
                   .Shape(ResizeGradShape)
                   .Build()).Check();
  }
  r.Register(Resize("ResizeNearestNeighborGrad", "The gradient of ResizeNearestNeighbor with respect to its images.")
                 .Input("grads", "T")
                 .Input("size", "int32")
                 .Output("output", "T")
                 .TypeAttr("T", FloatTypes())
                 .Shape([](InferenceContext* c) { return ResizedShape(c, 0, 1); })
                 .Build()).Check();
  r.Register(DistortedBoxOp("SampleDistortedBoundingBox").Attr("min_object_covered", 0.1).Build()).Check();
  r.Register(DistortedBoxOp("SampleDistortedBoundingBoxV2").Input("min_object_covered", "float").Build()).Check();
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
Output ResizeBicubic(const Scope& scope, const Output& images, const Output& size, ResizeOptions options) {
  return ResizeNode(scope, "ResizeBicubic", images, size, options);
}
Output ResizeBicubicGrad(const Scope& scope, const Output& grads, const Output& original_image,
                         ResizeOptions options) {
  return ResizeNode(scope, "ResizeBicubicGrad", grads, original_image, options);
}
Output ResizeArea(const Scope& scope, const Output& images, const Output& size, ResizeOptions options) {
  if (options.half_pixel_centers) {
    scope.UpdateStatus(errors::InvalidArgument("ResizeArea has no half_pixel_centers"));
    return Output();
  }
  return NodeBuilder(scope, "ResizeArea")
      .Input(images)
      .Input(size)
      .Attr("align_corners", options.align_corners)
      .Finalize();
}

DistortedBox SampleDistortedBoundingBox(const Scope& scope, const Output& image_size, const Output& bounding_boxes,
                                        const Output& min_object_covered, const DistortedBoxOptions& options) {
  const auto doubles = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  Node* n = NodeBuilder(scope, "SampleDistortedBoundingBoxV2")
                .Input(image_size)
                .Input(bounding_boxes)
                .Input(min_object_covered)
                .Attr("seed", options.seed)
                .Attr("seed2", options.seed2)
                .Attr("aspect_ratio_range", doubles(options.aspect_ratio_range))
                .Attr("area_range", doubles(options.area_range))
                .Attr("max_attempts", options.max_attempts)
                .Attr("use_image_if_no_bounding_boxes", options.use_image_if_no_bounding_boxes)
                .Finalize();
  if (n == nullptr) return {};
  return {Output(n, 0), Output(n, 1), Output(n, 2)};
}

}  // namespace tw
