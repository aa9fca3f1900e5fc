// Builders for the ops that resize images: ResizeBilinear,
// ResizeNearestNeighbor and their gradients. Names, inputs, attrs, arithmetic
// and errors are TensorFlow's: images are NHWC ([batch, height, width,
// channels]), `size` an int32 vector [new_height, new_width] of positive
// values. Each returns the node's output, or a null Output with the error
// recorded in the scope (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_IMAGE_OPS_H_
#define TOWERFLOW_GRAPH_OPS_IMAGE_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

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

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_IMAGE_OPS_H_
