// Internal to kernels/conv_kernels.cc: the forward convolution of a network's
// first layer (an image of 1 to 4 channels, stride 1) as direct AVX-512 loops.
//
// With one input channel a convolution has 25 multiply-adds per output (5x5)
// and no reduction to speak of: oneDNN 2.6's brgconv and an im2col GEMM with
// K = 25 both run it far below the machine's FMA rate. The loops here keep a
// block of 14 or 16 output pixels times 16 or 32 output channels in registers,
// broadcast each input value against a vector of filter weights, and add the
// bias and apply ReLU (a fused Conv2D -> BiasAddRelu, runtime/fusion.h) before
// storing. The tutorial CNN's first layer with its bias and ReLU, one thread
// (bench/conv_bench first_layer, medians of 8 interleaved runs): 1.25 and 1.43
// ms fused here against 1.52 and 1.68 ms fused on oneDNN, 2.12 and 2.15 ms for
// oneDNN's convolution followed by BiasAddRelu. conv_kernels_test checks the
// loops against the definition and the kernels on every path.
//
// Used for float32 when the CPU has AVX-512F and the geometry qualifies
// (Supports); TOWERFLOW_CONV=onednn or =im2col turns it off for the kernels of
// sessions created afterwards.
#ifndef TOWERFLOW_KERNELS_INTERNAL_DIRECT_CONV_H_
#define TOWERFLOW_KERNELS_INTERNAL_DIRECT_CONV_H_

#include <cstdint>

#include "towerflow/kernels/im2col.h"

namespace tw::direct_conv {

// TOWERFLOW_CONV is unset (or "direct") and the CPU has AVX-512F.
bool Enabled();

// The geometry is one the loops run: stride 1, 1 <= c <= 4, o a multiple of
// 16, non-empty.
bool Supports(const conv::ConvGeometry& g);

// Floats of scratch Forward needs (one zero-padded input image).
int64_t ScratchFloats(const conv::ConvGeometry& g);

// y[n0:n1] = conv(x[n0:n1], w) (+ bias[o] when bias is not null, then
// max(., 0) when relu), NHWC input and output, HWIO filter, whole tensors.
// REQUIRES: Enabled() and Supports(g); `scratch` holds ScratchFloats(g).
void Forward(const conv::ConvGeometry& g, int64_t n0, int64_t n1, const float* x, const float* w,
             const float* bias, bool relu, float* y, float* scratch);

}  // namespace tw::direct_conv

#endif  // TOWERFLOW_KERNELS_INTERNAL_DIRECT_CONV_H_
