// Internal to kernels/conv_kernels.cc: float32 2-D convolutions on oneDNN
// (Debian's libdnnl), its JIT kernels for the machine's ISA (AVX-512 here),
// with the tensors in towerflow's layouts: input and output NHWC as they are,
// the filter HWIO reordered to and from the layout oneDNN picks.
//
// A DnnlConv holds the primitives of one convolution geometry for every batch
// size it is run at (the intra-op shards of a batch have at most two sizes).
// Each Run executes on the calling thread alone: conv_kernels.cc splits the
// batch over the device's intra-op threads as on its im2col path, and oneDNN's
// primitives are built and run with an OpenMP thread count of one, so it starts
// no threads of its own. Run is thread-safe; scratch memory comes from
// the kernel's allocator.
//
// Used when oneDNN is built in (CMake TOWERFLOW_DNNL) and enabled: the
// environment variable TOWERFLOW_CONV=im2col turns it off for the kernels of
// sessions created afterwards (benchmarks and parity tests compare both).
#ifndef TOWERFLOW_KERNELS_INTERNAL_DNNL_CONV_H_
#define TOWERFLOW_KERNELS_INTERNAL_DNNL_CONV_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "towerflow/core/status.h"
#include "towerflow/kernels/im2col.h"

namespace tw::dnnl_conv {

// oneDNN is built in and TOWERFLOW_CONV is not "im2col".
bool Enabled();

enum class Pass { kForward, kBackwardData, kBackwardFilter };

// What a forward convolution does to each output before storing it (a fused
// Conv2D -> BiasAdd / BiasAddRelu, runtime/fusion.h): add a per-channel bias,
// then clamp at zero. The other passes take none.
struct Epilogue {
  bool bias = false;
  bool relu = false;
};

// Scratch bytes for one Run, from the op's temp allocator; null on failure.
using ScratchAllocator = std::function<uint8_t*(size_t bytes)>;

class DnnlConv {
 public:
  // The geometry's batch size is that of the primitive built here (later ones
  // are built for the sizes Run meets): Run takes images [n0, n1).
  // Unimplemented when oneDNN cannot run it (an empty dimension, or no
  // implementation for the shapes).
  static StatusOr<std::unique_ptr<DnnlConv>> Create(const conv::ConvGeometry& g, Pass pass,
                                                    Epilogue epilogue = {});
  ~DnnlConv();

  // kForward:        y[n0:n1] = conv(x[n0:n1], w), then the epilogue (`bias`:
  //                   o values, read when the epilogue adds one)
  // kBackwardData:   dx[n0:n1] = conv_backprop_input(dy[n0:n1], w)
  // kBackwardFilter: dw = conv_backprop_filter(x[n0:n1], dy[n0:n1]) (overwritten)
  // Pointers are to the whole tensors (NHWC, HWIO).
  Status Run(int64_t n0, int64_t n1, const float* x, const float* w, const float* dy, float* y_dx_or_dw,
             const ScratchAllocator& scratch, const float* bias = nullptr);

 private:
  struct Impl;
  explicit DnnlConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw::dnnl_conv

#endif  // TOWERFLOW_KERNELS_INTERNAL_DNNL_CONV_H_
