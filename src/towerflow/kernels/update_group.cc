#include "towerflow/kernels/update_group.h"

#include <cstring>

namespace tw {

MemberContexts::MemberContexts(OpKernelContext* group, const std::vector<const Node*>& members)
    : group_(group), members_(members) {
  inputs_.resize(members.size());
  int next = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    for (int i = 0; i < members[m]->num_inputs(); ++i) {
      const int k = next++;
      TensorValue v;
      v.value = group->input(k);
      if (group->input_is_ref(k)) {
        v.ref = group->mutable_input(k);
        v.ref_mu = group->input_ref_mutex(k);
      }
      inputs_[m].push_back(std::move(v));
    }
    OpKernelContext::Params params = group->params();
    params.node = members[m];
    params.inputs = &inputs_[m];
    params.num_outputs = -1;
    params.output_allocators = nullptr;  // indexed by the group's outputs, not the member's
    contexts_.push_back(std::make_unique<OpKernelContext>(params));
  }
}

Status MemberContexts::Finish() {
  for (size_t m = 0; m < contexts_.size(); ++m) {
    if (!contexts_[m]->status().ok()) return contexts_[m]->status().WithContext("in " + members_[m]->DebugName());
  }
  int next = 0;
  for (auto& c : contexts_) {
    for (TensorValue& out : c->outputs()) group_->output(next++) = std::move(out);
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<OpKernel>> SequentialGroupKernel::Create(const std::vector<const Node*>& members,
                                                                   Device* device) {
  std::vector<std::unique_ptr<OpKernel>> kernels;
  for (const Node* m : members) {
    TW_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> k, KernelRegistry::Global().CreateKernel(*m, device));
    kernels.push_back(std::move(k));
  }
  OpKernelConstruction c(*members[0], device);
  return std::unique_ptr<OpKernel>(new SequentialGroupKernel(&c, members, std::move(kernels)));
}

void SequentialGroupKernel::Compute(OpKernelContext* ctx) {
  MemberContexts members(ctx, members_);
  for (int m = 0; m < members.size(); ++m) {
    kernels_[static_cast<size_t>(m)]->Compute(members.at(m));
    if (!members.at(m)->status().ok()) break;
  }
  TW_OP_REQUIRES_OK(ctx, members.Finish());
}

namespace {

// The same value every step: one output, or two scalar constants that hold
// the same bits (optimizers make a constant per variable, colocated with it).
bool SameScalar(const Output& a, const Output& b) {
  if (a == b) return true;
  if (a.node->op() != "Const" || b.node->op() != "Const") return false;
  auto va = a.node->attrs().Get<Tensor>("value");
  auto vb = b.node->attrs().Get<Tensor>("value");
  if (!va.ok() || !vb.ok() || va->dtype() != vb->dtype() || va->NumElements() != 1 || vb->NumElements() != 1) {
    return false;
  }
  return va->TotalBytes() == vb->TotalBytes() && std::memcmp(va->raw_data(), vb->raw_data(), va->TotalBytes()) == 0;
}

}  // namespace

bool MomentumGroupCompatible(const Node& a, const Node& b) {
  // Inputs: var, accum, lr, grad, momentum.
  auto nesterov = [](const Node& n) {
    auto v = n.attrs().Get<bool>("use_nesterov");
    return v.ok() && *v;
  };
  return SameScalar(a.input(2), b.input(2)) && SameScalar(a.input(4), b.input(4)) && nesterov(a) == nesterov(b);
}

bool GradientDescentGroupCompatible(const Node& a, const Node& b) {
  // Inputs: var, alpha, delta.
  return SameScalar(a.input(1), b.input(1));
}

bool AdamGroupCompatible(const Node& a, const Node& b) {
  // Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad.
  for (int i = 3; i <= 8; ++i) {
    if (!SameScalar(a.input(i), b.input(i))) return false;
  }
  auto nesterov = [](const Node& n) {
    auto v = n.attrs().Get<bool>("use_nesterov");
    return v.ok() && *v;
  };
  return nesterov(a) == nesterov(b);
}

bool RMSPropGroupCompatible(const Node& a, const Node& b) {
  // Inputs: var, [mg,] ms, mom, lr, rho, momentum, epsilon, grad.
  if (a.op() != b.op()) return false;
  const int first = a.op() == "ApplyCenteredRMSProp" ? 4 : 3;
  for (int i = first; i < first + 4; ++i) {
    if (!SameScalar(a.input(i), b.input(i))) return false;
  }
  return true;
}

bool AdagradGroupCompatible(const Node& a, const Node& b) {
  // Inputs: var, accum, lr, grad.
  auto update_slots = [](const Node& n) {
    auto v = n.attrs().Get<bool>("update_slots");
    return !v.ok() || *v;
  };
  return SameScalar(a.input(2), b.input(2)) && update_slots(a) == update_slots(b);
}

void RegisterUpdateGroups(KernelRegistry& registry) {
  registry.RegisterGroup(GroupDef{"ApplyMomentum", kDeviceCpu, {kFloat32, kFloat64}, &SequentialGroupKernel::Create,
                                  &MomentumGroupCompatible, /*twin_only=*/true, /*step_bump=*/true});
  registry.RegisterGroup(GroupDef{"ApplyGradientDescent", kDeviceCpu, {kFloat32, kFloat64},
                                  &SequentialGroupKernel::Create, &GradientDescentGroupCompatible,
                                  /*twin_only=*/true, /*step_bump=*/true});
  registry.RegisterGroup(GroupDef{"ApplyAdam", kDeviceCpu, {kFloat32, kFloat64}, &SequentialGroupKernel::Create,
                                  &AdamGroupCompatible, /*twin_only=*/true, /*step_bump=*/true});
  for (const char* op : {"ApplyRMSProp", "ApplyCenteredRMSProp"}) {
    registry.RegisterGroup(GroupDef{op, kDeviceCpu, {kFloat32, kFloat64}, &SequentialGroupKernel::Create,
                                    &RMSPropGroupCompatible, /*twin_only=*/true, /*step_bump=*/true});
  }
  registry.RegisterGroup(GroupDef{"ApplyAdagrad", kDeviceCpu, {kFloat32, kFloat64}, &SequentialGroupKernel::Create,
                                  &AdagradGroupCompatible, /*twin_only=*/true, /*step_bump=*/true});
}

}  // namespace tw
