// The attrs and argument checks of LRN and LRNGrad, on every device:
// lrn_kernels.cc (CPU) and lrn_cuda.cu (GPU) call these, so both accept the
// same arguments and fail with one code and one message. Internal to
// kernels/; host code only. Stateless; thread-safe.
//
// The arithmetic both devices do, in this order (so that their results are
// equal, the power aside, which goes through each device's exp and log):
//   norm[c]  = (sum over k in [c - r, c + r] within [0, depth) of in[k] * in[k]) * alpha + bias
//   scale(n) = 1 / n for beta 1, 1 / sqrt(n) for beta 0.5, else exp(log(n) * -beta)
//   out[c]   = in[c] * scale(norm[c])
//   dx[k]    = sum over j in [k - r, k + r] within [0, depth), ascending, of
//              (-2 * alpha * beta * in[k] * out[j] / norm[j] + (j == k ? scale(norm[j]) : 0)) * dy[j]
// with every product rounded before its sum (no fused multiply-add).
#ifndef TOWERFLOW_KERNELS_LRN_ARGS_H_
#define TOWERFLOW_KERNELS_LRN_ARGS_H_

#include <cstdint>

#include "towerflow/device/op_kernel.h"

namespace tw {
namespace lrn {

struct Attrs {
  int64_t depth_radius = 5;
  double bias = 1.0, alpha = 1.0, beta = 0.5;
};

// The node's attrs; InvalidArgument "LRN: depth_radius must be in [0, 2^31), got ..."
// for a negative or huge radius.
Status ReadAttrs(const OpKernelConstruction& c, Attrs* attrs);

// LRN's input (input 0) must be 4-D: InvalidArgument "LRN: input must be
// 4-dimensional, got ..." otherwise.
Status CheckInput(OpKernelContext* ctx);

// LRNGrad's inputs (input_grads, input_image, output_image) must be 4-D and
// of one shape: InvalidArgument "LRNGrad: input_grads, input_image and
// output_image must be 4-dimensional of one shape, got ..." otherwise.
Status CheckGradInputs(OpKernelContext* ctx);

}  // namespace lrn
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_LRN_ARGS_H_
