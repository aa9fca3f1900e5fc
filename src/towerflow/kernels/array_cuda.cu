// GPU kernels of the basic array ops. CPU twins: array_kernels.cc (Const,
// Identity, StopGradient, NoOp, ZerosLike, OnesLike, Cast) and
// shape_kernels.cc (Shape, Reshape, ExpandDims, Squeeze, Fill).
//
// Fill, ZerosLike and OnesLike use strided_copy_cuda.h's fill (a memset for
// zero bytes; CPU: FillOp, FillLikeOp). CUDA kernel here:
//   CastKernel<S, D>   one thread per element, grid-stride: Cast (CPU: CastOp).
// Const copies its attr value into device memory once (GpuDevice::CopyFromHost)
// and outputs that buffer at every step; no kernel.
//
// Registered as CPU kernel classes on the GPU, because they never read element
// data (each checked against its CPU class):
//   Identity, StopGradient, IdentityOp sets output 0 to input 0, sharing its
//   EnsureShape             buffer (EnsureShape after checking its shape);
//                           a ref input (a variable) arrives resolved by
//                           the executor to the variable's current tensor, read
//                           under its lock, so the class sees a plain tensor.
//   Reshape, ExpandDims     ViewOp reads the input's shape and the int32 shape /
//                           dim argument (input 1, host memory), and outputs
//                           Tensor::Reshaped: the same buffer, another shape.
//   Squeeze                 ViewOp on the input's shape and the squeeze_dims attr.
//   Shape                   ShapeOp reads input 0's shape; its int32 output is in
//                           host memory.
//   NoOp                    no inputs, no outputs.
// and, for int32 only, TF's host-memory kernels (array_cuda.h): every argument
// in host memory, computed by the CPU class on the host, so the shape
// arithmetic of gradients never bounces through the GPU.
//
// The GPU kernels here only check shapes and enqueue work, so they declare
// themselves cheap (IsExpensive() false) and the executor runs them inline.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <utility>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/graph/op_def.h"
#include "towerflow/kernels/array_cuda.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/internal/strided_copy_cuda.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using strided_copy::LaunchFill;

// static_cast per element, as CastOp does (bool: nonzero is true).
template <typename S, typename D>
__global__ void CastKernel(const S* __restrict__ in, D* __restrict__ out, int64_t n) {
  for (int64_t i = cuda_util::GridThreadIndex(); i < n; i += cuda_util::GridThreadCount()) {
    out[i] = static_cast<D>(in[i]);
  }
}

// REQUIRES: n > 0.
template <typename S, typename D>
Status LaunchCast(const GpuDevice& gpu, const S* in, D* out, int64_t n) {
  return cuda_util::LaunchGridStride(gpu, n, CastKernel<S, D>, in, out, n);
}

// fn.template operator()<T>() for the device-memory dtypes (array_cuda.h);
// Internal for another dtype, which registration never routes here.
template <typename Fn>
Status DispatchDeviceType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case kFloat32:
      return fn.template operator()<float>();
    case kFloat64:
      return fn.template operator()<double>();
    case kInt64:
      return fn.template operator()<int64_t>();
    case kUInt8:
      return fn.template operator()<uint8_t>();
    case kBool:
      return fn.template operator()<bool>();
    default:
      return errors::Internal("no GPU kernel for dtype ", DataTypeName(dtype));
  }
}

// The device-memory dtypes and int32: every Cast destination.
template <typename Fn>
Status DispatchCastType(DataType dtype, Fn&& fn) {
  if (dtype == kInt32) return fn.template operator()<int32_t>();
  return DispatchDeviceType(dtype, std::forward<Fn>(fn));
}

// The attr's value, copied to device memory at the first Compute and shared
// by every step after it (consumers never write their inputs).
class GpuConstOp : public GpuOpKernel {
 public:
  explicit GpuConstOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("value", &host_));
  }

  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor value;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!device_.IsInitialized()) {
        // Queued on the copy stream; the compute stream waits for it before
        // any consumer's work (gpu_device.h), so no wait is needed here.
        Tensor copy;
        TW_OP_REQUIRES_OK(ctx, gpu.CopyFromHost(host_, &copy));
        device_ = std::move(copy);
      }
      value = device_;
    }
    ctx->set_output(0, std::move(value));
  }
  bool IsExpensive() const override { return false; }
  bool OutputsFixed() const override { return true; }

 private:
  Tensor host_;
  std::mutex mu_;
  Tensor device_;  // guarded by mu_; uninitialized until the first Compute
};

template <typename T>
class GpuFillOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, shape_util::FillOutput(ctx, &out));  // the CPU twin's checks
    const int64_t n = out->NumElements();
    if (n == 0) return;
    // The value (input 1) is in host memory.
    TW_OP_REQUIRES_OK(ctx, LaunchFill<T>(gpu, out->data<T>(), n, ctx->input(1).scalar<T>()));
  }
  bool IsExpensive() const override { return false; }
};

// ZerosLike / OnesLike: only the input's shape is read.
template <typename T, int kValue>
class GpuFillLikeOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    TW_OP_REQUIRES_OK(ctx, LaunchFill<T>(gpu, out->data<T>(), n, static_cast<T>(kValue)));
  }
  bool IsExpensive() const override { return false; }
};
template <typename T>
using GpuZerosLikeOp = GpuFillLikeOp<T, 0>;
template <typename T>
using GpuOnesLikeOp = GpuFillLikeOp<T, 1>;

class GpuCastOp : public GpuOpKernel {
 public:
  explicit GpuCastOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("DstT", &dst_));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    if (x.dtype() == dst_) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t n = x.NumElements();
    if (n == 0) return;
    TW_OP_REQUIRES_OK(ctx, DispatchDeviceType(x.dtype(), [&]<typename S>() {
                        return DispatchCastType(dst_, [&]<typename D>() {
                          return LaunchCast<S, D>(gpu, x.data<S>(), out->data<D>(), n);
                        });
                      }));
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType dst_ = kFloat32;
};

// The one type attr of `def` ("T", "dtype"), for specialising an untyped CPU kernel.
std::string SoleTypeAttr(const OpDef& def) {
  std::string found;
  for (const AttrDef& a : def.attrs) {
    if (a.type != AttrType::kType) continue;
    TW_CHECK(found.empty()) << def.name << " has several type attrs; register its kernels by type attr";
    found = a.name;
  }
  TW_CHECK(!found.empty()) << def.name << " has no type attr to restrict its dtypes by";
  return found;
}

std::vector<int> Iota(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// RegisterCpuClassOnGpu; with `bounded`, kernel creation fails for a node
// with more than kMaxHostListArgs inputs or outputs (the host-memory lists
// stop there, so the rest would be device pointers read on the host).
void RegisterCopies(KernelRegistry& target, const KernelRegistry& cpu, const std::string& op,
                    const std::vector<DataType>& types, const std::vector<int>& host_inputs,
                    const std::vector<int>& host_outputs, bool bounded) {
  const OpDef* def = OpRegistry::Global().Find(op);
  TW_CHECK(def != nullptr) << "registering GPU kernels of unknown op " << op;
  for (const KernelDef* k : cpu.KernelsFor(op)) {
    if (k->device_type != kDeviceCpu) continue;
    KernelDef copy = *k;
    if (!types.empty() && copy.type_attr.empty()) {
      copy.type_attr = SoleTypeAttr(*def);
      copy.types = types;
    } else if (!types.empty()) {
      std::vector<DataType> kept;
      for (DataType t : copy.types) {
        if (std::find(types.begin(), types.end(), t) != types.end()) kept.push_back(t);
      }
      if (kept.empty()) continue;
      copy.types = std::move(kept);
    }
    copy.device_type = kDeviceGpu;
    copy.host_memory_inputs = host_inputs;
    copy.host_memory_outputs = host_outputs;
    if (bounded) {
      KernelFactory inner = copy.factory;
      copy.factory = [inner](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
        const Node& n = c->node();
        if (n.num_inputs() > kMaxHostListArgs || n.num_outputs() > kMaxHostListArgs) {
          c->SetStatus(errors::Unimplemented(n.DebugName(), " has ", n.num_inputs(), " inputs and ",
                                             n.num_outputs(), " outputs; its GPU kernel keeps at most ",
                                             kMaxHostListArgs, " of each in host memory: place it on a CPU"));
          return nullptr;
        }
        return inner(c);
      };
    }
    target.Register(std::move(copy));
  }
}

}  // namespace

const std::vector<DataType>& GpuDeviceMemoryTypes() {
  static const std::vector<DataType>* types =
      new std::vector<DataType>{kFloat32, kFloat64, kInt64, kUInt8, kBool};
  return *types;
}

void RegisterCpuClassOnGpu(KernelRegistry& target, const KernelRegistry& cpu, const std::string& op,
                           const std::vector<DataType>& types, std::vector<int> host_inputs,
                           std::vector<int> host_outputs) {
  RegisterCopies(target, cpu, op, types, host_inputs, host_outputs, false);
}

void RegisterHostKernelOnGpu(KernelRegistry& target, const KernelRegistry& cpu, const std::string& op,
                             const std::vector<DataType>& types) {
  const OpDef* def = OpRegistry::Global().Find(op);
  TW_CHECK(def != nullptr) << "registering GPU kernels of unknown op " << op;
  auto has_list = [](const std::vector<ArgDef>& args) {
    return std::any_of(args.begin(), args.end(), [](const ArgDef& a) { return !a.number_attr.empty(); });
  };
  const bool list_inputs = has_list(def->inputs), list_outputs = has_list(def->outputs);
  const int inputs = list_inputs ? kMaxHostListArgs : static_cast<int>(def->inputs.size());
  const int outputs = list_outputs ? kMaxHostListArgs : static_cast<int>(def->outputs.size());
  RegisterCopies(target, cpu, op, types, Iota(inputs), Iota(outputs), list_inputs || list_outputs);
}

void RegisterArrayCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  const std::vector<DataType>& device = GpuDeviceMemoryTypes();
  const std::vector<DataType> int32 = {kInt32};

  RegisterGpuKernel<GpuConstOp>(target, "Const", "dtype", device, {}, {});
  RegisterGpuKernels<GpuFillOp, float, double, int64_t, uint8_t, bool>(target, "Fill", {0, 1}, {});
  RegisterGpuKernels<GpuZerosLikeOp, float, double, int64_t, uint8_t>(target, "ZerosLike", {}, {});
  RegisterGpuKernels<GpuOnesLikeOp, float, double, int64_t, uint8_t>(target, "OnesLike", {}, {});
  // int32 sources stay on the host (below): a Cast from int32 is host work.
  RegisterGpuKernel<GpuCastOp>(target, "Cast", "SrcT", device, {}, {});

  // Pass-through kernels (the file comment says why each reads no data).
  RegisterCpuClassOnGpu(target, cpu, "Identity", device, {}, {});
  RegisterCpuClassOnGpu(target, cpu, "StopGradient", device, {}, {});
  RegisterCpuClassOnGpu(target, cpu, "EnsureShape", device, {}, {});
  RegisterCpuClassOnGpu(target, cpu, "Reshape", device, {1}, {});
  RegisterCpuClassOnGpu(target, cpu, "ExpandDims", device, {1}, {});
  RegisterCpuClassOnGpu(target, cpu, "Squeeze", device, {}, {});
  RegisterCpuClassOnGpu(target, cpu, "Shape", device, {}, {0});
  RegisterCpuClassOnGpu(target, cpu, "NoOp", {}, {}, {});

  // int32 in host memory, as TF keeps it on a GPU. The cwise and reduction
  // ops' float kernels are the cwise/reduction families'; towerflow has no
  // Prod op. ZerosLike and OnesLike of int32 join the list for consistency.
  for (const char* op :
       {"Const",     "Identity",     "StopGradient", "EnsureShape", "Shape", "Reshape", "ExpandDims", "Squeeze", "Fill",
        "ZerosLike", "OnesLike",     "Cast",         "Add",   "Sub",     "Mul",        "Div",     "Maximum",
        "Equal",     "GreaterEqual", "Neg",          "Sum",   "Max",     "Mean",       "FloorDiv", "FloorMod",
        "Pow"}) {
    RegisterHostKernelOnGpu(target, cpu, op, int32);
  }
  RegisterShapeCudaKernels(target, cpu);
}

}  // namespace tw
