#include "towerflow/kernels/internal/cudnn_conv_plan.h"

#include <algorithm>

#include "towerflow/device/cuda/cuda_status.h"

namespace tw::cudnn_conv {
namespace {

// Appends the usable candidates of a heuristic query (see the file comment).
template <typename Perf, typename Query, typename WorkspaceSize>
Status CollectCandidates(int max_count, bool allow_tf32, bool deterministic_first,
                         cudnnConvolutionDescriptor_t conv, Query&& query, WorkspaceSize&& workspace_size,
                         std::vector<Candidate>* out) {
  std::vector<Perf> perf(static_cast<size_t>(std::max(max_count, 1)));
  int returned = 0;
  TW_CUDNN_RETURN_IF_ERROR(query(static_cast<int>(perf.size()), &returned, perf.data()));
  perf.resize(static_cast<size_t>(std::clamp(returned, 0, static_cast<int>(perf.size()))));
  if (deterministic_first) {
    std::stable_partition(perf.begin(), perf.end(),
                          [](const Perf& p) { return p.determinism == CUDNN_DETERMINISTIC; });
  }
  for (const Perf& p : perf) {
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    // ALLOW_CONVERSION may round float32 inputs to half: never. TENSOR_OP:
    // TF32 for float32, only where the device allows it.
    if (p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    if (p.mathType == CUDNN_TENSOR_OP_MATH && !allow_tf32) continue;
    const cudnnMathType_t math = allow_tf32 ? p.mathType : CUDNN_FMA_MATH;
    if (cudnnSetConvolutionMathType(conv, math) != CUDNN_STATUS_SUCCESS) continue;
    size_t bytes = 0;
    if (workspace_size(p.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxWorkspaceBytes) continue;
    out->push_back(Candidate{static_cast<int>(p.algo), math, bytes});
  }
  return Status::OK();
}

}  // namespace

Status BuildPlan(cudnnHandle_t h, const conv::ConvGeometry& g, int64_t hp, int64_t wp, Direction dir,
                 bool allow_tf32, ConvPlan* p) {
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  TW_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p->x.d));
  TW_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(p->x.d, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i32(g.n),
                                                      i32(g.c), i32(hp), i32(wp)));
  TW_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&p->w.d));
  TW_CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(p->w.d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, i32(g.o),
                                                      i32(g.c), i32(g.kh), i32(g.kw)));
  TW_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&p->conv.d));
  TW_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(p->conv.d, i32(g.pad_top), i32(g.pad_left),
                                                           i32(g.sh), i32(g.sw), 1, 1,
                                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TW_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolutionMathType(p->conv.d, allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int on = 0, oc = 0, oh = 0, ow = 0;
  TW_CUDNN_RETURN_IF_ERROR(
      cudnnGetConvolution2dForwardOutputDim(p->conv.d, p->x.d, p->w.d, &on, &oc, &oh, &ow));
  if (on != g.n || oc != g.o || oh != g.oh || ow != g.ow) {
    return errors::Internal("cuDNN's output shape [", on, ",", oh, ",", ow, ",", oc, "] differs from TF's ",
                            g.output_shape().ToString(), " for input ", g.input_shape().ToString(),
                            " and filter ", g.filter_shape().ToString());
  }
  TW_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p->y.d));
  TW_CUDNN_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(p->y.d, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, on, oc, oh, ow));
  int count = 0;
  switch (dir) {
    case Direction::kForward:
      TW_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
      TW_RETURN_IF_ERROR(CollectCandidates<cudnnConvolutionFwdAlgoPerf_t>(
          count, allow_tf32, false, p->conv.d,
          [&](int n, int* r, cudnnConvolutionFwdAlgoPerf_t* out) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, p->x.d, p->w.d, p->conv.d, p->y.d, n, r, out);
          },
          [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, p->x.d, p->w.d, p->conv.d, p->y.d, a, bytes);
          },
          &p->candidates));
      break;
    case Direction::kBackwardData:
      TW_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
      TW_RETURN_IF_ERROR(CollectCandidates<cudnnConvolutionBwdDataAlgoPerf_t>(
          count, allow_tf32, true, p->conv.d,
          [&](int n, int* r, cudnnConvolutionBwdDataAlgoPerf_t* out) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->w.d, p->y.d, p->conv.d, p->x.d, n, r,
                                                               out);
          },
          [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->w.d, p->y.d, p->conv.d, p->x.d, a,
                                                                bytes);
          },
          &p->candidates));
      break;
    case Direction::kBackwardFilter:
      TW_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
      TW_RETURN_IF_ERROR(CollectCandidates<cudnnConvolutionBwdFilterAlgoPerf_t>(
          count, allow_tf32, true, p->conv.d,
          [&](int n, int* r, cudnnConvolutionBwdFilterAlgoPerf_t* out) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x.d, p->y.d, p->conv.d, p->w.d, n, r,
                                                                 out);
          },
          [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x.d, p->y.d, p->conv.d, p->w.d, a,
                                                                  bytes);
          },
          &p->candidates));
      break;
  }
  return Status::OK();
}

}  // namespace tw::cudnn_conv
