// GPU kernels of the variable ops. CPU twin: state_kernels.cc.
//
// CUDA kernels:
//   AssignUpdateKernel<T, kAdd>  one thread per element, grid-stride:
//                                var += value (AssignAdd) or -= (AssignSub).
// Assign is a device-to-device copy (GpuDevice::CopyOnDevice) on the compute
// stream, into the variable's buffer when the shape is unchanged, else into a
// new buffer from this device's allocator.
//
// A GPU variable is the CPU's Var (device/resource_mgr.h) holding a tensor in
// device memory. VariableV2 and IsVariableInitialized run their CPU classes:
// VariableOp only finds or creates the Var in the session's ResourceMgr and
// outputs a ref to its tensor (it allocates nothing: Assign's first run
// allocates the tensor, here from the GPU's allocator), and
// IsVariableInitializedOp reads Tensor::IsInitialized() under the variable's
// lock into a bool output kept in host memory. Neither reads device data.
//
// dtypes: float, double, int32 and int64 (a global step is an int64 variable).
// The placer colocates a variable with its Assign/AssignAdd/reads (ref edges
// and loc:@ groups) and keeps the group on a GPU only when every member has a
// GPU kernel, so an int64 global step requested on a GPU stays there with its
// increment; with these kernels for every dtype of the group, no group is
// split. Each kernel holds the variable's mutex while it checks and enqueues:
// the work itself runs later on the stream, ordered after earlier readers. The
// checks are the CPU twin's own (variable_args.h).
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace {

// No __restrict__: AssignAdd(v, v) passes one buffer as both.
template <typename T, bool kAdd>
__global__ void AssignUpdateKernel(T* var, const T* value, int64_t n) {
  for (int64_t i = cuda_util::GridThreadIndex(); i < n; i += cuda_util::GridThreadCount()) {
    if constexpr (kAdd) {
      var[i] += value[i];
    } else {
      var[i] -= value[i];
    }
  }
}

// REQUIRES: n > 0. `var` and `value` may be the same buffer (v += v).
template <typename T, bool kAdd>
Status LaunchAssignUpdate(const GpuDevice& gpu, T* var, const T* value, int64_t n) {
  return cuda_util::LaunchGridStride(gpu, n, AssignUpdateKernel<T, kAdd>, var, value, n);
}

class GpuAssignOp : public GpuOpKernel {
 public:
  explicit GpuAssignOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("validate_shape", &validate_shape_));
  }

  // use_locking is accepted and, as on the CPU, the variable's lock is always
  // taken: it only covers the check and the enqueue.
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& value = ctx->input(1);
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      if (validate_shape_) TW_OP_REQUIRES_OK(ctx, CheckAssignShape(ctx, value));
      const size_t bytes = value.TotalBytes();
      if (var->IsInitialized() && var->dtype() == value.dtype() && var->shape() == value.shape()) {
        // In place: readers sharing the buffer see the new value, as in TF.
        if (bytes > 0 && var->raw_data() != value.raw_data()) {
          TW_OP_REQUIRES_OK(ctx, gpu.CopyOnDevice(value.raw_data(), var->raw_data(), bytes));
        }
      } else {
        // A buffer owned by the variable alone, never the (possibly shared)
        // value's. The old one, if any, is freed stream-ordered.
        Tensor fresh;
        TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(value.dtype(), value.shape(), &fresh));
        if (bytes > 0) TW_OP_REQUIRES_OK(ctx, gpu.CopyOnDevice(value.raw_data(), fresh.raw_data(), bytes));
        *var = std::move(fresh);
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }

 private:
  bool validate_shape_ = true;
};

template <typename T, bool kAdd>
class GpuAssignUpdateOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& value = ctx->input(1);
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      TW_OP_REQUIRES_OK(ctx, CheckAssignUpdate(ctx, value));
      const int64_t n = var->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, (LaunchAssignUpdate<T, kAdd>(gpu, var->data<T>(), value.data<T>(), n)));
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }
};
template <typename T>
using GpuAssignAddOp = GpuAssignUpdateOp<T, true>;
template <typename T>
using GpuAssignSubOp = GpuAssignUpdateOp<T, false>;

}  // namespace

void RegisterStateCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  const std::vector<DataType> types = {kFloat32, kFloat64, kInt32, kInt64};
  RegisterCpuKernelOnGpu(target, cpu, "VariableV2", types, {}, {});
  target.RegisterUntyped<GpuAssignOp>("Assign", kDeviceGpu, "T", types);
  target.RegisterTyped<GpuAssignAddOp, float, double, int32_t, int64_t>("AssignAdd", kDeviceGpu);
  target.RegisterTyped<GpuAssignSubOp, float, double, int32_t, int64_t>("AssignSub", kDeviceGpu);
  RegisterCpuKernelOnGpu(target, cpu, "IsVariableInitialized", types, {}, {0});
  // Shares the variable's buffer or the initial value's: no device work.
  RegisterCpuKernelOnGpu(target, cpu, "InitializedValue", types, {}, {});
}

}  // namespace tw
