#include "towerflow/kernels/register_all.h"
namespace tw {
void RegisterMatMulKernels(KernelRegistry&) {}
}  // namespace tw
