#include "towerflow/kernels/variable_args.h"

#include <algorithm>

namespace tw {

std::string VariableName(const Node& node, int i) {
  Output o = node.input(i);
  while (o.node->op() != "VariableV2" && o.node->num_inputs() > 0 && o.node->input_is_ref(0)) {
    o = o.node->input(0);
  }
  return o.node->name();
}

Status UninitializedError(const Node& node, int i) {
  return errors::FailedPrecondition("Attempting to use uninitialized value ", VariableName(node, i));
}

RefLocks::RefLocks(OpKernelContext* ctx, std::initializer_list<int> refs) {
  for (int i : refs) mus_.push_back(ctx->input_ref_mutex(i));
  std::sort(mus_.begin(), mus_.end());
  mus_.erase(std::unique(mus_.begin(), mus_.end()), mus_.end());
  for (std::mutex* mu : mus_) mu->lock();
}

RefLocks::RefLocks(std::vector<std::mutex*> mus) : mus_(std::move(mus)) {
  std::sort(mus_.begin(), mus_.end());
  mus_.erase(std::unique(mus_.begin(), mus_.end()), mus_.end());
  for (std::mutex* mu : mus_) mu->lock();
}

RefLocks::~RefLocks() {
  for (auto it = mus_.rbegin(); it != mus_.rend(); ++it) (*it)->unlock();
}

Status CheckApplyInputs(OpKernelContext* ctx, std::initializer_list<int> refs,
                        std::initializer_list<int> same, std::initializer_list<int> scalars) {
  const Node& node = ctx->node();
  auto arg = [&](int i) { return node.def().inputs[static_cast<size_t>(i)].name; };
  for (int i : refs) {
    if (!ctx->mutable_input(i)->IsInitialized()) return UninitializedError(node, i);
  }
  const TensorShape& var_shape = ctx->mutable_input(0)->shape();
  for (int i : refs) {
    const TensorShape& s = ctx->mutable_input(i)->shape();
    if (s != var_shape) {
      return errors::InvalidArgument(arg(i), " ", VariableName(node, i), " has shape ", s.ToString(),
                                     " but variable ", VariableName(node, 0), " has shape ",
                                     var_shape.ToString());
    }
  }
  for (int i : same) {
    const TensorShape& s = ctx->input(i).shape();
    if (s != var_shape) {
      return errors::InvalidArgument("var and ", arg(i), " do not have the same shape: variable ",
                                     VariableName(node, 0), " has shape ", var_shape.ToString(), ", ", arg(i),
                                     " (", ctx->input_name(i), ") has shape ", s.ToString());
    }
  }
  for (int i : scalars) {
    if (ctx->input(i).rank() != 0) {
      return errors::InvalidArgument(arg(i), " is not a scalar: ", ctx->input(i).shape().ToString(), " (",
                                     ctx->input_name(i), ")");
    }
  }
  return Status::OK();
}

Status CheckAssignShape(OpKernelContext* ctx, const Tensor& value) {
  const Node& node = ctx->node();
  const Tensor* var = ctx->mutable_input(0);
  // Before the first assignment the declared shape is what must match.
  const bool fits = var->IsInitialized() ? var->shape() == value.shape()
                                         : node.input(0).shape().IsCompatibleWith(value.shape());
  if (fits) return Status::OK();
  return errors::InvalidArgument(
      "Assign requires shapes of both tensors to match: variable ", VariableName(node, 0), " has shape ",
      var->IsInitialized() ? var->shape().ToString() : node.input(0).shape().ToString(),
      " but the value has shape ", value.shape().ToString());
}

Status CheckAssignUpdate(OpKernelContext* ctx, const Tensor& value) {
  const Node& node = ctx->node();
  const Tensor* var = ctx->mutable_input(0);
  if (!var->IsInitialized()) return UninitializedError(node, 0);
  if (var->shape() != value.shape()) {
    return errors::InvalidArgument(node.op(), ": variable ", VariableName(node, 0), " has shape ",
                                   var->shape().ToString(), " but the value has shape ",
                                   value.shape().ToString());
  }
  return Status::OK();
}

}  // namespace tw
