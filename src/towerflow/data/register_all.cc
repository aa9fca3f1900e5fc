#include <mutex>

#include "towerflow/data/register.h"
#include "towerflow/kernels/register_all.h"

namespace tw {

void EnsureDataRegistered() {
  static std::once_flag once;
  std::call_once(once, [] {
    EnsureKernelsRegistered();
    OpRegistry& ops = OpRegistry::Global();
    KernelRegistry& kernels = KernelRegistry::Global();
    GradientRegistry& grads = GradientRegistry::Global();
    RegisterQueueOps(ops, kernels, grads);
    RegisterParsingOps(ops, kernels, grads);
    RegisterReaderOps(ops, kernels, grads);
    RegisterImageCodecOps(ops, kernels, grads);
    RegisterDatasetOps(ops, kernels, grads);
  });
}

}  // namespace tw
