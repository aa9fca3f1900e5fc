#include "towerflow/dist/register.h"

#include <mutex>

#include "towerflow/device/device_set.h"
#include "towerflow/kernels/register_all.h"

namespace tw::dist {

void EnsureDistRegistered() {
  static std::once_flag once;
  std::call_once(once, [] {
    EnsureKernelsRegistered();
    RegisterProcessCollectiveOps(OpRegistry::Global(), GradientRegistry::Global());
    RegisterProcessCollectiveKernels(KernelRegistry::Global());
#if TOWERFLOW_HAVE_CUDA
    // As EnsureKernelsRegistered: GPU kernels only where a GPU is visible (a
    // fake GPU would pick this kernel, which needs a CUDA device).
    if (VisibleCudaGpuCount() > 0) RegisterProcessCollectiveCudaKernels(KernelRegistry::Global());
#endif
  });
}

}  // namespace tw::dist
