// GPU kernels of 2-D convolution (NHWC input, HWIO filter) through cuDNN 9's
// legacy convolution API: Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter,
// float32 only. CPU twins: conv_kernels.cc (the geometry of im2col.h, and the
// same attr, shape and size checks with the same messages: window_params.h).
//
// Filters. cuDNN takes filters as KCRS or KRSC only, never TF's HWIO
// ([KH,KW,C,O]: output channel innermost; its filter descriptor has no
// strides), so the filter is transposed on the GPU:
// - TransposeKernel<T>: a grid-stride loop over the output elements of a 2-D
//   transpose. HWIO read as a [KH*KW*C, O] matrix becomes KRSC = OHWI
//   ([O, KH*KW*C]) before the forward and backward-data calls; the
//   backward-filter result (KRSC) is transposed back to HWIO.
// Padding. TF's SAME padding puts the odd unit of an odd total at the end
// (bottom, right); cuDNN pads symmetrically. As TF does, an asymmetric case
// pads the input explicitly: the input is copied into a buffer one row and/or
// column larger (zeros at the end) and cuDNN pads pad_top / pad_left on both
// sides; backward data computes the gradient of that padded input and crops.
// - ResizeNhwcKernel<T>: a grid-stride loop over the output elements:
//   out[n,y,x,c] = in[n,y,x,c] inside the input's extent, else 0 (pad and crop).
//
// Algorithms come from cudnnGetConvolution*Algorithm_v7 (heuristics): the
// candidates whose status is success, whose math type respects allow_tf32,
// and whose workspace query succeeds within kMaxWorkspaceBytes, in heuristic
// order (deterministic ones first for the backward passes). With the device's
// cudnn_autotune (SessionOptions, on by default), the first run of a plan
// times them (cudnnFind*Ex over that run's own buffers, with the workspace
// the largest candidate needs) and puts them in the order of their times,
// deterministic ones still first for the backward passes; a run being
// recorded into a CUDA graph never times (the timing waits for the GPU), and
// the step graph's warm-up runs come first. A plan (descriptors and
// candidates) is cached per input and filter shape in the kernel object,
// guarded by a mutex; a candidate the execution call refuses as unsupported
// is dropped for the next one. Every cuDNN call runs under the
// device's cuDNN lease with the handle's stream set to the compute stream;
// workspaces come from allocate_temp.
//
// Fusion. A Conv2D whose output only a BiasAddRelu reads runs as one
// cudnnConvolutionBiasActivationForward (runtime/fusion.h; the CPU twin is
// conv_kernels.cc's FusedConv2DOp): the bias and the ReLU applied while each
// output tile is in registers, where the unfused step wrote the convolution's
// output and read it back twice. Inputs (input, filter, bias). The fused
// call supports a ReLU that does not propagate NaN only (CUDNN_NOT_PROPAGATE_NAN,
// as TF and ONNX Runtime set it): a NaN sum may come out 0 where BiasAddRelu's
// kernel keeps it, as with the dense layers' cuBLASLt epilogue
// (matmul_epilogue_cuda.cu); a step that makes NaNs still shows them in its
// loss. Where cuDNN refuses the fused call for every algorithm (not
// supported, or a bad parameter for its engines), the convolution and a bias
// + ReLU kernel run apart. Conv2D -> BiasAdd is not fused: cuDNN runs an
// identity activation with one algorithm only.
//
// The descriptors, plans and the heuristic query are cuDNN's side of it:
// internal/cudnn_conv_plan.h.
//
// Precision. float32 uses CUDNN_FMA_MATH unless the device allows TF32 (then
// the heuristics' math type, which may use TF32 tensor cores). No float64:
// cuDNN does not promise double-precision engines for NHWC tensors with NHWC
// filters (PyTorch turns channels-last off for float64 for that reason), so
// double convolutions stay on the CPU twin (soft placement) rather than on a
// path that might fail on the GPU.
#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/core/logging.h"
#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/im2col.h"
#include "towerflow/kernels/internal/cudnn_conv_plan.h"
#include "towerflow/kernels/nn_args.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/window_params.h"

namespace tw {
namespace {

using conv::ConvGeometry;
using cudnn_conv::BuildPlan;
using cudnn_conv::Candidate;
using cudnn_conv::ConvPlan;
using cudnn_conv::Direction;
using cudnn_conv::NotSupported;
using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;

// More than cuDNN has algorithms in any direction (8 at most in cuDNN 9).
constexpr int kMaxTimedAlgorithms = 16;

template <typename T>
__global__ void TransposeKernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    out[i] = in[(i % rows) * cols + i / rows];  // out is [cols, rows]
  }
}

template <typename T>
__global__ void ResizeNhwcKernel(const T* __restrict__ in, T* __restrict__ out, int64_t n, int64_t in_h,
                                 int64_t in_w, int64_t out_h, int64_t out_w, int64_t c) {
  const int64_t total = n * out_h * out_w * c;
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const int64_t ch = i % c;
    int64_t t = i / c;
    const int64_t x = t % out_w;
    t /= out_w;
    const int64_t y = t % out_h;
    const int64_t b = t / out_h;
    out[i] = y < in_h && x < in_w ? in[((b * in_h + y) * in_w + x) * c + ch] : T(0);
  }
}

// [rows, cols] -> [cols, rows].
template <typename T>
Status LaunchTranspose(const GpuDevice& gpu, const T* in, T* out, int64_t rows, int64_t cols) {
  return LaunchGridStride(gpu, rows * cols, TransposeKernel<T>, in, out, rows, cols);
}

// [n, in_h, in_w, c] -> [n, out_h, out_w, c], cropping or zero-padding at the end.
template <typename T>
Status LaunchResizeNhwc(const GpuDevice& gpu, const T* in, T* out, int64_t n, int64_t in_h, int64_t in_w,
                        int64_t out_h, int64_t out_w, int64_t c) {
  return LaunchGridStride(gpu, n * out_h * out_w * c, ResizeNhwcKernel<T>, in, out, n, in_h, in_w, out_h,
                          out_w, c);
}

// ---- OpKernels ---------------------------------------------------------------

// The CPU twin's attr and shape checks (window_params.h); the plan cache,
// and the steps the three kernels share (filter transpose, explicit padding,
// running a plan).
class ConvGpuKernelBase : public GpuOpKernel {
 public:
  ConvGpuKernelBase(OpKernelConstruction* c, Direction dir) : GpuOpKernel(c), dir_(dir) {
    TW_OP_REQUIRES_OK(c, window::ReadConvAttrs(*c, &attrs_));
  }

 protected:
  StatusOr<ConvGeometry> Geometry(const TensorShape& input, const TensorShape& filter) const {
    TW_ASSIGN_OR_RETURN(ConvGeometry g,
                        conv::MakeGeometry(node().op().c_str(), input, filter, attrs_.strides, attrs_.same));
    // The CPU twin's 32-bit limit (BLAS's there, cuDNN's descriptors here),
    // plus the batch size and strides, which cuDNN takes as int too.
    if (std::max({g.rows(), g.k(), g.o, g.h * g.w}) > INT32_MAX / 2 || g.n > INT32_MAX || g.sh > INT32_MAX ||
        g.sw > INT32_MAX) {
      return errors::InvalidArgument(node().op(), ": input ", input.ToString(), " and filter ",
                                     filter.ToString(), " exceed cuDNN's 32-bit sizes");
    }
    return g;
  }
  static Status Zero(const GpuDevice& gpu, Tensor* t) {
    TW_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t->raw_data(), 0, t->TotalBytes(), gpu.stream()));
    return Status::OK();
  }

  // Extra rows / columns at the end of the input when SAME's total padding is
  // odd (0 or 1 each): cuDNN then pads pad_top / pad_left on both sides.
  static int64_t ExtraEnd(int64_t in, int64_t k, int64_t stride, int64_t out, int64_t pad_before) {
    return std::max<int64_t>(0, (out - 1) * stride + k - in) - 2 * pad_before;
  }
  struct Padded {
    int64_t h, w;
    bool asymmetric;
  };
  Padded PaddedInput(const ConvGeometry& g) const {
    const int64_t eh = attrs_.same ? ExtraEnd(g.h, g.kh, g.sh, g.oh, g.pad_top) : 0;
    const int64_t ew = attrs_.same ? ExtraEnd(g.w, g.kw, g.sw, g.ow, g.pad_left) : 0;
    return Padded{g.h + eh, g.w + ew, eh > 0 || ew > 0};
  }
  // The input itself, or its copy padded with zeros at the end into *storage.
  static StatusOr<const float*> PadInput(OpKernelContext* ctx, const GpuDevice& gpu, const ConvGeometry& g,
                                         const Padded& p, const Tensor& input, Tensor* storage) {
    if (!p.asymmetric) return input.data<float>();
    TW_RETURN_IF_ERROR(ctx->allocate_temp(kFloat32, TensorShape{g.n, p.h, p.w, g.c}, storage));
    TW_RETURN_IF_ERROR(
        LaunchResizeNhwc(gpu, input.data<float>(), storage->data<float>(), g.n, g.h, g.w, p.h, p.w, g.c));
    return static_cast<const float*>(storage->data<float>());
  }
  // The HWIO filter as KRSC in a temp tensor.
  static Status FilterToKrsc(OpKernelContext* ctx, const GpuDevice& gpu, const ConvGeometry& g,
                             const Tensor& filter, Tensor* krsc) {
    TW_RETURN_IF_ERROR(ctx->allocate_temp(kFloat32, TensorShape{g.o, g.kh, g.kw, g.c}, krsc));
    return LaunchTranspose(gpu, filter.data<float>(), krsc->data<float>(), g.k(), g.o);
  }

  // The cached plan for g. REQUIRES: `h` is the leased handle of this kernel's device.
  StatusOr<ConvPlan*> PlanFor(cudnnHandle_t h, const GpuDevice& gpu, const ConvGeometry& g, const Padded& p) {
    const std::array<int64_t, 7> key = {g.n, g.h, g.w, g.c, g.kh, g.kw, g.o};
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
    auto plan = std::make_unique<ConvPlan>();
    TW_RETURN_IF_ERROR(BuildPlan(h, g, p.h, p.w, dir_, gpu.allow_tf32(), plan.get()));
    ConvPlan* raw = plan.get();
    plans_.emplace(key, std::move(plan));
    return raw;
  }

  // Orders the plan's candidates by the times cuDNN measures for them on this
  // run's buffers, once per plan (see the file comment): `find(requested,
  // &returned, perf, workspace, bytes)` is the direction's cudnnFind*Ex.
  // Candidates it did not time keep their heuristic order after the timed
  // ones. REQUIRES: the device's cuDNN lease is held.
  template <typename Perf, typename Find>
  Status TimeCandidates(OpKernelContext* ctx, const GpuDevice& gpu, ConvPlan* plan, Find&& find) {
    if (plan->timed || !gpu.cudnn_autotune() || gpu.capturing() || plan->candidates.size() < 2) {
      return Status::OK();
    }
    plan->timed = true;
    size_t bytes = 0;
    for (const Candidate& c : plan->candidates) bytes = std::max(bytes, c.workspace_bytes);
    // Timing is an optimisation: where it cannot run (no memory for the
    // largest workspace, cuDNN's search refusing), the heuristic order stays.
    Tensor workspace;
    if (bytes > 0) {
      if (Status s = ctx->allocate_temp(kUInt8, TensorShape{static_cast<int64_t>(bytes)}, &workspace); !s.ok()) {
        TW_LOG(WARNING) << node().name() << ": cuDNN's algorithms not timed, in cuDNN's heuristic order: "
                        << s.ToString();
        return Status::OK();
      }
    }
    TW_CUDNN_RETURN_IF_ERROR(
        cudnnSetConvolutionMathType(plan->conv.d, gpu.allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    std::vector<Perf> perf(kMaxTimedAlgorithms);
    int returned = 0;
    if (const cudnnStatus_t found = find(static_cast<int>(perf.size()), &returned, perf.data(), workspace.raw_data(), bytes);
        found != CUDNN_STATUS_SUCCESS) {
      TW_LOG(WARNING) << node().name() << ": cuDNN's algorithms not timed (" << cudnnGetErrorString(found)
                      << "), in cuDNN's heuristic order";
      return Status::OK();
    }
    perf.resize(static_cast<size_t>(std::clamp(returned, 0, static_cast<int>(perf.size()))));
    if (dir_ != Direction::kForward) {
      std::stable_partition(perf.begin(), perf.end(),
                            [](const Perf& p) { return p.determinism == CUDNN_DETERMINISTIC; });
    }
    std::vector<Candidate> ordered;
    for (const Perf& p : perf) {
      if (p.status != CUDNN_STATUS_SUCCESS || p.time < 0) continue;
      auto it = std::find_if(plan->candidates.begin(), plan->candidates.end(),
                             [&](const Candidate& c) { return c.algo == static_cast<int>(p.algo); });
      if (it == plan->candidates.end()) continue;
      ordered.push_back(*it);
      plan->candidates.erase(it);
    }
    ordered.insert(ordered.end(), plan->candidates.begin(), plan->candidates.end());
    plan->candidates = std::move(ordered);
    plan->next = 0;
    return Status::OK();
  }

  // Runs call(algo, workspace, bytes) for the plan's first candidate cuDNN
  // accepts. REQUIRES: the device's cuDNN lease is held (it guards plan->next
  // and the descriptor's math type).
  // `fused`: the fused call, which a bad parameter (a combination its
  // engines do not take) also refuses.
  template <typename Call>
  Status RunPlan(OpKernelContext* ctx, ConvPlan* plan, const ConvGeometry& g, const char* call_name,
                 Call&& call, bool fused = false) {
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (; plan->next < plan->candidates.size(); ++plan->next) {
      const Candidate& c = plan->candidates[plan->next];
      TW_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(plan->conv.d, c.math));
      Tensor workspace;
      if (c.workspace_bytes > 0) {
        TW_RETURN_IF_ERROR(
            ctx->allocate_temp(kUInt8, TensorShape{static_cast<int64_t>(c.workspace_bytes)}, &workspace));
      }
      last = call(c.algo, workspace.raw_data(), c.workspace_bytes);
      const bool refused = NotSupported(last) || (fused && CUDNN_STATUS_CATEGORY(last) == CUDNN_STATUS_BAD_PARAM);
      if (!refused) return CudnnStatus(last, call_name, __FILE__, __LINE__);
    }
    return errors::Internal(node().op(), ": cuDNN has no algorithm for input ", g.input_shape().ToString(),
                            ", filter ", g.filter_shape().ToString(), ", strides ",
                            PartialShape(attrs_.strides).ToString(), " (last status ",
                            cudnnGetErrorString(last), ")");
  }

  window::ConvAttrs attrs_;

 private:
  const Direction dir_;
  std::mutex mu_;
  std::map<std::array<int64_t, 7>, std::unique_ptr<ConvPlan>> plans_;  // guarded by mu_
};

// out[i] = max(bias[i % c], 0), NaN kept: a fused convolution whose sums are
// all empty (no input channel or tap).
__global__ void BiasReluKernel(const float* __restrict__ b, float* __restrict__ o, int64_t n, int64_t c) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) {
    const float s = b[i % c];
    o[i] = s < 0.0f ? 0.0f : s;
  }
}

// o[i] = max(o[i] + bias[i % c], 0), NaN kept (BiasAddRelu in place): the
// fused convolution where cuDNN refuses the fused call.
__global__ void AddBiasReluKernel(const float* __restrict__ b, float* __restrict__ o, int64_t n, int64_t c) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) {
    const float s = o[i] + b[i % c];
    o[i] = s < 0.0f ? 0.0f : s;
  }
}

// Conv2D, and with `bias_relu` Conv2D -> BiasAddRelu fused (the file
// comment's Fusion; inputs input, filter, bias).
class Conv2DGpuOp : public ConvGpuKernelBase {
 public:
  explicit Conv2DGpuOp(OpKernelConstruction* c, bool bias_relu = false)
      : ConvGpuKernelBase(c, Direction::kForward), bias_relu_(bias_relu) {}
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    auto geo = Geometry(ctx->input(0).shape(), ctx->input(1).shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const float* bias = nullptr;
    if (bias_relu_) {
      TW_OP_REQUIRES_OK(ctx, CheckBiasAdd(geo->output_shape(), ctx->input(2).shape()));
      bias = ctx->input(2).data<float>();
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, geo->output_shape(), &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    if (geo->k() == 0) {  // every sum empty: zeros, or the bias rectified
      TW_OP_REQUIRES_OK(ctx, bias_relu_ ? LaunchGridStride(gpu, n, BiasReluKernel, bias, out->data<float>(), n, geo->o)
                                        : Zero(gpu, out));
      return;
    }
    TW_OP_REQUIRES_OK(ctx, Run(ctx, gpu, *geo, bias, out));
  }

 private:
  Status Run(OpKernelContext* ctx, const GpuDevice& gpu, const ConvGeometry& g, const float* bias, Tensor* out) {
    Tensor w, x_storage;
    TW_RETURN_IF_ERROR(FilterToKrsc(ctx, gpu, g, ctx->input(1), &w));
    const Padded p = PaddedInput(g);
    TW_ASSIGN_OR_RETURN(const float* x, PadInput(ctx, gpu, g, p, ctx->input(0), &x_storage));
    GpuDevice::CudnnLease lease = gpu.cudnn();
    TW_CUDNN_RETURN_IF_ERROR(cudnnSetStream(lease.get(), gpu.stream()));
    TW_ASSIGN_OR_RETURN(ConvPlan* plan, PlanFor(lease.get(), gpu, g, p));
    if (bias_relu_ && plan->relu.d == nullptr) {  // the fused call's own descriptors, once per plan
      TW_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&plan->bias.d));
      TW_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(plan->bias.d, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1,
                                                          static_cast<int>(g.o), 1, 1));
      TW_CUDNN_RETURN_IF_ERROR(cudnnCreateActivationDescriptor(&plan->relu.d));
      TW_CUDNN_RETURN_IF_ERROR(
          cudnnSetActivationDescriptor(plan->relu.d, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    }
    float* y = out->data<float>();
    TW_RETURN_IF_ERROR(TimeCandidates<cudnnConvolutionFwdAlgoPerf_t>(
        ctx, gpu, plan, [&](int n, int* r, cudnnConvolutionFwdAlgoPerf_t* perf, void* ws, size_t bytes) {
          return cudnnFindConvolutionForwardAlgorithmEx(lease.get(), plan->x.d, x, plan->w.d, w.data<float>(),
                                                        plan->conv.d, plan->y.d, y, n, r, perf, ws, bytes);
        }));
    const float one = 1, zero = 0;
    auto plain = [&] {
      return RunPlan(ctx, plan, g, "cudnnConvolutionForward", [&](int algo, void* ws, size_t bytes) {
        return cudnnConvolutionForward(lease.get(), &one, plan->x.d, x, plan->w.d, w.data<float>(), plan->conv.d,
                                       static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, bytes, &zero, plan->y.d, y);
      });
    };
    if (!bias_relu_) return plain();
    if (!plan->fused_refused) {
      // alpha2 = 0: z (the output itself) is not read.
      Status fused = RunPlan(ctx, plan, g, "cudnnConvolutionBiasActivationForward", [&](int algo, void* ws, size_t bytes) {
        return cudnnConvolutionBiasActivationForward(
            lease.get(), &one, plan->x.d, x, plan->w.d, w.data<float>(), plan->conv.d,
            static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, bytes, &zero, plan->y.d, y, plan->bias.d, bias,
            plan->relu.d, plan->y.d, y);
      }, /*fused=*/true);
      if (plan->next < plan->candidates.size()) return fused;  // ran, or failed otherwise than "not supported"
      // Every candidate refused the fused call (an engine without it for
      // this shape): from now on the convolution, then the bias and ReLU.
      TW_LOG(WARNING) << node().name() << ": cuDNN runs no fused convolution + bias + ReLU for input "
                      << g.input_shape().ToString() << ", filter " << g.filter_shape().ToString()
                      << ": convolution and bias run apart";
      plan->fused_refused = true;
      plan->next = 0;
    }
    TW_RETURN_IF_ERROR(plain());
    return LaunchGridStride(gpu, out->NumElements(), AddBiasReluKernel, bias, y, out->NumElements(), g.o);
  }

  const bool bias_relu_;
};

std::unique_ptr<OpKernel> MakeFusedConv2DBiasRelu(OpKernelConstruction* c, const Node&) {
  return std::make_unique<Conv2DGpuOp>(c, /*bias_relu=*/true);
}

class Conv2DBackpropInputGpuOp : public ConvGpuKernelBase {
 public:
  explicit Conv2DBackpropInputGpuOp(OpKernelConstruction* c)
      : ConvGpuKernelBase(c, Direction::kBackwardData) {}
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    auto sizes = window::ConvSizesInput(ctx, 0);
    TW_OP_REQUIRES_OK(ctx, sizes.status());
    auto geo = Geometry(*sizes, ctx->input(1).shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    TW_OP_REQUIRES_OK(ctx, window::CheckConvBackprop(ctx, *geo));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *sizes, &out));
    if (out->NumElements() == 0) return;
    // No output channel, no tap or no output position: nothing flows back.
    if (geo->o == 0 || geo->kh == 0 || geo->kw == 0 || geo->rows() == 0) {
      TW_OP_REQUIRES_OK(ctx, Zero(gpu, out));
      return;
    }
    TW_OP_REQUIRES_OK(ctx, Run(ctx, gpu, *geo, out));
  }

 private:
  Status Run(OpKernelContext* ctx, const GpuDevice& gpu, const ConvGeometry& g, Tensor* out) {
    Tensor w, dx_padded;
    TW_RETURN_IF_ERROR(FilterToKrsc(ctx, gpu, g, ctx->input(1), &w));
    const Padded p = PaddedInput(g);
    float* dx = out->data<float>();
    if (p.asymmetric) {  // the gradient of the padded input, cropped below
      TW_RETURN_IF_ERROR(ctx->allocate_temp(kFloat32, TensorShape{g.n, p.h, p.w, g.c}, &dx_padded));
      dx = dx_padded.data<float>();
    }
    {
      GpuDevice::CudnnLease lease = gpu.cudnn();
      TW_CUDNN_RETURN_IF_ERROR(cudnnSetStream(lease.get(), gpu.stream()));
      TW_ASSIGN_OR_RETURN(ConvPlan* plan, PlanFor(lease.get(), gpu, g, p));
      const float one = 1, zero = 0;
      const float* dy = ctx->input(2).data<float>();
      TW_RETURN_IF_ERROR(TimeCandidates<cudnnConvolutionBwdDataAlgoPerf_t>(
          ctx, gpu, plan, [&](int n, int* r, cudnnConvolutionBwdDataAlgoPerf_t* perf, void* ws, size_t bytes) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(lease.get(), plan->w.d, w.data<float>(), plan->y.d,
                                                               dy, plan->conv.d, plan->x.d, dx, n, r, perf, ws,
                                                               bytes);
          }));
      TW_RETURN_IF_ERROR(
          RunPlan(ctx, plan, g, "cudnnConvolutionBackwardData", [&](int algo, void* ws, size_t bytes) {
            return cudnnConvolutionBackwardData(
                lease.get(), &one, plan->w.d, w.data<float>(), plan->y.d, dy, plan->conv.d,
                static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, bytes, &zero, plan->x.d, dx);
          }));
    }
    if (!p.asymmetric) return Status::OK();
    return LaunchResizeNhwc(gpu, static_cast<const float*>(dx), out->data<float>(), g.n, p.h, p.w, g.h, g.w,
                            g.c);
  }
};

class Conv2DBackpropFilterGpuOp : public ConvGpuKernelBase {
 public:
  explicit Conv2DBackpropFilterGpuOp(OpKernelConstruction* c)
      : ConvGpuKernelBase(c, Direction::kBackwardFilter) {}
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    auto sizes = window::ConvSizesInput(ctx, 1);
    TW_OP_REQUIRES_OK(ctx, sizes.status());
    auto geo = Geometry(ctx->input(0).shape(), *sizes);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    TW_OP_REQUIRES_OK(ctx, window::CheckConvBackprop(ctx, *geo));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *sizes, &out));
    if (out->NumElements() == 0) return;
    if (geo->n * geo->rows() == 0) {  // no output position: an empty sum
      TW_OP_REQUIRES_OK(ctx, Zero(gpu, out));
      return;
    }
    TW_OP_REQUIRES_OK(ctx, Run(ctx, gpu, *geo, out));
  }

 private:
  Status Run(OpKernelContext* ctx, const GpuDevice& gpu, const ConvGeometry& g, Tensor* out) {
    Tensor x_storage, dw_krsc;
    const Padded p = PaddedInput(g);
    TW_ASSIGN_OR_RETURN(const float* x, PadInput(ctx, gpu, g, p, ctx->input(0), &x_storage));
    TW_RETURN_IF_ERROR(ctx->allocate_temp(kFloat32, TensorShape{g.o, g.kh, g.kw, g.c}, &dw_krsc));
    {
      GpuDevice::CudnnLease lease = gpu.cudnn();
      TW_CUDNN_RETURN_IF_ERROR(cudnnSetStream(lease.get(), gpu.stream()));
      TW_ASSIGN_OR_RETURN(ConvPlan* plan, PlanFor(lease.get(), gpu, g, p));
      const float one = 1, zero = 0;
      const float* dy = ctx->input(2).data<float>();
      float* dw = dw_krsc.data<float>();
      TW_RETURN_IF_ERROR(TimeCandidates<cudnnConvolutionBwdFilterAlgoPerf_t>(
          ctx, gpu, plan, [&](int n, int* r, cudnnConvolutionBwdFilterAlgoPerf_t* perf, void* ws, size_t bytes) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(lease.get(), plan->x.d, x, plan->y.d, dy,
                                                                 plan->conv.d, plan->w.d, dw, n, r, perf, ws,
                                                                 bytes);
          }));
      TW_RETURN_IF_ERROR(
          RunPlan(ctx, plan, g, "cudnnConvolutionBackwardFilter", [&](int algo, void* ws, size_t bytes) {
            return cudnnConvolutionBackwardFilter(
                lease.get(), &one, plan->x.d, x, plan->y.d, dy, plan->conv.d,
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, bytes, &zero, plan->w.d, dw);
          }));
    }
    return LaunchTranspose(gpu, static_cast<const float*>(dw_krsc.data<float>()), out->data<float>(), g.o,
                           g.k());
  }
};

}  // namespace

void RegisterConvCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  RegisterGpuKernel<Conv2DGpuOp>(target, "Conv2D", "T", {kFloat32}, {}, {});
  // input_sizes / filter_sizes are shapes the kernels read on the host.
  RegisterGpuKernel<Conv2DBackpropInputGpuOp>(target, "Conv2DBackpropInput", "T", {kFloat32}, {0}, {});
  RegisterGpuKernel<Conv2DBackpropFilterGpuOp>(target, "Conv2DBackpropFilter", "T", {kFloat32}, {1}, {});
  target.RegisterFusion(FusionDef{"Conv2D", "BiasAddRelu", 0, kDeviceGpu, {kFloat32}, MakeFusedConv2DBiasRelu});
}

}  // namespace tw
