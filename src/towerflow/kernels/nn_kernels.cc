#include "towerflow/kernels/register_all.h"
namespace tw {
void RegisterNnKernels(KernelRegistry&) {}
}  // namespace tw
