#include "towerflow/kernels/pair_twin.h"

#include <vector>

#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

// The fused context's input k as a TensorValue (with its ref, if any).
TensorValue InputValue(OpKernelContext* ctx, int k) {
  TensorValue v;
  v.value = ctx->input(k);
  if (ctx->input_is_ref(k)) {
    v.ref = ctx->mutable_input(k);
    v.ref_mu = ctx->input_ref_mutex(k);
  }
  return v;
}

}  // namespace

FusedKernelFactory SequentialPairKernel::Factory(int consumer_input) {
  return [consumer_input](OpKernelConstruction* c, const Node& consumer) -> std::unique_ptr<OpKernel> {
    const KernelRegistry& registry = KernelRegistry::Global();
    auto producer = registry.CreateKernel(c->node(), c->device());
    if (!producer.ok()) {
      c->SetStatus(producer.status());
      return nullptr;
    }
    auto second = registry.CreateKernel(consumer, c->device());
    if (!second.ok()) {
      c->SetStatus(second.status());
      return nullptr;
    }
    return std::unique_ptr<OpKernel>(
        new SequentialPairKernel(c, consumer, consumer_input, std::move(*producer), std::move(*second)));
  };
}

void SequentialPairKernel::Compute(OpKernelContext* ctx) {
  // The producer over the fused item's first inputs.
  const Node& producer = node();
  std::vector<TensorValue> producer_inputs;
  int next = 0;
  for (int i = 0; i < producer.num_inputs(); ++i) producer_inputs.push_back(InputValue(ctx, next++));
  OpKernelContext::Params params = ctx->params();
  params.node = &producer;
  params.inputs = &producer_inputs;
  params.host_memory_outputs = nullptr;
  params.num_outputs = -1;
  params.output_allocators = nullptr;  // the item's outputs are the consumer's
  OpKernelContext first(params);
  producer_->Compute(&first);
  TW_OP_REQUIRES_OK(ctx, first.status());
  // The consumer over the producer's output and the rest.
  std::vector<TensorValue> consumer_inputs;
  for (int i = 0; i < consumer_.num_inputs(); ++i) {
    consumer_inputs.push_back(i == consumer_input_ ? std::move(first.outputs()[0]) : InputValue(ctx, next++));
  }
  params = ctx->params();
  params.node = &consumer_;
  params.inputs = &consumer_inputs;
  OpKernelContext second(params);
  consumer_kernel_->Compute(&second);
  TW_OP_REQUIRES_OK(ctx, second.status());
  for (int o = 0; o < static_cast<int>(second.outputs().size()); ++o) ctx->output(o) = std::move(second.outputs()[o]);
}

void RegisterPairTwins(KernelRegistry& r) {
  for (const char* consumer : {"BiasAdd", "BiasAddRelu"}) {
    r.RegisterFusion(FusionDef{.producer_op = "MatMul",
                               .consumer_op = consumer,
                               .consumer_input = 0,
                               .device_type = kDeviceCpu,
                               .types = {kFloat32},
                               .factory = SequentialPairKernel::Factory(0),
                               .gpu_twin = true,
                               .twin_only = true});
  }
}

}  // namespace tw
