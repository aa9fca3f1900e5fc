// Schema and builder of CollectiveAllReduce (collective_ops.h).
#include "towerflow/graph/ops/collective_ops.h"

#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

// Output i has the shape of input i.
Status ListUnchanged(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
  return Status::OK();
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& r) {
  OpDef def = OpDefBuilder("CollectiveAllReduce")
                 .ListInput("input", "T", "N")
                 .Output("data", "T")
                 .TypeAttr("T", {kFloat32, kFloat64, kInt32, kInt64})
                 .Attr("reduction", std::string("sum"))
                 .RequiredAttr("num_devices", AttrType::kInt)
                 .RequiredAttr("shared_name", AttrType::kString)
                 .Stateful()
                 .Shape(ListUnchanged)
                 .Doc("Every participant of shared_name outputs the sums (or means) of all their input lists.")
                 .Build();
  // OpDefBuilder has no list outputs: one output per input.
  def.outputs[0].number_attr = "N";
  r.Register(std::move(def)).Check();
}

std::vector<Output> CollectiveAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                        const CollectiveAllReduceAttrs& attrs) {
  std::vector<Output> out(inputs.size());
  if (!scope.ok()) return out;
  if (inputs.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("CollectiveAllReduce '", attrs.shared_name, "': no inputs"));
    return out;
  }
  if (attrs.shared_name.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("CollectiveAllReduce: shared_name is empty; "
                                               "the participants of one reduction need a common name"));
    return out;
  }
  if (attrs.num_devices < 1) {
    scope.UpdateStatus(errors::InvalidArgument("CollectiveAllReduce '", attrs.shared_name,
                                               "': num_devices must be at least 1, got ", attrs.num_devices));
    return out;
  }
  if (attrs.reduction != "sum" && attrs.reduction != "mean") {
    scope.UpdateStatus(errors::InvalidArgument("CollectiveAllReduce '", attrs.shared_name, "': reduction '",
                                               attrs.reduction, "' is not one of sum, mean"));
    return out;
  }
  Node* node = NodeBuilder(scope, "CollectiveAllReduce")
                   .Inputs(inputs)
                   .Attr("reduction", attrs.reduction)
                   .Attr("num_devices", attrs.num_devices)
                   .Attr("shared_name", attrs.shared_name)
                   .Finalize();
  if (node == nullptr) return out;
  for (size_t i = 0; i < inputs.size(); ++i) out[i] = Output(node, static_cast<int>(i));
  return out;
}

}  // namespace tw
