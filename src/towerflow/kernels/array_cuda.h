// Registration helpers of the array and shape CUDA kernel families
// (array_cuda.cu, shape_cuda.cu), internal to kernels/ and built only with
// TOWERFLOW_CUDA. No CUDA types appear here.
//
// Memory types on a GPU follow TF: values of every dtype but int32 live in
// device memory; int32 values (shapes, indices, the shape arithmetic of
// gradients) live in host memory, where the CPU kernel classes compute them on
// a GPU device without a CUDA launch. Shape, axis and size arguments of the GPU
// kernels are host-memory inputs, read on the host (all but ConcatV2's axis,
// which follows a variadic list: shape_cuda.cu says how it is read).
//
// The helpers run at registration time (once, from EnsureKernelsRegistered);
// they are not meant to be called concurrently.
#ifndef TOWERFLOW_KERNELS_ARRAY_CUDA_H_
#define TOWERFLOW_KERNELS_ARRAY_CUDA_H_

#include <string>
#include <vector>

#include "towerflow/kernels/cuda_kernels.h"

namespace tw {

// The dtypes the array and shape GPU kernels keep in device memory: float,
// double, int64, uint8, bool (not int32, which stays in host memory; not
// string, which no GPU kernel takes).
const std::vector<DataType>& GpuDeviceMemoryTypes();

// Variadic ops (ConcatV2, ConcatOffset) with every argument in host memory
// list host-memory indices up to this bound: a KernelDef names indices, not
// argument lists. A node with more inputs or outputs fails kernel creation
// with Unimplemented naming the node and the bound.
inline constexpr int kMaxHostListArgs = 64;

// Registers under "GPU" a copy of each CPU KernelDef of `op` for the dtypes in
// `types` (every dtype when empty), with the given inputs and outputs in host
// memory. Unlike RegisterCpuKernelOnGpu (cuda_kernels.h), a CPU kernel
// registered untyped is specialised on the op's one type attr, so `types` also
// restricts untyped kernels (Identity, Reshape, Shape, Const). REQUIRES: `op`
// is a registered op, and an untyped CPU kernel filtered by `types` belongs to
// an op with exactly one type attr (TW_CHECKed: a registration bug).
void RegisterCpuClassOnGpu(KernelRegistry& target, const KernelRegistry& cpu, const std::string& op,
                           const std::vector<DataType>& types, std::vector<int> host_inputs,
                           std::vector<int> host_outputs);

// RegisterCpuClassOnGpu with every input and output in host memory: the
// int32-on-host kernels. The argument counts come from the op's OpDef; inputs
// (outputs) that include a list argument cover kMaxHostListArgs indices.
void RegisterHostKernelOnGpu(KernelRegistry& target, const KernelRegistry& cpu, const std::string& op,
                             const std::vector<DataType>& types);

// Slice, SliceGrad, ConcatV2, ConcatOffset, BroadcastTo, SumToShape
// (shape_cuda.cu); called from RegisterArrayCudaKernels.
void RegisterShapeCudaKernels(KernelRegistry& target, const KernelRegistry& cpu);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_ARRAY_CUDA_H_
