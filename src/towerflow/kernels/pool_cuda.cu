// Placeholder while the [cuda] kernels of this family are written: registers nothing yet.
#include "towerflow/kernels/cuda_kernels.h"

namespace tw {

void RegisterPoolCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {}

}  // namespace tw
