#include "towerflow/kernels/register_all.h"

#include <mutex>

namespace tw {

void EnsureKernelsRegistered() {
  static std::once_flag once;
  std::call_once(once, [] {
    KernelRegistry& r = KernelRegistry::Global();
    RegisterArrayKernels(r);
    RegisterShapeKernels(r);
    RegisterMathKernels(r);
    RegisterMatMulKernels(r);
    RegisterReductionKernels(r);
    RegisterNnKernels(r);
    RegisterConvKernels(r);
    RegisterStateKernels(r);
    RegisterRandomKernels(r);
    RegisterTrainingKernels(r);
  });
}

}  // namespace tw
