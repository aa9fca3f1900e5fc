// Update groups' kernels (kernel_registry.h's GroupDef; the plan builder
// forms the groups, runtime/update_groups.h): what every group kernel needs.
//
// MemberContexts gives each member of a group a context of its own over its
// slice of the group's inputs (the same device, step, allocator and
// cancellation), so member checks and errors are the single op's; Finish
// moves the members' outputs into the group's, in turn. SequentialGroupKernel
// runs each member's own kernel in turn: the CPU twin of a device's group
// kernel (one launch over every member), bit for bit the members run apart.
#ifndef TOWERFLOW_KERNELS_UPDATE_GROUP_H_
#define TOWERFLOW_KERNELS_UPDATE_GROUP_H_

#include <memory>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/device/op_kernel.h"

namespace tw {

class MemberContexts {
 public:
  // REQUIRES: `group`'s inputs are the members' inputs in turn.
  MemberContexts(OpKernelContext* group, const std::vector<const Node*>& members);
  int size() const { return static_cast<int>(contexts_.size()); }
  OpKernelContext* at(int i) { return contexts_[static_cast<size_t>(i)].get(); }
  // The first member's error, naming the member; else moves every member's
  // outputs into the group's context and returns OK.
  Status Finish();

 private:
  OpKernelContext* group_;
  std::vector<const Node*> members_;
  std::vector<std::vector<TensorValue>> inputs_;
  std::vector<std::unique_ptr<OpKernelContext>> contexts_;
};

class SequentialGroupKernel : public OpKernel {
 public:
  // One kernel per member on `device` (the registry's for its type).
  static StatusOr<std::unique_ptr<OpKernel>> Create(const std::vector<const Node*>& members, Device* device);
  void Compute(OpKernelContext* ctx) override;

 private:
  SequentialGroupKernel(OpKernelConstruction* c, std::vector<const Node*> members,
                        std::vector<std::unique_ptr<OpKernel>> kernels)
      : OpKernel(c), members_(std::move(members)), kernels_(std::move(kernels)) {}
  std::vector<const Node*> members_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;
};

// ApplyMomentum nodes that may share a kernel: the same learning-rate and
// momentum inputs (one output, or scalar constants of the same value), the
// same use_nesterov. A group kernel reads the first member's.
bool MomentumGroupCompatible(const Node& a, const Node& b);
// ApplyGradientDescent nodes with the same alpha.
bool GradientDescentGroupCompatible(const Node& a, const Node& b);
// ApplyAdam nodes with the same beta powers, learning rate, betas and epsilon
// (optimizers share the beta-power variables, and make one constant per
// variable for the others), the same use_nesterov.
bool AdamGroupCompatible(const Node& a, const Node& b);
// ApplyRMSProp (or ApplyCenteredRMSProp) nodes with the same learning rate,
// rho, momentum and epsilon.
bool RMSPropGroupCompatible(const Node& a, const Node& b);
// ApplyAdagrad nodes with the same learning rate and update_slots.
bool AdagradGroupCompatible(const Node& a, const Node& b);

// The CPU twins of the update groups of ApplyMomentum, ApplyGradientDescent,
// ApplyAdam, ApplyRMSProp, ApplyCenteredRMSProp and ApplyAdagrad (twin-only: CPU plans fuse each gradient into its momentum
// update instead, momentum_fusions.cc, and gain nothing from one item).
void RegisterUpdateGroups(KernelRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_UPDATE_GROUP_H_
