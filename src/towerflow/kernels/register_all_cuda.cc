// RegisterCudaKernels: every CUDA kernel family (kernels/cuda_kernels.h).
// Compiled only with TOWERFLOW_CUDA (the *_cuda.cc suffix).
#include "towerflow/kernels/cuda_kernels.h"

#include <algorithm>

namespace tw {

void RegisterCpuKernelOnGpu(KernelRegistry& target, const KernelRegistry& cpu, const std::string& op,
                            std::vector<DataType> types, std::vector<int> host_inputs,
                            std::vector<int> host_outputs) {
  for (const KernelDef* k : cpu.KernelsFor(op)) {
    if (k->device_type != kDeviceCpu) continue;
    KernelDef copy = *k;
    if (!types.empty()) {
      std::vector<DataType> kept;
      for (DataType t : copy.types) {
        if (std::find(types.begin(), types.end(), t) != types.end()) kept.push_back(t);
      }
      if (kept.empty() && !copy.types.empty()) continue;
      copy.types = std::move(kept);
    }
    copy.device_type = kDeviceGpu;
    copy.host_memory_inputs = host_inputs;
    copy.host_memory_outputs = host_outputs;
    target.Register(std::move(copy));
  }
}

void RegisterCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  RegisterCwiseCudaKernels(target, cpu);
  RegisterNnCudaKernels(target, cpu);
  RegisterTrainingCudaKernels(target, cpu);
  RegisterAdaptiveTrainingCudaKernels(target, cpu);
  RegisterStateCudaKernels(target, cpu);
  RegisterArrayCudaKernels(target, cpu);
  RegisterLayoutCudaKernels(target, cpu);
  RegisterGatherCudaKernels(target, cpu);
  RegisterMatMulCudaKernels(target, cpu);
  RegisterMatMulEpilogueCudaKernels(target, cpu);
  RegisterReductionCudaKernels(target, cpu);
  RegisterConvCudaKernels(target, cpu);
  RegisterPoolCudaKernels(target, cpu);
  RegisterLrnCudaKernels(target, cpu);
}

}  // namespace tw
