#include "towerflow/graph/graph.h"

#include "towerflow/graph/partial_value.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {

DataType Output::dtype() const { return node->output_type(index); }
const PartialShape& Output::shape() const { return node->output_shape(index); }
std::string Output::name() const { return node->name() + ":" + std::to_string(index); }
bool Output::operator<(const Output& o) const {
  if (node != o.node) return node->id() < o.node->id();
  return index < o.index;
}

std::string Node::DebugName() const { return "'" + name_ + "' (" + op() + ")"; }

namespace {

// Resolves an argument's dtype from the node's attrs.
StatusOr<DataType> ArgType(const ArgDef& arg, const AttrMap& attrs) {
  if (arg.fixed_type != DataType::kInvalid) return arg.fixed_type;
  return attrs.Get<DataType>(arg.type_attr);
}

StatusOr<int> ArgCount(const ArgDef& arg, const AttrMap& attrs) {
  if (arg.number_attr.empty()) return 1;
  TW_ASSIGN_OR_RETURN(int n, attrs.Get<int>(arg.number_attr));
  if (n < 0) return errors::InvalidArgument("attr '", arg.number_attr, "' must be >= 0, got ", n);
  return n;
}

// Fills type and count attrs that the inputs determine ("T" from the first input
// of that type, "N" from the list length), then checks every input's dtype.
Status BindInputs(const OpDef& def, NodeSpec& spec) {
  // List counts first: the number of inputs left after the fixed ones.
  int fixed = 0;
  const ArgDef* list_arg = nullptr;
  for (const auto& arg : def.inputs) {
    if (arg.number_attr.empty()) {
      ++fixed;
    } else {
      list_arg = &arg;
    }
  }
  const int given = static_cast<int>(spec.inputs.size());
  if (list_arg != nullptr) {
    if (given < fixed) {
      return errors::InvalidArgument("expects at least ", fixed, " inputs, got ", given);
    }
    if (!spec.attrs.Has(list_arg->number_attr)) {
      spec.attrs.Set(list_arg->number_attr, static_cast<int64_t>(given - fixed));
    }
  }
  size_t pos = 0;
  for (const auto& arg : def.inputs) {
    TW_ASSIGN_OR_RETURN(int count, ArgCount(arg, spec.attrs));
    for (int k = 0; k < count; ++k, ++pos) {
      if (pos >= spec.inputs.size()) {
        return errors::InvalidArgument("expects ", def.inputs.size(), " inputs (missing '",
                                       arg.name, "'), got ", spec.inputs.size());
      }
      const Output& in = spec.inputs[pos];
      if (!in.valid()) return errors::InvalidArgument("input '", arg.name, "' is null");
      if (arg.is_ref && !in.node->output_is_ref(in.index)) {
        return errors::InvalidArgument("input '", arg.name, "' must be a variable (ref), but ",
                                       in.name(), " from ", in.node->DebugName(), " is a value");
      }
      const DataType got = in.dtype();
      if (arg.fixed_type != DataType::kInvalid) {
        if (got != arg.fixed_type) {
          return errors::InvalidArgument("input '", arg.name, "' must be ",
                                         DataTypeName(arg.fixed_type), ", got ",
                                         DataTypeName(got), " from ", in.name());
        }
      } else if (const AttrValue* bound = spec.attrs.Find(arg.type_attr)) {
        const DataType* want = std::get_if<DataType>(bound);
        if (want == nullptr || *want != got) {
          return errors::InvalidArgument(
              "input '", arg.name, "' has dtype ", DataTypeName(got), " from ", in.name(),
              " but ", arg.type_attr, " = ",
              want ? std::string(DataTypeName(*want)) : std::string("?"),
              " (all inputs of type ", arg.type_attr, " must have one dtype)");
        }
      } else {
        spec.attrs.Set(arg.type_attr, got);
      }
    }
  }
  if (pos != spec.inputs.size()) {
    return errors::InvalidArgument("expects ", pos, " inputs, got ", spec.inputs.size());
  }
  return Status::OK();
}

Status CheckAttrs(const OpDef& def, AttrMap& attrs) {
  for (const auto& a : def.attrs) {
    const AttrValue* v = attrs.Find(a.name);
    if (v == nullptr) {
      if (!a.default_value) return errors::InvalidArgument("missing required attr '", a.name, "'");
      attrs.Set(a.name, *a.default_value);
      continue;
    }
    AttrType got = AttrTypeOf(*v);
    if (got == AttrType::kInt && a.type == AttrType::kFloat) {
      attrs.Set(a.name, static_cast<double>(std::get<int64_t>(*v)));
      continue;
    }
    if (got == AttrType::kIntList && a.type == AttrType::kFloatList) {
      const auto& ints = std::get<std::vector<int64_t>>(*v);
      attrs.Set(a.name, std::vector<double>(ints.begin(), ints.end()));
      continue;
    }
    if (got != a.type) {
      return errors::InvalidArgument("attr '", a.name, "' must be ", AttrTypeName(a.type),
                                     ", got ", AttrTypeName(got));
    }
    if (a.type == AttrType::kType && !a.allowed_types.empty()) {
      DataType t = std::get<DataType>(*v);
      bool allowed = false;
      std::string names;
      for (DataType x : a.allowed_types) {
        allowed |= x == t;
        names += (names.empty() ? "" : ", ") + std::string(DataTypeName(x));
      }
      if (!allowed) {
        return errors::InvalidArgument("attr '", a.name, "' = ", DataTypeName(t),
                                       " is not allowed; allowed: ", names);
      }
    }
  }
  for (const auto& [name, value] : attrs.values()) {
    if (name.empty() || name[0] == '_') continue;  // internal attrs
    if (def.FindAttr(name) == nullptr) {
      return errors::InvalidArgument("unknown attr '", name, "'");
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<Node*> Graph::AddNode(NodeSpec spec) {
  auto fail = [&](const Status& s) {
    return s.WithContext("building node '" + spec.name + "' (" + spec.op + ")");
  };
  const OpDef* def = OpRegistry::Global().Find(spec.op);
  if (def == nullptr) {
    return fail(errors::NotFound("op type '", spec.op,
                                 "' is not registered (`towerflow ops` lists the registered ops)"));
  }
  if (by_name_.count(spec.name)) return fail(errors::AlreadyExists("a node with this name exists"));
  if (Status s = BindInputs(*def, spec); !s.ok()) return fail(s);
  if (Status s = CheckAttrs(*def, spec.attrs); !s.ok()) return fail(s);
  // Every input from this graph (one of another would be read through this
  // graph's ids: a wrong tensor, a crash or a hang at run time).
  auto owned = [&](const Node* n) {
    return n != nullptr && n->id() >= 0 && n->id() < num_nodes() && nodes_[static_cast<size_t>(n->id())].get() == n;
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (!owned(spec.inputs[i].node)) {
      return fail(errors::InvalidArgument("input ", i, " ('", spec.inputs[i].name(),
                                          "') is a tensor of another graph: an op's inputs must come from the "
                                          "graph it is added to"));
    }
  }
  for (const Node* c : spec.control_inputs) {
    if (!owned(c)) {
      return fail(errors::InvalidArgument("control input '", c != nullptr ? c->name() : std::string("null"),
                                          "' is an op of another graph (or null): control inputs must come from the "
                                          "graph the op is added to"));
    }
  }

  auto node = std::make_unique<Node>();
  node->def_ = def;
  for (const auto& arg : def->inputs) {
    auto count = ArgCount(arg, spec.attrs);
    if (!count.ok()) return fail(count.status());
    for (int k = 0; k < *count; ++k) node->input_is_ref_.push_back(arg.is_ref);
  }
  for (const auto& arg : def->outputs) {
    auto count = ArgCount(arg, spec.attrs);
    auto type = ArgType(arg, spec.attrs);
    if (!count.ok()) return fail(count.status());
    if (!type.ok()) return fail(type.status());
    for (int k = 0; k < *count; ++k) {
      node->output_types_.push_back(*type);
      node->output_is_ref_.push_back(arg.is_ref);
    }
  }

  std::vector<PartialShape> in_shapes;
  std::vector<DataType> in_types;
  std::vector<const Tensor*> in_values;
  for (const Output& in : spec.inputs) {
    in_shapes.push_back(in.shape());
    in_types.push_back(in.dtype());
    const Tensor* value = nullptr;
    if (in.node->op() == "Const") {
      if (const AttrValue* v = in.node->attrs().Find("value")) value = std::get_if<Tensor>(v);
    }
    in_values.push_back(value);
  }
  std::vector<std::optional<PartialVector>> in_partials;
  for (const Output& in : spec.inputs) in_partials.push_back(internal::PartialOf(in));
  InferenceContext ctx(*def, spec.attrs, std::move(in_shapes), std::move(in_types),
                       std::move(in_values), node->num_outputs());
  ctx.set_input_partials(std::move(in_partials));
  if (def->shape_fn) {
    if (Status s = def->shape_fn(&ctx); !s.ok()) return fail(s);
  } else {
    (void)shape_fns::Unknown(&ctx);
  }
  node->output_shapes_ = ctx.outputs();
  if (node->num_outputs() > 0) {
    node->partial_value_ =
        internal::ComputePartial(spec.op, spec.inputs, node->output_shapes_[0], node->output_types_[0]);
  }

  node->id_ = static_cast<int>(nodes_.size());
  node->name_ = spec.name;
  node->attrs_ = std::move(spec.attrs);
  node->inputs_ = std::move(spec.inputs);
  node->control_inputs_ = std::move(spec.control_inputs);
  node->requested_device_ = std::move(spec.device);
  node->colocation_ = std::move(spec.colocation);

  Node* raw = node.get();
  nodes_.push_back(std::move(node));
  consumers_.emplace_back();
  for (const Output& in : raw->inputs_) consumers_[static_cast<size_t>(in.node->id())].push_back(raw);
  for (Node* c : raw->control_inputs_) consumers_[static_cast<size_t>(c->id())].push_back(raw);
  by_name_[raw->name_] = raw;
  used_names_.emplace(raw->name_, 0);
  return raw;
}

Node* Graph::FindNode(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::string Graph::UniqueName(const std::string& base) {
  auto it = used_names_.find(base);
  if (it == used_names_.end()) {
    used_names_.emplace(base, 0);
    return base;
  }
  for (;;) {
    std::string candidate = base + "_" + std::to_string(++it->second);
    if (!used_names_.count(candidate)) {
      used_names_.emplace(candidate, 0);
      return candidate;
    }
  }
}

}  // namespace tw
