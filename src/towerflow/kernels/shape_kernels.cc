#include "towerflow/kernels/register_all.h"
namespace tw {
void RegisterShapeKernels(KernelRegistry&) {}
}  // namespace tw
