// cuDNN's side of the GPU convolutions (conv_cuda.cu): RAII descriptors, the
// plan of one convolution shape (descriptors and the candidate algorithms in
// the order they are tried) and BuildPlan, which fills one from cuDNN's
// heuristics (see conv_cuda.cu's file comment for the rules). Builds with the
// CUDA backend only.
#ifndef TOWERFLOW_KERNELS_INTERNAL_CUDNN_CONV_PLAN_H_
#define TOWERFLOW_KERNELS_INTERNAL_CUDNN_CONV_PLAN_H_

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/kernels/im2col.h"

namespace tw::cudnn_conv {

// Larger workspaces are skipped (another candidate needs less): 1 GiB.
inline constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  ~TensorDesc() {
    if (d != nullptr) cudnnDestroyTensorDescriptor(d);
  }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  ~FilterDesc() {
    if (d != nullptr) cudnnDestroyFilterDescriptor(d);
  }
};
struct ActivationDesc {
  cudnnActivationDescriptor_t d = nullptr;
  ~ActivationDesc() {
    if (d != nullptr) cudnnDestroyActivationDescriptor(d);
  }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ~ConvDesc() {
    if (d != nullptr) cudnnDestroyConvolutionDescriptor(d);
  }
};

enum class Direction { kForward, kBackwardData, kBackwardFilter };

struct Candidate {
  int algo;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, by direction
  cudnnMathType_t math;
  size_t workspace_bytes;
};

// Descriptors of one convolution shape: x is the (padded) input, y the output
// (out_backprop), w the KRSC filter.
struct ConvPlan {
  TensorDesc x, y;
  TensorDesc bias;       // fused: 1 x O x 1 x 1
  ActivationDesc relu;   // fused
  FilterDesc w;
  ConvDesc conv;
  std::vector<Candidate> candidates;
  size_t next = 0;     // the first candidate cuDNN has not refused
  bool timed = false;  // candidates ordered by measured time (TimeCandidates)
  // Fused Conv2D -> BiasAddRelu: cuDNN refused the fused call with every
  // candidate, so the convolution runs alone and a kernel adds the bias.
  bool fused_refused = false;
};

inline bool NotSupported(cudnnStatus_t s) { return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED; }

// Fills `p` for geometry g with the input padded to hp x wp: descriptors
// (NHWC tensors, a KRSC filter) and the usable heuristic candidates of `dir`.
// REQUIRES: `h` is the leased handle of the device.
Status BuildPlan(cudnnHandle_t h, const conv::ConvGeometry& g, int64_t hp, int64_t wp, Direction dir,
                 bool allow_tf32, ConvPlan* p);

}  // namespace tw::cudnn_conv

#endif  // TOWERFLOW_KERNELS_INTERNAL_CUDNN_CONV_PLAN_H_
