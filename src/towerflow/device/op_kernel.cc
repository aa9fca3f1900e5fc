#include "towerflow/device/op_kernel.h"

#include <algorithm>

namespace tw {

OpKernelContext::OpKernelContext(const Params& params)
    : params_(params),
      outputs_(static_cast<size_t>(params.num_outputs >= 0 ? params.num_outputs : params.node->num_outputs())) {}

const Tensor& OpKernelContext::input(int i) const {
  return (*params_.inputs)[static_cast<size_t>(i)].value;
}

std::string OpKernelContext::input_name(int i) const { return node().input(i).name(); }

Allocator* OpKernelContext::LentAllocator(int i) const {
  const std::vector<Allocator*>* lent = params_.output_allocators;
  if (lent == nullptr || i < 0 || static_cast<size_t>(i) >= lent->size()) return nullptr;
  return (*lent)[static_cast<size_t>(i)];
}

Status OpKernelContext::allocate_output(int i, const TensorShape& shape, Tensor** out) {
  Allocator* allocator = this->allocator();
  const std::vector<int>* host = params_.host_memory_outputs;
  if (host != nullptr && std::find(host->begin(), host->end(), i) != host->end()) {
    allocator = CpuAllocator();
  } else if (Allocator* lent = LentAllocator(i); lent != nullptr) {
    allocator = lent;
  }
  auto t = Tensor::Allocate(allocator, node().output_type(i), shape);
  if (!t.ok()) {
    // The executor prefixes the node's name; this says which allocation failed.
    Status s = t.status().WithContext("output " + std::to_string(i) + " on " + device()->name());
    SetStatus(s);
    return s;
  }
  outputs_[static_cast<size_t>(i)].value = std::move(t).value();
  *out = &outputs_[static_cast<size_t>(i)].value;
  return Status::OK();
}

Status OpKernelContext::forward_input_or_allocate_output(std::initializer_list<int> candidates, int i,
                                                         const TensorShape& shape, Tensor** out) {
  const std::vector<int>* host = params_.host_memory_outputs;
  const bool host_output = host != nullptr && std::find(host->begin(), host->end(), i) != host->end();
  Allocator* allocator = host_output ? CpuAllocator() : this->allocator();
  if (!host_output && LentAllocator(i) != nullptr) return allocate_output(i, shape, out);
  for (int c : candidates) {
    TensorValue& in = (*params_.inputs)[static_cast<size_t>(c)];
    const std::shared_ptr<TensorBuffer>& buffer = in.value.buffer();
    if (in.is_ref() || !buffer || buffer.use_count() != 1 || buffer->allocator() != allocator ||
        in.value.dtype() != node().output_type(i) || in.value.NumElements() != shape.num_elements()) {
      continue;
    }
    auto reshaped = in.value.Reshaped(shape);
    if (!reshaped.ok()) continue;
    outputs_[static_cast<size_t>(i)].value = std::move(reshaped).value();
    *out = &outputs_[static_cast<size_t>(i)].value;
    return Status::OK();
  }
  return allocate_output(i, shape, out);
}

Status OpKernelContext::allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out) {
  auto t = Tensor::Allocate(allocator(), dtype, shape);
  if (!t.ok()) return t.status().WithContext("a temporary on " + device()->name());
  *out = std::move(t).value();
  return Status::OK();
}

void OpKernelContext::set_output(int i, Tensor t) { outputs_[static_cast<size_t>(i)].value = std::move(t); }

void OpKernelContext::set_output_ref(int i, std::mutex* mu, Tensor* ref) {
  auto& o = outputs_[static_cast<size_t>(i)];
  o.ref = ref;
  o.ref_mu = mu;
}

void OpKernelContext::forward_ref_input_to_ref_output(int in, int out) {
  const auto& i = (*params_.inputs)[static_cast<size_t>(in)];
  set_output_ref(out, i.ref_mu, i.ref);
}

}  // namespace tw
