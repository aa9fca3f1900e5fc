#include "towerflow/dist/register.h"

#include <mutex>

#include "towerflow/kernels/register_all.h"

namespace tw::dist {

void EnsureDistRegistered() {
  static std::once_flag once;
  std::call_once(once, [] {
    EnsureKernelsRegistered();
    RegisterProcessCollectiveOps(OpRegistry::Global(), GradientRegistry::Global());
    RegisterProcessCollectiveKernels(KernelRegistry::Global());
#if TOWERFLOW_HAVE_CUDA
    RegisterProcessCollectiveCudaKernels(KernelRegistry::Global());
#endif
  });
}

}  // namespace tw::dist
