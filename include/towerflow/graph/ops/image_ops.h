// Builders for the ops that resize images (ResizeBilinear,
// ResizeNearestNeighbor, ResizeBicubic and their gradients, ResizeArea) and
// for the random crop of Inception-style preprocessing
// (SampleDistortedBoundingBoxV2). Names, inputs, attrs, arithmetic and errors
// are TensorFlow's: images are NHWC ([batch, height, width, channels]),
// `size` an int32 vector [new_height, new_width] of positive values. Each
// returns the node's output, or a null Output with the error recorded in the
// scope (see scope.h). Colour-space ops: color_ops.h.
#ifndef TOWERFLOW_GRAPH_OPS_IMAGE_OPS_H_
#define TOWERFLOW_GRAPH_OPS_IMAGE_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

// Where output pixel (y, x) reads the input, as TF's attrs say:
//   default             in = out * (in_size / out_size)
//   align_corners       in = out * ((in_size - 1) / (out_size - 1)): the
//                       corner pixels' centers line up
//   half_pixel_centers  in = (out + 0.5) * (in_size / out_size) - 0.5 (bilinear;
//                       nearest-neighbour leaves out the - 0.5): pixel centers
//                       line up, as OpenCV and PIL resize
// TF1's tf.image.resize_images uses the default; both true is InvalidArgument.
struct ResizeOptions {
  bool align_corners = false;
  bool half_pixel_centers = false;
};

// images (float, double, int32, int64 or uint8) resized to `size` by bilinear
// interpolation in float: a float32 [batch, size[0], size[1], channels].
Output ResizeBilinear(const Scope& scope, const Output& images, const Output& size, ResizeOptions options = {});

// images resized to `size` by picking the nearest input pixel (rounded when
// align_corners, else floored): images' dtype.
Output ResizeNearestNeighbor(const Scope& scope, const Output& images, const Output& size,
                             ResizeOptions options = {});

// The gradient of ResizeBilinear with respect to its images: `grads` (float32,
// the resized shape) spread back over `original_image`'s shape, in its dtype
// (float or double).
Output ResizeBilinearGrad(const Scope& scope, const Output& grads, const Output& original_image,
                          ResizeOptions options = {});

// The gradient of ResizeNearestNeighbor: each element of `grads` (float or
// double) added to the input pixel it was read from; `size` is the input's
// [height, width].
Output ResizeNearestNeighborGrad(const Scope& scope, const Output& grads, const Output& size,
                                 ResizeOptions options = {});

// images resized to `size` by bicubic interpolation in float (Keys' cubic
// kernel, a = -0.75; a = -0.5 with half_pixel_centers, where taps outside
// the image weigh 0): a float32 [batch, size[0], size[1], channels].
Output ResizeBicubic(const Scope& scope, const Output& images, const Output& size, ResizeOptions options = {});

// The gradient of ResizeBicubic with respect to its images: `grads` (float32,
// the resized shape) spread back over `original_image`'s shape and dtype
// (float or double).
Output ResizeBicubicGrad(const Scope& scope, const Output& grads, const Output& original_image,
                         ResizeOptions options = {});

// images resized to `size` by area averaging: each output pixel the mean of
// the input area it covers (a float32 result). ResizeArea has no
// half_pixel_centers; options.half_pixel_centers must be false. No gradient,
// as in TF.
Output ResizeArea(const Scope& scope, const Output& images, const Output& size, ResizeOptions options = {});

// SampleDistortedBoundingBoxV2's constraints (TF's attrs and defaults).
struct DistortedBoxOptions {
  std::vector<float> aspect_ratio_range = {0.75f, 1.33f};  // width / height
  std::vector<float> area_range = {0.05f, 1.0f};           // of the image's area
  int64_t max_attempts = 100;
  bool use_image_if_no_bounding_boxes = false;
  int64_t seed = 0, seed2 = 0;  // both 0: seeded at random
};

// A random crop of an image of `image_size` ([height, width, channels]:
// int32, int64 or uint8) covering at least `min_object_covered` (a float
// scalar) of one of `bounding_boxes` (float [batch, N, 4], [y_min, x_min,
// y_max, x_max] in [0, 1]); the whole image when no attempt succeeds. begin
// and size feed Slice (begin [y, x, 0], size [h, w, -1]); bboxes is the crop
// as a [1, 1, 4] box.
struct DistortedBox {
  Output begin, size, bboxes;
};
DistortedBox SampleDistortedBoundingBox(const Scope& scope, const Output& image_size, const Output& bounding_boxes,
                                        const Output& min_object_covered, const DistortedBoxOptions& options = {});

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_IMAGE_OPS_H_
