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
// the work itself runs later on the stream, ordered after earlier readers.
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"

namespace tw {
namespace {

// No __restrict__: AssignAdd(v, v) passes one buffer as both.
template <typename T, bool kAdd>
__global__ void AssignUpdateKernel(T* var, const T* value, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
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
  const LaunchShape shape = LaunchShapeFor(n, gpu);
  AssignUpdateKernel<T, kAdd><<<shape.blocks, shape.threads, 0, gpu.stream()>>>(var, value, n);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

// state_kernels.cc's VariableName: the VariableV2 behind ref input `i`,
// through the refs forwarded by Assign and the Apply* ops.
std::string VariableName(const Node& node, int i) {
  Output o = node.input(i);
  while (o.node->op() != "VariableV2" && o.node->num_inputs() > 0 && o.node->input_is_ref(0)) {
    o = o.node->input(0);
  }
  return o.node->name();
}

class GpuAssignOp : public OpKernel {
 public:
  explicit GpuAssignOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("validate_shape", &validate_shape_));
  }

  // use_locking is accepted and, as on the CPU, the variable's lock is always
  // taken: it only covers the check and the enqueue.
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    const Tensor& value = ctx->input(1);
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      if (validate_shape_) {
        // Before the first assignment the declared shape is what must match.
        const bool fits = var->IsInitialized() ? var->shape() == value.shape()
                                               : node().input(0).shape().IsCompatibleWith(value.shape());
        TW_OP_REQUIRES(ctx, fits,
                       errors::InvalidArgument("Assign requires shapes of both tensors to match: variable ",
                                               VariableName(node(), 0), " has shape ",
                                               var->IsInitialized() ? var->shape().ToString()
                                                                    : node().input(0).shape().ToString(),
                                               " but the value has shape ", value.shape().ToString()));
      }
      const size_t bytes = value.TotalBytes();
      if (var->IsInitialized() && var->dtype() == value.dtype() && var->shape() == value.shape()) {
        // In place: readers sharing the buffer see the new value, as in TF.
        if (bytes > 0 && var->raw_data() != value.raw_data()) {
          TW_OP_REQUIRES_OK(ctx, gpu->CopyOnDevice(value.raw_data(), var->raw_data(), bytes));
        }
      } else {
        // A buffer owned by the variable alone, never the (possibly shared)
        // value's. The old one, if any, is freed stream-ordered.
        Tensor fresh;
        TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(value.dtype(), value.shape(), &fresh));
        if (bytes > 0) TW_OP_REQUIRES_OK(ctx, gpu->CopyOnDevice(value.raw_data(), fresh.raw_data(), bytes));
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
class GpuAssignUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    TW_OP_REQUIRES_OK(ctx, gpu->Activate());
    const Tensor& value = ctx->input(1);
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      TW_OP_REQUIRES(
          ctx, var->IsInitialized(),
          errors::FailedPrecondition("Attempting to use uninitialized value ", VariableName(node(), 0)));
      TW_OP_REQUIRES(ctx, var->shape() == value.shape(),
                     errors::InvalidArgument(node().op(), ": variable ", VariableName(node(), 0),
                                             " has shape ", var->shape().ToString(),
                                             " but the value has shape ", value.shape().ToString()));
      const int64_t n = var->NumElements();
      if (n > 0) {
        TW_OP_REQUIRES_OK(ctx, (LaunchAssignUpdate<T, kAdd>(*gpu, var->data<T>(), value.data<T>(), n)));
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
}

}  // namespace tw
