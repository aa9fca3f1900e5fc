// Schemas and builders of Iterator, MakeIterator and IteratorGetNext
// (data/iterator_ops.h), and the session-side Save/Restore of an iterator.
//
// Encoding (as the queue ops, queue_internal.h): IteratorGetNext's
// components travel as one list output per dtype ("components_float", counts
// in "N_float"); attr "output_types" keeps the tuple order. Static shapes:
// "output_dims" (every dimension, -1 unknown, flattened) and "output_ranks"
// (one per component, -1 for an unknown rank).
#include "towerflow/data/iterator_ops.h"

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/iterator_resource.h"
#include "towerflow/data/queue_internal.h"
#include "towerflow/data/register.h"
#include "towerflow/graph/shape_inference.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {

namespace {

Status GetNextShape(InferenceContext* c) {
  TW_ASSIGN_OR_RETURN(auto types, c->GetAttr<std::vector<DataType>>("output_types"));
  TW_ASSIGN_OR_RETURN(auto dims, c->GetAttr<std::vector<int64_t>>("output_dims"));
  TW_ASSIGN_OR_RETURN(auto ranks, c->GetAttr<std::vector<int64_t>>("output_ranks"));
  if (ranks.size() != types.size()) {
    return errors::InvalidArgument(types.size(), " output types but ", ranks.size(), " ranks");
  }
  const std::vector<int> pos = queue_internal::GroupedPositions(types);
  size_t at = 0;
  for (size_t i = 0; i < types.size(); ++i) {
    if (ranks[i] < 0) {
      c->set_output(pos[i], PartialShape::Unknown());
      continue;
    }
    if (at + static_cast<size_t>(ranks[i]) > dims.size()) return errors::InvalidArgument("output_dims too short");
    std::vector<int64_t> d(dims.begin() + static_cast<std::ptrdiff_t>(at),
                           dims.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(ranks[i])));
    at += static_cast<size_t>(ranks[i]);
    TW_ASSIGN_OR_RETURN(PartialShape s, PartialShape::FromDims(d));
    c->set_output(pos[i], s);
  }
  return Status::OK();
}

}  // namespace

void RegisterDatasetOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(OpDefBuilder("Iterator")
                   .RefOutput("handle", "string")
                   .RequiredAttr("dataset_id", AttrType::kString)
                   .Attr("shared_name", std::string())
                   .Attr("initializable", false)
                   .Stateful()
                   .Shape([](InferenceContext* c) {
                     c->set_output(0, PartialShape(TensorShape{}));
                     return Status::OK();
                   })
                   .Doc("A pass over a dataset, kept in the session's resources.")
                   .Build())
      .Check();
  ops.Register(OpDefBuilder("MakeIterator")
                   .RefInput("iterator", "string")
                   .Stateful()
                   .Doc("Restarts an iterator at the beginning of its dataset.")
                   .Build())
      .Check();
  OpDefBuilder b("IteratorGetNext");
  // A value, not a ref: a ref edge would tie the op to the Iterator's device,
  // and PrefetchToDevice places it on a GPU (its kernel keeps the handle in
  // host memory).
  b.Input("iterator", "string");
  for (DataType t : AllDataTypes()) b.Attr(queue_internal::CountAttrName(t), int64_t{0});
  for (DataType t : AllDataTypes()) b.Output(queue_internal::GroupArgName(t), std::string(DataTypeName(t)));
  b.RequiredAttr("output_types", AttrType::kTypeList)
      .Attr("output_dims", std::vector<int64_t>{})
      .Attr("output_ranks", std::vector<int64_t>{})
      .Stateful()
      .Shape(GetNextShape)
      .Doc("The next element of an iterator; OutOfRange at the end of its dataset.");
  OpDef def = b.Build();
  // OpDefBuilder has no list outputs; the per-dtype counts make these lists.
  for (ArgDef& out : def.outputs) out.number_attr = "N_" + out.name.substr(std::string("components_").size());
  ops.Register(std::move(def)).Check();
  for (const char* op : {"Iterator", "MakeIterator", "IteratorGetNext"}) grads.RegisterNoGradient(op);
  data::RegisterIteratorKernels(kernels);
}

namespace data {

GraphIterator MakeIterator(const Scope& scope, const Dataset& dataset, const IteratorOptions& options) {
  EnsureDataRegistered();
  GraphIterator it;
  if (!scope.ok()) return it;
  if (!dataset.ok()) {
    scope.UpdateStatus(dataset.status().WithContext("MakeIterator"));
    return it;
  }
  const std::string id = RegisterDataset(scope.graph(), dataset);
  NodeBuilder b(scope, "Iterator", "Iterator");
  b.Attr("dataset_id", id).Attr("shared_name", options.shared_name);
  if (options.initializable) b.Attr("initializable", true);
  Node* node = b.Finalize();
  if (node == nullptr) return it;
  const Scope init_scope = scope.NewSubScope(node->name());  // NodeBuilder keeps a reference
  NodeBuilder init(init_scope, "MakeIterator", "MakeIterator");
  init.Input(Output(node, 0));
  Node* initializer = init.Finalize();
  if (initializer == nullptr) return it;
  it.handle_ = Output(node, 0);
  it.initializer_ = initializer;
  it.spec_ = dataset.element_spec();
  it.device_ = PrefetchDevice(*dataset.impl());
  return it;
}

std::vector<Output> GraphIterator::GetNext(const Scope& scope) const {
  std::vector<Output> out(spec_.size());
  if (!valid()) {
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument("GetNext on a null iterator (did MakeIterator fail?)"));
    return out;
  }
  // PrefetchToDevice: the op runs on the device, whose kernel copies the
  // elements there ahead of the consumer (iterator_resource.cc).
  const Scope placed = device_.empty() ? scope : scope.WithDevice(device_);
  NodeBuilder b(placed, "IteratorGetNext", "IteratorGetNext");
  b.Input(handle_);
  for (DataType g : AllDataTypes()) {
    int64_t count = 0;
    for (DataType t : spec_.dtypes) count += t == g;
    b.Attr(queue_internal::CountAttrName(g), count);
  }
  std::vector<int64_t> dims, ranks;
  for (const PartialShape& s : spec_.shapes) {
    ranks.push_back(s.known_rank() ? s.rank() : -1);
    if (s.known_rank()) dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  }
  b.Attr("output_types", spec_.dtypes).Attr("output_dims", dims).Attr("output_ranks", ranks);
  Node* node = b.Finalize();
  if (node == nullptr) return out;
  const std::vector<int> pos = queue_internal::GroupedPositions(spec_.dtypes);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Output(node, pos[i]);
  return out;
}

namespace {
StatusOr<std::shared_ptr<IteratorResource>> SessionIterator(Session& session, const GraphIterator& iterator) {
  if (!iterator.valid()) return errors::InvalidArgument("a null iterator");
  return IteratorResourceOf(session.impl().resource_mgr(), *iterator.handle().node);
}
}  // namespace

Status SaveIterator(Session& session, const GraphIterator& iterator, IteratorState* state) {
  TW_ASSIGN_OR_RETURN(auto r, SessionIterator(session, iterator));
  return r->Save(state);
}

Status RestoreIterator(Session& session, const GraphIterator& iterator, const IteratorState& state) {
  TW_ASSIGN_OR_RETURN(auto r, SessionIterator(session, iterator));
  return r->Restore(state);
}

std::string IteratorAutotuneSummary(Session& session, const GraphIterator& iterator) {
  auto r = SessionIterator(session, iterator);
  return r.ok() ? (*r)->AutotuneSummary() : "";
}

std::map<std::string, double> IteratorGauges(Session& session, const GraphIterator& iterator) {
  auto r = SessionIterator(session, iterator);
  return r.ok() ? (*r)->Gauges() : std::map<std::string, double>{};
}

}  // namespace data
}  // namespace tw
