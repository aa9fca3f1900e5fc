// Registration of the dist module's op schemas and kernels (collective_ops.h).
// dist/ sits above runtime/, so its ops join the registries when
// EnsureDistRegistered() first runs; every builder of collective_ops.h calls
// it. Thread-safe and idempotent.
#ifndef TOWERFLOW_DIST_REGISTER_H_
#define TOWERFLOW_DIST_REGISTER_H_

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/graph/op_def.h"

namespace tw::dist {

void EnsureDistRegistered();

void RegisterProcessCollectiveOps(OpRegistry& ops, GradientRegistry& grads);
void RegisterProcessCollectiveKernels(KernelRegistry& kernels);
// collective_kernels_cuda.cc, in builds with the CUDA backend: NCCL across processes.
void RegisterProcessCollectiveCudaKernels(KernelRegistry& kernels);

}  // namespace tw::dist

#endif  // TOWERFLOW_DIST_REGISTER_H_
