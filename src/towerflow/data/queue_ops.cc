// Schemas and builders of the queue ops, the attr encoding they share with the
// kernels (queue_internal.h), and RegisterQueueOps, the data module's hook for
// the whole queue family (queues, CountUpTo, RandomShuffle).
#include "towerflow/data/queue_ops.h"

#include "towerflow/data/queue_internal.h"
#include "towerflow/data/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {
namespace queue_internal {

std::string GroupArgName(DataType t) { return "components_" + std::string(DataTypeName(t)); }
std::string CountAttrName(DataType t) { return "N_" + std::string(DataTypeName(t)); }

std::vector<int> GroupedPositions(const std::vector<DataType>& types) {
  std::vector<int> pos(types.size(), -1);
  int next = 0;
  for (DataType g : AllDataTypes()) {
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] == g) pos[i] = next++;
    }
  }
  return pos;
}

std::vector<int64_t> FlattenDims(const std::vector<TensorShape>& shapes) {
  std::vector<int64_t> dims;
  for (const TensorShape& s : shapes) dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  return dims;
}

std::vector<int64_t> Ranks(const std::vector<TensorShape>& shapes) {
  std::vector<int64_t> ranks;
  for (const TensorShape& s : shapes) ranks.push_back(s.rank());
  return ranks;
}

StatusOr<std::vector<TensorShape>> UnflattenShapes(const std::vector<int64_t>& dims,
                                                   const std::vector<int64_t>& ranks) {
  std::vector<TensorShape> shapes;
  size_t at = 0;
  for (int64_t r : ranks) {
    if (r < 0 || at + static_cast<size_t>(r) > dims.size()) {
      return errors::InvalidArgument("attrs 'shapes' and 'shape_ranks' do not agree: ", dims.size(),
                                     " dimensions for ranks summing past them");
    }
    std::vector<int64_t> d(dims.begin() + static_cast<std::ptrdiff_t>(at),
                           dims.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(r)));
    TW_ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(d));
    shapes.push_back(std::move(s));
    at += static_cast<size_t>(r);
  }
  if (at != dims.size()) {
    return errors::InvalidArgument("attrs 'shapes' and 'shape_ranks' do not agree: ", dims.size(),
                                   " dimensions, ranks sum to ", at);
  }
  return shapes;
}

namespace {

StatusOr<QueueResource::Spec> SpecFromAttrs(const std::string& op, const AttrMap& attrs) {
  QueueResource::Spec spec;
  spec.kind = op == "RandomShuffleQueue" ? QueueResource::Kind::kRandomShuffle : QueueResource::Kind::kFIFO;
  TW_ASSIGN_OR_RETURN(spec.dtypes, attrs.Get<std::vector<DataType>>("component_types"));
  TW_ASSIGN_OR_RETURN(auto dims, attrs.Get<std::vector<int64_t>>("shapes"));
  TW_ASSIGN_OR_RETURN(auto ranks, attrs.Get<std::vector<int64_t>>("shape_ranks"));
  TW_ASSIGN_OR_RETURN(spec.shapes, UnflattenShapes(dims, ranks));
  TW_ASSIGN_OR_RETURN(spec.capacity, attrs.Get<int64_t>("capacity"));
  if (spec.kind == QueueResource::Kind::kRandomShuffle) {
    TW_ASSIGN_OR_RETURN(spec.min_after_dequeue, attrs.Get<int64_t>("min_after_dequeue"));
    TW_ASSIGN_OR_RETURN(spec.seed, attrs.Get<int64_t>("seed"));
    TW_ASSIGN_OR_RETURN(spec.seed2, attrs.Get<int64_t>("seed2"));
    TW_ASSIGN_OR_RETURN(spec.deterministic, attrs.Get<bool>("deterministic"));
  }
  return spec;
}

}  // namespace

StatusOr<QueueResource::Spec> SpecFromNode(const Node& node) {
  TW_ASSIGN_OR_RETURN(QueueResource::Spec spec, SpecFromAttrs(node.op(), node.attrs()));
  TW_ASSIGN_OR_RETURN(std::string container, node.attrs().Get<std::string>("container"));
  TW_ASSIGN_OR_RETURN(std::string shared_name, node.attrs().Get<std::string>("shared_name"));
  spec.name = shared_name.empty() ? node.name() : shared_name;
  if (!container.empty()) spec.name = container + "/" + spec.name;
  return spec;
}

std::string FillSummaryName(const Node& node, const QueueResource::Spec& spec) {
  if (auto tag = node.attrs().Get<std::string>("_fill_summary"); tag.ok()) return *tag;
  if (spec.kind == QueueResource::Kind::kRandomShuffle) {
    return StrCat(node.name(), "/fraction_over_", spec.min_after_dequeue, "_of_",
                  spec.capacity - spec.min_after_dequeue, "_full");
  }
  return StrCat(node.name(), "/fraction_of_", spec.capacity, "_full");
}

}  // namespace queue_internal

namespace {

using queue_internal::CountAttrName;
using queue_internal::GroupArgName;
using queue_internal::GroupedPositions;

Status QueueShape(InferenceContext* c, const std::string& op) {
  // Defaults are filled in before shape functions run, so every attr is present.
  AttrMap attrs;
  TW_ASSIGN_OR_RETURN(auto types, c->GetAttr<std::vector<DataType>>("component_types"));
  attrs.Set("component_types", types);
  for (const char* name : {"shapes", "shape_ranks"}) {
    TW_ASSIGN_OR_RETURN(auto v, c->GetAttr<std::vector<int64_t>>(name));
    attrs.Set(name, v);
  }
  std::vector<const char*> ints = {"capacity"};
  if (op == "RandomShuffleQueue") ints.insert(ints.end(), {"min_after_dequeue", "seed", "seed2"});
  for (const char* name : ints) {
    TW_ASSIGN_OR_RETURN(int64_t v, c->GetAttr<int64_t>(name));
    attrs.Set(name, v);
  }
  if (op == "RandomShuffleQueue") {
    TW_ASSIGN_OR_RETURN(bool deterministic, c->GetAttr<bool>("deterministic"));
    attrs.Set("deterministic", deterministic);
  }
  TW_ASSIGN_OR_RETURN(QueueResource::Spec spec, queue_internal::SpecFromAttrs(op, attrs));
  TW_RETURN_IF_ERROR(QueueResource::Validate(spec));
  c->set_output(0, PartialShape(TensorShape{}));
  return Status::OK();
}

// Output shapes of the dequeue ops, from the element shapes carried as attrs:
// [] + shape (Dequeue), [n] + shape (DequeueMany, n when constant), [?] + shape
// (DequeueUpTo), unknown without shapes.
enum class DequeueKind { kOne, kMany, kUpTo };
Status DequeueShape(InferenceContext* c, DequeueKind kind) {
  TW_ASSIGN_OR_RETURN(auto types, c->GetAttr<std::vector<DataType>>("component_types"));
  TW_ASSIGN_OR_RETURN(auto dims, c->GetAttr<std::vector<int64_t>>("shapes"));
  TW_ASSIGN_OR_RETURN(auto ranks, c->GetAttr<std::vector<int64_t>>("shape_ranks"));
  TW_ASSIGN_OR_RETURN(auto shapes, queue_internal::UnflattenShapes(dims, ranks));
  if (static_cast<int>(types.size()) != c->num_outputs()) {
    return errors::InvalidArgument(types.size(), " component types but ", c->num_outputs(), " outputs");
  }
  if (!shapes.empty() && shapes.size() != types.size()) {
    return errors::InvalidArgument(types.size(), " component types but ", shapes.size(), " shapes");
  }
  int64_t n = -1;
  if (kind == DequeueKind::kMany && c->input_value(1) != nullptr) {
    const Tensor& v = *c->input_value(1);
    if (v.rank() != 0) return errors::InvalidArgument("n must be a scalar, got shape ", v.shape().ToString());
    n = v.scalar<int32_t>();
    if (n < 0) return errors::InvalidArgument("n must be >= 0, got ", n);
  }
  const std::vector<int> pos = GroupedPositions(types);
  for (size_t i = 0; i < types.size(); ++i) {
    if (shapes.empty()) {
      c->set_output(pos[i], PartialShape::Unknown());
      continue;
    }
    PartialShape s(shapes[i]);
    if (kind != DequeueKind::kOne) {
      std::vector<int64_t> d = {n};
      d.insert(d.end(), shapes[i].dims().begin(), shapes[i].dims().end());
      s = PartialShape(d);
    }
    c->set_output(pos[i], s);
  }
  return Status::OK();
}

OpDefBuilder QueueOpBuilder(const std::string& op) {
  OpDefBuilder b(op);
  b.RefOutput("handle", "string")
      .RequiredAttr("component_types", AttrType::kTypeList)
      .Attr("shapes", std::vector<int64_t>{})
      .Attr("shape_ranks", std::vector<int64_t>{})
      .Attr("capacity", int64_t{-1})
      .Attr("container", std::string())
      .Attr("shared_name", std::string())
      .Stateful()
      .Shape([op](InferenceContext* c) { return QueueShape(c, op); });
  return b;
}

void AddCountAttrs(OpDefBuilder& b) {
  for (DataType t : AllDataTypes()) b.Attr(CountAttrName(t), int64_t{0});
}

OpDef EnqueueDef(const std::string& op, const std::string& doc) {
  OpDefBuilder b(op);
  b.RefInput("handle", "string");
  AddCountAttrs(b);
  for (DataType t : AllDataTypes()) b.ListInput(GroupArgName(t), std::string(DataTypeName(t)), CountAttrName(t));
  b.RequiredAttr("Tcomponents", AttrType::kTypeList).Stateful().Doc(doc);
  return b.Build();
}

OpDef DequeueDef(const std::string& op, DequeueKind kind, const std::string& doc) {
  OpDefBuilder b(op);
  b.RefInput("handle", "string");
  if (kind != DequeueKind::kOne) b.Input("n", "int32");
  AddCountAttrs(b);
  for (DataType t : AllDataTypes()) b.Output(GroupArgName(t), std::string(DataTypeName(t)));
  b.RequiredAttr("component_types", AttrType::kTypeList)
      .Attr("shapes", std::vector<int64_t>{})
      .Attr("shape_ranks", std::vector<int64_t>{})
      .Stateful()
      .Shape([kind](InferenceContext* c) { return DequeueShape(c, kind); })
      .Doc(doc);
  OpDef def = b.Build();
  // OpDefBuilder has no list outputs; the per-dtype counts make these lists.
  for (ArgDef& out : def.outputs) out.number_attr = "N_" + out.name.substr(std::string("components_").size());
  return def;
}

}  // namespace

void RegisterQueueOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(QueueOpBuilder("FIFOQueue").Doc("A queue that produces elements in first-in first-out order.").Build())
      .Check();
  ops.Register(QueueOpBuilder("RandomShuffleQueue")
                   .Attr("min_after_dequeue", int64_t{0})
                   .Attr("seed", int64_t{0})
                   .Attr("seed2", int64_t{0})
                   .Attr("deterministic", false)
                   .Doc("A queue that dequeues elements in a random order.")
                   .Build())
      .Check();
  ops.Register(EnqueueDef("QueueEnqueue", "Enqueues a tuple of tensors as one element.")).Check();
  ops.Register(EnqueueDef("QueueEnqueueMany", "Enqueues the slices along dimension 0 as elements.")).Check();
  ops.Register(DequeueDef("QueueDequeue", DequeueKind::kOne, "Dequeues one element.")).Check();
  ops.Register(DequeueDef("QueueDequeueMany", DequeueKind::kMany, "Dequeues n elements, stacked.")).Check();
  ops.Register(DequeueDef("QueueDequeueUpTo", DequeueKind::kUpTo,
                          "Dequeues n elements, or what is left of a closed queue.")).Check();
  ops.Register(OpDefBuilder("QueueClose")
                   .RefInput("handle", "string")
                   .Attr("cancel_pending_enqueues", false)
                   .Stateful()
                   .Doc("Closes a queue for enqueues.")
                   .Build())
      .Check();
  ops.Register(OpDefBuilder("QueueSize")
                   .RefInput("handle", "string")
                   .Output("size", "int32")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Doc("The number of elements in a queue.")
                   .Build())
      .Check();
  for (const char* op : {"FIFOQueue", "RandomShuffleQueue", "QueueEnqueue", "QueueEnqueueMany", "QueueDequeue",
                         "QueueDequeueMany", "QueueDequeueUpTo", "QueueClose", "QueueSize"}) {
    grads.RegisterNoGradient(op);
  }
  queue_internal::RegisterQueueKernels(kernels);
  queue_internal::RegisterInputProducerOps(ops, kernels, grads);
}

namespace io {

struct QueueAccess {
  static Queue Make(Node* node, const internal::QueueArgs& a) {
    Queue q;
    q.handle_ = Output(node, 0);
    q.dtypes_ = a.dtypes;
    q.shapes_ = a.shapes;
    q.capacity_ = a.capacity;
    q.min_after_dequeue_ = a.shuffle ? a.min_after_dequeue : 0;
    return q;
  }
};

namespace internal {

Queue BuildQueue(const Scope& scope, const QueueArgs& a) {
  EnsureDataRegistered();
  const std::string op = a.shuffle ? "RandomShuffleQueue" : "FIFOQueue";
  AttrMap attrs;
  attrs.Set("component_types", a.dtypes);
  attrs.Set("shapes", queue_internal::FlattenDims(a.shapes));
  attrs.Set("shape_ranks", queue_internal::Ranks(a.shapes));
  attrs.Set("capacity", a.capacity);
  attrs.Set("container", a.container);
  attrs.Set("shared_name", a.shared_name);
  if (a.shuffle) {
    const OpSeeds seeds = GetSeeds(scope.graph(), a.seed);
    attrs.Set("min_after_dequeue", a.min_after_dequeue);
    attrs.Set("seed", seeds.seed);
    attrs.Set("seed2", seeds.seed2);
    attrs.Set("deterministic", a.deterministic);
  }
  if (!a.fill_summary.empty()) attrs.Set("_fill_summary", a.fill_summary);
  Node* node = nullptr;
  if (a.exact_name.empty()) {
    NodeBuilder b(scope, op, a.shuffle ? "random_shuffle_queue" : "fifo_queue");
    for (const auto& [name, value] : attrs.values()) b.Attr(name, value);
    node = b.Finalize();
  } else {
    NodeSpec spec;
    spec.name = a.exact_name;
    spec.op = op;
    spec.attrs = attrs;
    spec.device = scope.device();
    spec.control_inputs = scope.control_dependencies();
    spec.colocation = scope.colocation();
    auto added = scope.graph().AddNode(std::move(spec));
    if (added.ok()) {
      node = *added;
    } else {
      scope.UpdateStatus(added.status());
    }
  }
  if (node == nullptr) return Queue();
  return QueueAccess::Make(node, a);
}

}  // namespace internal

Queue FIFOQueue(const Scope& scope, int64_t capacity, const std::vector<DataType>& dtypes,
                const FIFOQueueOptions& options) {
  internal::QueueArgs a;
  a.capacity = capacity;
  a.dtypes = dtypes;
  a.shapes = options.shapes;
  a.shared_name = options.shared_name;
  a.container = options.container;
  return internal::BuildQueue(scope, a);
}

Queue RandomShuffleQueue(const Scope& scope, int64_t capacity, int64_t min_after_dequeue,
                         const std::vector<DataType>& dtypes, const RandomShuffleQueueOptions& options) {
  internal::QueueArgs a;
  a.shuffle = true;
  a.capacity = capacity;
  a.min_after_dequeue = min_after_dequeue;
  a.dtypes = dtypes;
  a.shapes = options.shapes;
  a.seed = options.seed;
  a.deterministic = options.deterministic;
  a.shared_name = options.shared_name;
  a.container = options.container;
  return internal::BuildQueue(scope, a);
}

std::string Queue::name() const { return valid() ? handle_.node->name() : std::string(); }
std::string Queue::op() const { return valid() ? handle_.node->op() : std::string(); }

std::string Queue::BaseName() const {
  const std::string full = name();
  const size_t slash = full.rfind('/');
  return slash == std::string::npos ? full : full.substr(slash + 1);
}

Node* Queue::BuildEnqueue(const Scope& scope, const std::string& op, const std::vector<Output>& components) const {
  EnsureDataRegistered();
  const bool many = op == "QueueEnqueueMany";
  const std::string what = std::string(many ? "EnqueueMany" : "Enqueue") + " to " + this->op() + " '" + name() + "'";
  auto fail = [&](const Status& s) -> Node* {
    scope.UpdateStatus(s);
    return nullptr;
  };
  // A null queue or component: its builder recorded why.
  auto null_input = [&](const std::string& what_is_null) -> Node* {
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument(op, ": ", what_is_null, " is null"));
    return nullptr;
  };
  if (!valid()) return null_input("the queue");
  if (components.size() != dtypes_.size()) {
    return fail(errors::InvalidArgument(what, " expects ", dtypes_.size(), " components, got ", components.size()));
  }
  for (size_t i = 0; i < components.size(); ++i) {
    const Output& c = components[i];
    if (!c.valid()) return null_input("component " + std::to_string(i));
    if (c.dtype() != dtypes_[i]) {
      return fail(errors::InvalidArgument(what, ": component ", i, " has dtype ", DataTypeName(c.dtype()),
                                          ", the queue expects ", DataTypeName(dtypes_[i])));
    }
    if (shapes_.empty()) continue;
    PartialShape want(shapes_[i]);
    if (many) {
      std::vector<int64_t> d = {-1};
      d.insert(d.end(), shapes_[i].dims().begin(), shapes_[i].dims().end());
      want = PartialShape(d);
    }
    if (!c.shape().IsCompatibleWith(want)) {
      return fail(errors::InvalidArgument(what, ": component ", i, " has shape ", c.shape().ToString(),
                                          ", the queue expects ", want.ToString()));
    }
  }
  NodeBuilder b(scope, op, BaseName() + (many ? "_EnqueueMany" : "_enqueue"));
  b.Input(handle_);
  for (DataType g : AllDataTypes()) {
    int64_t count = 0;
    for (size_t i = 0; i < components.size(); ++i) {
      if (dtypes_[i] == g) {
        b.Input(components[i]);
        ++count;
      }
    }
    b.Attr(CountAttrName(g), count);
  }
  b.Attr("Tcomponents", dtypes_);
  return b.Finalize();
}

std::vector<Output> Queue::BuildDequeue(const Scope& scope, const std::string& op, const Output* n) const {
  EnsureDataRegistered();
  std::vector<Output> out(dtypes_.size());
  if (!valid()) {
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument(op, " on a null queue (did building the queue fail?)"));
    return out;
  }
  const std::string suffix = op == "QueueDequeue" ? "_Dequeue" : op == "QueueDequeueMany" ? "_DequeueMany" : "_DequeueUpTo";
  NodeBuilder b(scope, op, BaseName() + suffix);
  b.Input(handle_);
  if (n != nullptr) {
    if (n->valid() && n->dtype() != kInt32) {
      scope.UpdateStatus(
          errors::InvalidArgument(op, " on '", name(), "': n must be int32, got ", DataTypeName(n->dtype())));
      return out;
    }
    b.Input(*n);
  }
  for (DataType g : AllDataTypes()) {
    int64_t count = 0;
    for (DataType t : dtypes_) count += t == g;
    b.Attr(CountAttrName(g), count);
  }
  b.Attr("component_types", dtypes_);
  b.Attr("shapes", queue_internal::FlattenDims(shapes_));
  b.Attr("shape_ranks", queue_internal::Ranks(shapes_));
  Node* node = b.Finalize();
  if (node == nullptr) return out;
  const std::vector<int> pos = GroupedPositions(dtypes_);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Output(node, pos[i]);
  return out;
}

Node* Queue::Enqueue(const Scope& scope, const std::vector<Output>& components) const {
  return BuildEnqueue(scope, "QueueEnqueue", components);
}
Node* Queue::EnqueueMany(const Scope& scope, const std::vector<Output>& components) const {
  return BuildEnqueue(scope, "QueueEnqueueMany", components);
}
std::vector<Output> Queue::Dequeue(const Scope& scope) const { return BuildDequeue(scope, "QueueDequeue", nullptr); }
std::vector<Output> Queue::DequeueMany(const Scope& scope, const Output& n) const {
  return BuildDequeue(scope, "QueueDequeueMany", &n);
}
std::vector<Output> Queue::DequeueMany(const Scope& scope, int32_t n) const {
  return DequeueMany(scope, Const(scope, n));
}
std::vector<Output> Queue::DequeueUpTo(const Scope& scope, const Output& n) const {
  return BuildDequeue(scope, "QueueDequeueUpTo", &n);
}
std::vector<Output> Queue::DequeueUpTo(const Scope& scope, int32_t n) const {
  return DequeueUpTo(scope, Const(scope, n));
}

Node* Queue::Close(const Scope& scope, bool cancel_pending_enqueues) const {
  EnsureDataRegistered();
  if (!valid()) {
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument("QueueClose on a null queue"));
    return nullptr;
  }
  return NodeBuilder(scope, "QueueClose", BaseName() + "_Close")
      .Input(handle_)
      .Attr("cancel_pending_enqueues", cancel_pending_enqueues)
      .Finalize();
}

Output Queue::Size(const Scope& scope) const {
  EnsureDataRegistered();
  if (!valid()) {
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument("QueueSize on a null queue"));
    return Output();
  }
  return NodeBuilder(scope, "QueueSize", BaseName() + "_Size").Input(handle_).Finalize();
}

}  // namespace io
}  // namespace tw
