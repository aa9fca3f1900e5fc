#include "towerflow/kernels/register_all.h"
namespace tw {
void RegisterConvKernels(KernelRegistry&) {}
}  // namespace tw
