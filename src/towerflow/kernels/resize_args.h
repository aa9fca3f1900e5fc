// The attrs, argument checks and output geometry of the resize kernels
// (image_kernels.cc: bilinear and nearest neighbour; bicubic_area_kernels.cc:
// bicubic and area), so that every resize accepts the same arguments and
// fails with one message. Internal to kernels/. Stateless; thread-safe.
#ifndef TOWERFLOW_KERNELS_RESIZE_ARGS_H_
#define TOWERFLOW_KERNELS_RESIZE_ARGS_H_

#include <cstdint>
#include <utility>

#include "towerflow/device/op_kernel.h"

namespace tw {
namespace resize {

struct Attrs {
  bool align_corners = false;
  bool half_pixel_centers = false;
};

// The node's attrs (half_pixel_centers only where the op has it: ResizeArea
// has not); InvalidArgument when both are true, as TF.
Status ReadAttrs(const OpKernelConstruction& c, Attrs* attrs, bool has_half_pixel_centers = true);

// TF's scale from output to input coordinates: in / out, or
// (in - 1) / (out - 1) with align_corners and more than one input and output
// pixel.
float Scale(int64_t in, int64_t out, bool align_corners);

// Input i, an int32 vector [height, width] of positive values, as TF checks it.
StatusOr<std::pair<int64_t, int64_t>> SizeArg(OpKernelContext* ctx, int i, const char* op);

// `images` must be 4-D with height and width below 2^31 ("what" names it).
Status CheckImages(const Tensor& images, const char* what, const char* op);

// What a resize works on: images [batch, in_h, in_w, channels] resized to
// [batch, out_h, out_w, channels], with the scales of the op's mapping.
struct Geometry {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  float h_scale = 0, w_scale = 0;
};

// The base of the resize kernels: the node's attrs, read when it is built
// (half_pixel_centers where the op has it).
class KernelBase : public OpKernel {
 public:
  explicit KernelBase(OpKernelConstruction* c, bool has_half_pixel_centers = true) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, ReadAttrs(*c, &attrs_, has_half_pixel_centers));
  }

 protected:
  Attrs attrs_;
};

// Resizing images (input 0) to size (input 1): the checks (a non-empty
// image of at least one channel), the geometry and output 0 allocated (in the
// dtype the op's schema gives it).
StatusOr<Geometry> Output(OpKernelContext* ctx, const Attrs& attrs, const char* op, Tensor** out);

// ResizeXGrad's inputs: grads (input 0, float32, the resized shape) and
// original_image (input 1): both 4-D, one batch and channel count, heights
// and widths positive. The geometry maps grads'
// [out_h, out_w] back to the original's [in_h, in_w].
StatusOr<Geometry> GradGeometry(OpKernelContext* ctx, const Attrs& attrs, const char* op);

}  // namespace resize
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_RESIZE_ARGS_H_
