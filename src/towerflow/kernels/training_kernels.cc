#include "towerflow/kernels/register_all.h"
namespace tw {
void RegisterTrainingKernels(KernelRegistry&) {}
}  // namespace tw
