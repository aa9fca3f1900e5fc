// SequentialPairKernel: a producer -> consumer pair (kernel_registry.h's
// FusionDef) run as its two ops' own kernels one after the other, the
// producer's output handed to the consumer: the CPU twin of a device's fused
// kernel where the CPU has no fused kernel of its own, bit for bit the pair
// run apart. Registered twin-only on the CPU (plans there keep the pair as
// it is) and borrowed by fake GPUs (device/fake/), so that CPU-only CI runs
// GPU plans with the GPU's fusions in them.
#ifndef TOWERFLOW_KERNELS_PAIR_TWIN_H_
#define TOWERFLOW_KERNELS_PAIR_TWIN_H_

#include <memory>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/device/op_kernel.h"

namespace tw {

class SequentialPairKernel : public OpKernel {
 public:
  // The factory of a FusionDef whose consumer reads the producer's output at
  // input `consumer_input`; the two kernels are the registry's for the
  // construction's device.
  static FusedKernelFactory Factory(int consumer_input);
  void Compute(OpKernelContext* ctx) override;

 private:
  SequentialPairKernel(OpKernelConstruction* c, const Node& consumer, int consumer_input,
                       std::unique_ptr<OpKernel> producer, std::unique_ptr<OpKernel> consumer_kernel)
      : OpKernel(c), consumer_(consumer), consumer_input_(consumer_input), producer_(std::move(producer)),
        consumer_kernel_(std::move(consumer_kernel)) {}
  const Node& consumer_;
  const int consumer_input_;
  std::unique_ptr<OpKernel> producer_, consumer_kernel_;
};

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_PAIR_TWIN_H_
