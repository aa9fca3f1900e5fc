#include "towerflow/kernels/register_all.h"

#include <mutex>

#include "towerflow/device/device_set.h"
#include "towerflow/kernels/update_group.h"
#if TOWERFLOW_HAVE_CUDA
#include "towerflow/kernels/cuda_kernels.h"
#endif

namespace tw {

void EnsureKernelsRegistered() {
  static std::once_flag once;
  std::call_once(once, [] {
    KernelRegistry& r = KernelRegistry::Global();
    RegisterArrayKernels(r);
    RegisterShapeKernels(r);
    RegisterGatherKernels(r);
    RegisterLayoutKernels(r);
    RegisterImageKernels(r);
    RegisterBicubicAreaKernels(r);
    RegisterColorKernels(r);
    RegisterBoundingBoxKernels(r);
    RegisterMathKernels(r);
    RegisterMatMulKernels(r);
    RegisterReductionKernels(r);
    RegisterNnKernels(r);
    RegisterConvKernels(r);
    RegisterAvgPoolKernels(r);
    RegisterLrnKernels(r);
    RegisterStateKernels(r);
    RegisterRandomKernels(r);
    RegisterTrainingKernels(r);
    RegisterBatchMatMulKernels(r);
    RegisterMomentumFusions(r);
    RegisterUpdateGroups(r);
    RegisterCastFusions(r);
    RegisterPairTwins(r);
    RegisterCollectiveKernels(r);
#if TOWERFLOW_HAVE_CUDA
    // GPU kernels only where a GPU is visible (kernels/cuda_kernels.h says why).
    if (VisibleCudaGpuCount() > 0) RegisterCudaKernels(r, r);
#endif
  });
}

}  // namespace tw
