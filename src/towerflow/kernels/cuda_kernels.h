// The CUDA kernels' registration (builds with TOWERFLOW_CUDA only).
//
// GPU kernels register under device type "GPU" only when a GPU is visible
// (EnsureKernelsRegistered checks VisibleCudaGpuCount()): on a machine without
// one, the test-only fake GPU (device/fake/) owns the "GPU" kernels instead.
// `towerflow ops` and the twin test register them into a registry of their own
// to list and check them without a GPU.
//
// Each family lives in its *_cuda.cu (or *_cuda.cc for library-only kernels)
// file next to its CPU twin and exports one function here. `cpu` is the
// registry holding the CPU kernels (KernelRegistry::Global() once
// EnsureKernelsRegistered has run): families that run a CPU kernel class on a
// GPU device with all its arguments in host memory (TF's int32-on-host kernels,
// Shape) or that only forward buffers (Identity, Reshape) copy its KernelDefs
// with RegisterCpuKernelOnGpu; the GPU kernel classes register with
// KernelRegistry::RegisterTyped, or with RegisterGpuKernel(s) below when they
// keep arguments in host memory. No CUDA types appear here.
#ifndef TOWERFLOW_KERNELS_CUDA_KERNELS_H_
#define TOWERFLOW_KERNELS_CUDA_KERNELS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "towerflow/device/kernel_registry.h"

namespace tw {

// Every CUDA kernel family below, in order.
void RegisterCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);

void RegisterCwiseCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterNnCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);  // with the cross-entropies
void RegisterXentCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterTrainingCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterAdaptiveTrainingCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);  // RMSProp, Adagrad
void RegisterStateCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterArrayCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterLayoutCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);  // Transpose, Tile, Pad
void RegisterGatherCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);  // GatherV2, OneHot, Select, ...
void RegisterMatMulCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterMatMulEpilogueCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterReductionCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterConvCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterPoolCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);
void RegisterLrnCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);

// Registers under "GPU" a copy of each CPU KernelDef of `op` whose dtype is in
// `types` (all of them when empty), with the given inputs and outputs in host
// memory. For kernels that read no device memory: pass-through kernels
// (Identity, Reshape: outputs share the input's buffer), and CPU kernels whose
// every argument is in host memory. Does nothing when `op` has no CPU kernel.
void RegisterCpuKernelOnGpu(KernelRegistry& target, const KernelRegistry& cpu, const std::string& op,
                            std::vector<DataType> types, std::vector<int> host_inputs,
                            std::vector<int> host_outputs);

// Registers GPU kernel class `Kernel` for `op` under type attr `type_attr`
// with the dtypes `types` and the given host-memory arguments.
template <typename Kernel>
void RegisterGpuKernel(KernelRegistry& target, const std::string& op, std::string type_attr,
                       std::vector<DataType> types, std::vector<int> host_inputs,
                       std::vector<int> host_outputs) {
  target.Register(KernelDef{
      op, kDeviceGpu, std::move(type_attr), std::move(types),
      [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> { return std::make_unique<Kernel>(c); },
      std::move(host_inputs), std::move(host_outputs)});
}

// Registers Kernel<T> for each T under op / "GPU", specialised on attr "T",
// with the given host-memory arguments (KernelRegistry::RegisterTyped keeps
// none).
template <template <typename> class Kernel, typename... Ts>
void RegisterGpuKernels(KernelRegistry& target, const std::string& op, const std::vector<int>& host_inputs,
                        const std::vector<int>& host_outputs) {
  (RegisterGpuKernel<Kernel<Ts>>(target, op, "T", {DataTypeOf<Ts>()}, host_inputs, host_outputs), ...);
}

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_CUDA_KERNELS_H_
