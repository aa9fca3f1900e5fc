#include "towerflow/kernels/register_all.h"
namespace tw {
void RegisterStateKernels(KernelRegistry&) {}
}  // namespace tw
