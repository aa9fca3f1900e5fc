// Helpers for GPU kernels (kernels/*_cuda.cu and *_cuda.cc): their base class
// GpuOpKernel, the GpuDevice of a kernel context, launch shapes for
// grid-stride loops, and the TW_OP_REQUIRES forms of the CUDA status macros.
// Header-only; thread-safe.
//
// The shape of a GPU kernel (a GpuOpKernel, whose Compute makes the device
// current and calls ComputeOnGpu):
//
//   void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
//     ... check shapes with the CPU twin's own functions (same codes and messages) ...
//     TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
//     if (n == 0) return;
//     TW_OP_REQUIRES_OK(ctx, LaunchFoo(gpu, ...));  // returns Status
//   }
//
// where LaunchFoo is the one host launcher of a CUDA kernel (STYLE.md): it
// launches on the device's compute stream and ends with TW_CUDA_LAUNCH_CHECK().
// Nothing waits for the GPU: the work is queued (gpu_device.h).
#ifndef TOWERFLOW_DEVICE_CUDA_GPU_KERNEL_UTIL_H_
#define TOWERFLOW_DEVICE_CUDA_GPU_KERNEL_UTIL_H_

#include <algorithm>
#include <cstdint>

#include "towerflow/device/cuda/gpu_device.h"
#include "towerflow/device/op_kernel.h"

namespace tw {

// The context's device as a GpuDevice. REQUIRES: the kernel is registered for
// "GPU" only under RegisterCudaKernels (or train/'s
// EnsureCollectiveAllReduceCudaKernel), which run only when real GPUs exist
// (so a GPU kernel never runs on a fake GPU).
inline GpuDevice* GpuDeviceOf(OpKernelContext* ctx) {
  TW_CHECK(ctx->device()->device_type() == kDeviceGpu && !ctx->device()->host_memory())
      << ctx->node().DebugName() << ": a CUDA kernel on " << ctx->device()->name();
  return static_cast<GpuDevice*>(ctx->device());
}

// The base of every GPU kernel class: Compute activates the context's GPU on
// the calling thread (failing the kernel with Activate's error) and runs
// ComputeOnGpu. REQUIRES: as GpuDeviceOf.
class GpuOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) final {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    ComputeOnGpu(ctx, *gpu);
  }

 protected:
  virtual void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) = 0;
};

// Blocks and threads for a grid-stride loop over `n` elements: enough blocks to
// fill the GPU (32 per SM at most), never more than the work needs.
struct LaunchShape {
  int blocks = 1;
  int threads = 256;
};
inline LaunchShape LaunchShapeFor(int64_t n, const GpuDevice& gpu, int threads = 256) {
  LaunchShape s;
  s.threads = threads;
  const int64_t needed = (std::max<int64_t>(n, 1) + threads - 1) / threads;
  s.blocks = static_cast<int>(std::min<int64_t>(needed, static_cast<int64_t>(std::max(1, gpu.sm_count())) * 32));
  return s;
}

}  // namespace tw

// Fail the kernel with the Status of a CUDA / cuBLAS / cuDNN call and return.
#define TW_OP_REQUIRES_CUDA_OK(ctx, expr) \
  TW_OP_REQUIRES_OK(ctx, ::tw::CudaStatus((expr), #expr, __FILE__, __LINE__))
#define TW_OP_REQUIRES_CUBLAS_OK(ctx, expr) \
  TW_OP_REQUIRES_OK(ctx, ::tw::CublasStatus((expr), #expr, __FILE__, __LINE__))
#define TW_OP_REQUIRES_CUDNN_OK(ctx, expr) \
  TW_OP_REQUIRES_OK(ctx, ::tw::CudnnStatus((expr), #expr, __FILE__, __LINE__))

#endif  // TOWERFLOW_DEVICE_CUDA_GPU_KERNEL_UTIL_H_
