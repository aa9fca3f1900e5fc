// Schemas and builders of ProcessAllReduce and ProcessBroadcast, and the
// gradient bucketing (collective_ops.h).
#include "towerflow/dist/collective_ops.h"

#include <map>

#include "towerflow/core/device_spec.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/register.h"
#include "towerflow/dist/register.h"

namespace tw::dist {
namespace {

Status ListUnchanged(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
  return Status::OK();
}

OpDef ListOp(const std::string& name, const std::string& doc, bool reduction) {
  OpDefBuilder b(name);
  b.ListInput("input", "T", "N").Output("data", "T").TypeAttr("T", {kFloat32, kFloat64, kInt32, kInt64});
  if (reduction) {
    b.Attr("reduction", std::string("mean"));
  } else {
    b.Attr("root", int64_t{0});
  }
  OpDef def = b.Attr("bucket", int64_t{0}).Attr("num_buckets", int64_t{1}).Stateful().Shape(ListUnchanged).Doc(doc).Build();
  def.outputs[0].number_attr = "N";  // one output per input
  return def;
}

// Common checks; false (with the error in the scope) when the node must not be built.
bool CheckList(const Scope& scope, const char* op, const std::vector<Output>& inputs, int bucket, int num_buckets) {
  if (!scope.ok()) return false;
  if (inputs.empty()) {
    scope.UpdateStatus(errors::InvalidArgument(op, ": no inputs"));
    return false;
  }
  for (const Output& in : inputs) {
    if (!in.valid()) {
      scope.UpdateStatus(errors::InvalidArgument(op, ": a null input"));
      return false;
    }
    if (in.dtype() != inputs[0].dtype()) {
      scope.UpdateStatus(errors::InvalidArgument(op, ": inputs of one dtype, got ", DataTypeName(inputs[0].dtype()),
                                                 " ('", inputs[0].name(), "') and ", DataTypeName(in.dtype()), " ('",
                                                 in.name(), "')"));
      return false;
    }
  }
  if (num_buckets < 1 || bucket < 0 || bucket >= num_buckets) {
    scope.UpdateStatus(errors::InvalidArgument(op, ": bucket ", bucket, " of ", num_buckets));
    return false;
  }
  return true;
}

std::vector<Output> Outputs(Node* node, size_t n) {
  std::vector<Output> out(n);
  if (node == nullptr) return out;
  for (size_t i = 0; i < n; ++i) out[i] = Output(node, static_cast<int>(i));
  return out;
}

// The node of `op` over `inputs`, with its own attr and the bucket's.
template <typename A>
std::vector<Output> BuildList(const Scope& scope, const char* op, const std::vector<Output>& inputs,
                              const char* attr, const A& value, int bucket, int num_buckets) {
  Node* node = NodeBuilder(scope, op)
                   .Inputs(inputs)
                   .Attr(attr, value)
                   .Attr("bucket", int64_t{bucket})
                   .Attr("num_buckets", int64_t{num_buckets})
                   .Finalize();
  return Outputs(node, inputs.size());
}

int64_t Bytes(const Output& t) {
  const PartialShape& shape = t.shape();
  if (!shape.IsFullyDefined()) return 0;
  return shape.ToTensorShape().num_elements() * static_cast<int64_t>(DataTypeSize(t.dtype()));
}

}  // namespace

void RegisterProcessCollectiveOps(OpRegistry& ops, GradientRegistry& grads) {
  ops.Register(ListOp("ProcessAllReduce",
                      "The sums (or means) over every process of the job of its input list, as one fused buffer.",
                      /*reduction=*/true))
      .Check();
  ops.Register(ListOp("ProcessBroadcast", "Rank `root`'s values of its input list, on every process.",
                      /*reduction=*/false))
      .Check();
  grads.RegisterNoGradient("ProcessAllReduce");
  grads.RegisterNoGradient("ProcessBroadcast");
  ops.Register(OpDefBuilder("ProcessSize")
                   .Output("size", "T")
                   .TypeAttr("T", {kFloat32, kFloat64, kInt32, kInt64})
                   .Stateful()
                   .Shape([](InferenceContext* c) {
                     c->set_output(0, PartialShape(std::vector<int64_t>{}));
                     return Status::OK();
                   })
                   .Doc("The number of processes of the job (1 without a world), as a scalar of T.")
                   .Build())
      .Check();
  grads.RegisterNoGradient("ProcessSize");
}

Output ProcessSize(const Scope& scope, DataType dtype) {
  EnsureDistRegistered();
  if (!scope.ok()) return Output();
  if (dtype != kFloat32 && dtype != kFloat64 && dtype != kInt32 && dtype != kInt64) {
    scope.UpdateStatus(errors::InvalidArgument("ProcessSize: no ", DataTypeName(dtype),
                                               " (float, double, int32, int64)"));
    return Output();
  }
  Node* node = NodeBuilder(scope, "ProcessSize").Attr("T", dtype).Finalize();
  return node != nullptr ? Output(node, 0) : Output();
}

std::vector<Output> ProcessAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                     const ProcessAllReduceAttrs& attrs) {
  EnsureDistRegistered();
  if (!CheckList(scope, "ProcessAllReduce", inputs, attrs.bucket, attrs.num_buckets)) return Outputs(nullptr, inputs.size());
  if (attrs.reduction != "sum" && attrs.reduction != "mean") {
    scope.UpdateStatus(
        errors::InvalidArgument("ProcessAllReduce: reduction '", attrs.reduction, "' is not one of sum, mean"));
    return Outputs(nullptr, inputs.size());
  }
  return BuildList(scope, "ProcessAllReduce", inputs, "reduction", attrs.reduction, attrs.bucket, attrs.num_buckets);
}

std::vector<Output> ProcessBroadcast(const Scope& scope, const std::vector<Output>& inputs,
                                     const ProcessBroadcastAttrs& attrs) {
  EnsureDistRegistered();
  if (!CheckList(scope, "ProcessBroadcast", inputs, attrs.bucket, attrs.num_buckets)) return Outputs(nullptr, inputs.size());
  if (attrs.root < 0) {
    scope.UpdateStatus(errors::InvalidArgument("ProcessBroadcast: root ", attrs.root, " is negative"));
    return Outputs(nullptr, inputs.size());
  }
  return BuildList(scope, "ProcessBroadcast", inputs, "root", int64_t{attrs.root}, attrs.bucket, attrs.num_buckets);
}

std::vector<Output> CrossProcessMean(const Scope& scope, const std::vector<Output>& gradients,
                                     const GradientBucketOptions& options) {
  std::vector<Output> out(gradients.size());
  if (!scope.ok()) return out;
  // Buckets in the order they close; each holds indices into `gradients`.
  struct Bucket {
    DataType dtype;
    std::vector<size_t> members;
    int64_t bytes = 0;
  };
  std::vector<Bucket> buckets;
  std::map<DataType, size_t> open;  // the filling bucket of each dtype
  for (size_t k = gradients.size(); k-- > 0;) {
    const Output& g = gradients[k];
    if (!g.valid()) continue;
    const DataType dtype = g.dtype();
    auto it = open.find(dtype);
    if (it == open.end()) {
      it = open.emplace(dtype, buckets.size()).first;
      buckets.push_back({dtype, {}, 0});
    }
    Bucket& b = buckets[it->second];
    b.members.push_back(k);
    b.bytes += Bytes(g);
    const int64_t cap = it->second == 0 ? options.first_bucket_bytes : options.bucket_bytes;
    if (b.bytes >= cap) open.erase(it);
  }
  Scope s = scope.NewSubScope("cross_process").WithDevice(options.device);
  // On a CPU, for a consumer that divides as it reads: the sum, then a Div
  // per gradient.
  auto spec = DeviceSpec::Parse(options.device);
  const bool on_cpu =
      options.divide_in_consumer && spec.ok() && spec->has_type() && spec->type() == kDeviceCpu;
  const int num = static_cast<int>(buckets.size());
  for (int i = 0; i < num; ++i) {
    const Bucket& b = buckets[static_cast<size_t>(i)];
    std::vector<Output> inputs;
    for (size_t k : b.members) inputs.push_back(gradients[k]);
    const std::string name = "bucket_" + std::to_string(i);
    std::vector<Output> reduced = ProcessAllReduce(s.WithOpName(name), inputs,
                                                   {.reduction = on_cpu ? "sum" : "mean", .bucket = i, .num_buckets = num});
    Output ranks = on_cpu ? ProcessSize(s.WithOpName(name + "/ranks"), b.dtype) : Output();
    for (size_t j = 0; j < b.members.size(); ++j) {
      out[b.members[j]] = on_cpu ? Div(s.WithOpName(name + "/mean_" + std::to_string(j)), reduced[j], ranks) : reduced[j];
    }
  }
  return out;
}

Node* BroadcastVariables(const Scope& scope, const std::vector<Variable>& variables, int root) {
  if (!scope.ok()) return nullptr;
  std::map<DataType, std::vector<const Variable*>> by_dtype;
  for (const Variable& v : variables) {
    if (v.valid()) by_dtype[v.value.dtype()].push_back(&v);
  }
  Scope s = scope.NewSubScope("broadcast_variables");
  std::vector<Output> assigns;
  const int num = static_cast<int>(by_dtype.size());
  int bucket = 0;
  for (const auto& [dtype, vars] : by_dtype) {
    std::vector<Output> values;
    for (const Variable* v : vars) values.push_back(v->value);
    std::vector<Output> got = ProcessBroadcast(s.WithDevice("/device:CPU:0").WithOpName("bucket_" + std::to_string(bucket)),
                                               values, {.root = root, .bucket = bucket, .num_buckets = num});
    ++bucket;
    for (size_t i = 0; i < vars.size() && s.ok(); ++i) {
      assigns.push_back(Assign(s.WithDevice(vars[i]->ref.node->requested_device()), *vars[i], got[i]));
    }
  }
  if (!s.ok()) return nullptr;
  return Group(scope.WithOpName("broadcast_variables"), assigns);
}

}  // namespace tw::dist
