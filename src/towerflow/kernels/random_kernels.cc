#include "towerflow/kernels/register_all.h"
namespace tw {
void RegisterRandomKernels(KernelRegistry&) {}
}  // namespace tw
