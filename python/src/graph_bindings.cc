// Bindings of graph/: Graph, Node, Output, Scope, generic node building from
// an op's schema, gradients, variables and their initializers.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"

namespace tw::python {

using namespace nb::literals;

namespace {

// Shapes as Python sees them: a list of ints with None for unknown dims, or
// None for an unknown rank.
nb::object ShapeToPython(const PartialShape& shape) {
  if (!shape.known_rank()) return nb::none();
  nb::list dims;
  for (int64_t d : shape.dims()) {
    if (d < 0) {
      dims.append(nb::none());
    } else {
      dims.append(d);
    }
  }
  return dims;
}

PartialShape ShapeFromPython(nb::handle shape) {
  if (shape.is_none()) return PartialShape::Unknown();
  std::vector<int64_t> dims;
  for (nb::handle d : shape) dims.push_back(d.is_none() ? -1 : nb::cast<int64_t>(d));
  return ValueOrThrow(PartialShape::FromDims(dims));
}

TensorShape TensorShapeFromPython(nb::handle shape) {
  std::vector<int64_t> dims;
  for (nb::handle d : shape) dims.push_back(nb::cast<int64_t>(d));
  return ValueOrThrow(TensorShape::Make(dims));
}

nb::object AttrToPython(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> nb::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, DataType>) {
          return nb::str(DataTypeToName(v).c_str());
        } else if constexpr (std::is_same_v<T, PartialShape>) {
          return ShapeToPython(v);
        } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
          nb::list out;
          for (DataType t : v) out.append(nb::str(DataTypeToName(t).c_str()));
          return out;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return TensorToNumpy(v);
        } else {
          return nb::cast(v);
        }
      },
      value);
}

AttrValue AttrFromPython(const OpDef& def, const std::string& name, nb::handle value) {
  const AttrDef* attr = def.FindAttr(name);
  if (attr == nullptr) {
    throw StatusError(errors::InvalidArgument("op ", def.name, " has no attr '", name, "'"));
  }
  switch (attr->type) {
    case AttrType::kInt:
      return nb::cast<int64_t>(value);
    case AttrType::kFloat:
      return nb::cast<double>(value);
    case AttrType::kBool:
      return nb::cast<bool>(value);
    case AttrType::kString:
      if (PyBytes_Check(value.ptr())) return std::string(nb::cast<nb::bytes>(value).c_str(), nb::len(value));
      return nb::cast<std::string>(value);
    case AttrType::kType:
      return DataTypeFromName(nb::cast<std::string>(value));
    case AttrType::kShape:
      return ShapeFromPython(value);
    case AttrType::kIntList:
      return nb::cast<std::vector<int64_t>>(value);
    case AttrType::kTypeList: {
      std::vector<DataType> types;
      for (nb::handle t : value) types.push_back(DataTypeFromName(nb::cast<std::string>(t)));
      return types;
    }
    case AttrType::kTensor:
      return TensorFromPythonAnyType(value);
    case AttrType::kFloatList:
      return nb::cast<std::vector<double>>(value);
  }
  throw StatusError(errors::Internal("attr '", name, "' of unknown type"));
}

Node* AddOp(const Scope& scope, const std::string& op, const std::vector<Output>& inputs, nb::dict attrs,
            const std::string& name, const std::vector<Node*>& control_inputs) {
  const OpDef* def = ValueOrThrow(OpRegistry::Global().Lookup(op));
  Scope named = name.empty() ? scope : scope.WithOpName(name);
  return Checked(named, [&] {
    NodeBuilder builder(named, op);
    builder.Inputs(inputs);
    for (Node* c : control_inputs) builder.ControlInput(c);
    for (auto [k, v] : attrs) {
      std::string key = nb::cast<std::string>(k);
      builder.Attr(key, AttrFromPython(*def, key, v));
    }
    return builder.Finalize();
  });
}

nb::dict OpSchema(const std::string& op) {
  const OpDef* def = ValueOrThrow(OpRegistry::Global().Lookup(op));
  auto args = [](const std::vector<ArgDef>& list) {
    nb::list out;
    for (const ArgDef& a : list) {
      nb::dict d;
      d["name"] = a.name;
      d["type_attr"] = a.type_attr;
      d["number_attr"] = a.number_attr;
      d["fixed_type"] = a.fixed_type == DataType::kInvalid ? "" : DataTypeToName(a.fixed_type);
      d["is_ref"] = a.is_ref;
      out.append(d);
    }
    return out;
  };
  nb::list attrs;
  for (const AttrDef& a : def->attrs) {
    nb::dict d;
    d["name"] = a.name;
    d["type"] = std::string(AttrTypeName(a.type));
    d["has_default"] = a.default_value.has_value();
    attrs.append(d);
  }
  nb::dict out;
  out["name"] = def->name;
  out["inputs"] = args(def->inputs);
  out["outputs"] = args(def->outputs);
  out["attrs"] = attrs;
  out["is_stateful"] = def->is_stateful;
  out["summary"] = def->summary;
  return out;
}

// tw::Initializer is a std::function; Python holds it in this class.
struct PyInitializer {
  Initializer fn;
};

nb::object OutputOrNone(const Output& o) { return o.valid() ? nb::cast(o) : nb::none(); }

// An initializer that builds Const(value), checked against the variable's
// shape and dtype when the variable is made.
Initializer ConstantTensorInitializer(Tensor value) {
  return [value](const Scope& scope, const TensorShape& shape, DataType dtype) -> Output {
    if (value.shape() != shape || value.dtype() != dtype) {
      scope.UpdateStatus(errors::InvalidArgument("initial value ", value.DebugString(0), " for a variable of ",
                                                 DataTypeName(dtype), shape.ToString()));
      return Output();
    }
    return Const(scope, value);
  };
}

}  // namespace

void BindGraph(nb::module_& m) {
  nb::class_<Graph>(m, "Graph", "A deferred dataflow graph (tw::Graph).")
      .def(nb::init<>())
      .def("unique_name", &Graph::UniqueName, "base"_a)
      .def("is_name_used", &Graph::IsNameUsed, "name"_a)
      .def("find_node", &Graph::FindNode, "name"_a, nb::rv_policy::reference_internal)
      .def_prop_ro("num_nodes", &Graph::num_nodes)
      .def("node", &Graph::node, "id"_a, nb::rv_policy::reference_internal)
      .def("set_seed", &Graph::set_seed, "seed"_a)
      .def_prop_ro("has_seed", &Graph::has_seed)
      .def_prop_ro("seed", &Graph::seed);

  nb::class_<Node>(m, "Node", "One op instance of a graph; owned by the graph.")
      .def_prop_ro("id", &Node::id)
      .def_prop_ro("name", &Node::name)
      .def_prop_ro("op", &Node::op)
      .def_prop_ro("requested_device", &Node::requested_device)
      .def_prop_ro("num_inputs", &Node::num_inputs)
      .def_prop_ro("num_outputs", &Node::num_outputs)
      .def_prop_ro("inputs", &Node::inputs)
      .def_prop_ro("control_inputs", &Node::control_inputs, nb::rv_policy::reference)
      .def_prop_ro("colocation_groups", &Node::colocation_groups)
      .def_prop_ro("is_stateful", &Node::is_stateful)
      .def("output_dtype", [](const Node& n, int i) { return DataTypeToName(n.output_type(i)); }, "index"_a)
      .def("output_shape", [](const Node& n, int i) { return ShapeToPython(n.output_shape(i)); }, "index"_a)
      .def("output_is_ref", &Node::output_is_ref, "index"_a)
      .def("attrs",
           [](const Node& n) {
             nb::dict out;
             for (const auto& [k, v] : n.attrs().values()) out[k.c_str()] = AttrToPython(v);
             return out;
           })
      .def("debug_name", &Node::DebugName)
      .def("__eq__", [](const Node& a, const Node& b) { return &a == &b; })
      .def("__hash__", [](const Node& n) { return reinterpret_cast<intptr_t>(&n); });

  nb::class_<Output>(m, "Output", "One output of a node: (node, index).")
      .def(nb::init<Node*, int>(), "node"_a, "index"_a = 0)
      .def_prop_ro("node", [](const Output& o) { return o.node; }, nb::rv_policy::reference)
      .def_ro("index", &Output::index)
      .def_prop_ro("dtype", [](const Output& o) { return DataTypeToName(o.dtype()); })
      .def_prop_ro("shape", [](const Output& o) { return ShapeToPython(o.shape()); })
      .def_prop_ro("is_ref", [](const Output& o) { return o.node->output_is_ref(o.index); })
      .def_prop_ro("name", &Output::name)
      .def("__eq__", [](const Output& a, const Output& b) { return a == b; })
      .def("__hash__", [](const Output& o) { return reinterpret_cast<intptr_t>(o.node) * 31 + o.index; });

  nb::enum_<Reuse>(m, "Reuse")
      .value("INHERIT", Reuse::kInherit)
      .value("REUSE", Reuse::kReuse)
      .value("NO_REUSE", Reuse::kNoReuse);

  nb::class_<Scope>(m, "Scope", "Where nodes are built: name scope, device, control dependencies, variable scope.")
      .def(nb::init<Graph&>(), "graph"_a, nb::keep_alive<1, 2>())
      .def("new_sub_scope", &Scope::NewSubScope, "name"_a)
      .def("with_op_name", &Scope::WithOpName, "name"_a)
      .def("with_device",
           [](const Scope& s, const std::string& device) {
             return Checked(s, [&] { return s.WithDevice(device); });
           },
           "device"_a)
      .def("with_control_dependencies",
           [](const Scope& s, const std::vector<Node*>& nodes) {
             std::vector<Output> deps;
             for (Node* n : nodes) deps.emplace_back(n, 0);
             return s.WithControlDependencies(deps);
           },
           "nodes"_a)
      .def("with_no_control_dependencies", &Scope::WithNoControlDependencies)
      .def("colocated_with", &Scope::ColocatedWith, "output"_a)
      .def("with_variable_scope", &Scope::WithVariableScope, "name"_a, "reuse"_a = Reuse::kInherit)
      .def("with_reuse_variables", &Scope::WithReuseVariables)
      .def("without_reuse", &Scope::WithoutReuse)
      .def_prop_ro("name_scope", &Scope::name_scope)
      .def_prop_ro("device", &Scope::device)
      .def_prop_ro("variable_scope", &Scope::variable_scope)
      .def_prop_ro("reuse", &Scope::reuse)
      .def_prop_ro("control_dependencies", &Scope::control_dependencies, nb::rv_policy::reference)
      .def_prop_ro("graph", &Scope::graph, nb::rv_policy::reference);

  m.def("op_schema", &OpSchema, "op"_a, "The schema of an op: inputs, outputs, attrs.");
  m.def("op_names", [] {
    std::vector<std::string> names;
    for (const OpDef* d : OpRegistry::Global().List()) names.push_back(d->name);
    return names;
  });
  m.def("add_op", &AddOp, "scope"_a, "op"_a, "inputs"_a, "attrs"_a, "name"_a = "",
        "control_inputs"_a = std::vector<Node*>{}, nb::rv_policy::reference,
        "Builds one node of `op` in `scope`; attrs are converted by the op's schema.");
  m.def("group",
        [](const Scope& scope, const std::vector<Node*>& nodes, const std::string& name) -> Node* {
          // A name ending in '/' (TF's group(name=scope)) is the name scope's
          // own name, taken as it is (Scope::WithOpName).
          std::vector<Output> deps;
          for (Node* n : nodes) deps.emplace_back(n, 0);
          Scope named = name.empty() ? scope : scope.WithOpName(name);
          return Checked(named, [&] { return Group(named, deps); });
        },
        "scope"_a, "nodes"_a, "name"_a = "", nb::rv_policy::reference);

  m.def("gradients",
        [](const Scope& scope, const std::vector<Output>& ys, const std::vector<Output>& xs,
           const std::vector<Output>& grad_ys) {
          std::vector<Output> grads = ValueOrThrow(Gradients(scope, ys, xs, grad_ys));
          nb::list out;
          for (const Output& g : grads) out.append(OutputOrNone(g));
          return out;
        },
        "scope"_a, "ys"_a, "xs"_a, "grad_ys"_a = std::vector<Output>{});

  m.def("dropout",
        [](const Scope& scope, const Output& x, float rate, int64_t seed) {
          DropoutResult r = Checked(scope, [&] { return Dropout(scope, x, rate, seed); });
          return r.output;
        },
        "scope"_a, "x"_a, "rate"_a, "seed"_a = 0);
  m.def("random_tensor",
        [](const Scope& scope, const std::string& kind, const Output& shape, const std::string& dtype, int64_t seed) {
          DataType dt = DataTypeFromName(dtype);
          return Checked(scope, [&] {
            if (kind == "normal") return RandomStandardNormal(scope, shape, dt, seed);
            if (kind == "truncated_normal") return TruncatedNormal(scope, shape, dt, seed);
            if (kind == "uniform") return RandomUniform(scope, shape, dt, seed);
            throw StatusError(errors::InvalidArgument("unknown random kind '", kind, "'"));
          });
        },
        "scope"_a, "kind"_a, "shape"_a, "dtype"_a, "seed"_a = 0);

  // ---- variables
  nb::class_<Variable>(m, "Variable", "A variable: its ref, its value, its initializer, its full name.")
      .def_ro("ref", &Variable::ref)
      .def_ro("value", &Variable::value)
      .def_prop_ro("initializer", [](const Variable& v) { return v.initializer; }, nb::rv_policy::reference)
      .def_ro("name", &Variable::name);

  nb::class_<PyInitializer>(m, "Initializer", "How a variable's first value is built.");
  nb::module_ init = m.def_submodule("initializers", "Variable initializers (random_ops.h).");
  init.def("truncated_normal",
           [](double mean, double stddev, int64_t seed) {
             return PyInitializer{TruncatedNormalInitializer(mean, stddev, seed)};
           },
           "mean"_a = 0.0, "stddev"_a = 1.0, "seed"_a = 0);
  init.def("random_normal",
           [](double mean, double stddev, int64_t seed) {
             return PyInitializer{RandomNormalInitializer(mean, stddev, seed)};
           },
           "mean"_a = 0.0, "stddev"_a = 1.0, "seed"_a = 0);
  init.def("random_uniform",
           [](double minval, double maxval, int64_t seed) {
             return PyInitializer{RandomUniformInitializer(minval, maxval, seed)};
           },
           "minval"_a, "maxval"_a, "seed"_a = 0);
  init.def("glorot_uniform", [](int64_t seed) { return PyInitializer{GlorotUniformInitializer(seed)}; },
           "seed"_a = 0);
  init.def("zeros", [] { return PyInitializer{ZerosInitializer()}; });
  init.def("constant", [](double value) { return PyInitializer{ConstantInitializer(value)}; }, "value"_a);
  // tf.Variable(<tensor>): the first value is that tensor of the graph,
  // computed when the variable's initializer runs.
  init.def("output", [](const Output& value) {
    return PyInitializer{[value](const Scope&, const TensorShape&, DataType) { return value; }};
  }, "value"_a);
  init.def("tensor", [](nb::handle value, const std::string& dtype) {
    return PyInitializer{ConstantTensorInitializer(TensorFromPython(value, DataTypeFromName(dtype)))};
  }, "value"_a, "dtype"_a);

  m.def("get_variable",
        [](const Scope& scope, const std::string& name, nb::handle shape, const std::string& dtype,
           const PyInitializer* initializer, bool trainable, std::vector<std::string> collections) {
          VariableOptions options;
          options.dtype = DataTypeFromName(dtype);
          if (initializer != nullptr) options.initializer = initializer->fn;
          options.trainable = trainable;
          options.collections = std::move(collections);
          TensorShape s = TensorShapeFromPython(shape);
          return Checked(scope, [&] { return GetVariable(scope, name, s, std::move(options)); });
        },
        "scope"_a, "name"_a, "shape"_a, "dtype"_a = "float32", "initializer"_a = nb::none(),
        "trainable"_a = true, "collections"_a = std::vector<std::string>{});
  m.def("find_variable", [](Graph& g, const std::string& name) -> std::optional<Variable> {
    const Variable* v = FindVariable(g, name);
    if (v == nullptr) return std::nullopt;
    return *v;
  });
  m.def("global_variables", &GlobalVariables, "graph"_a);
  m.def("trainable_variables", &TrainableVariables, "graph"_a);
  m.def("global_variables_initializer", &GlobalVariablesInitializer, "graph"_a, nb::rv_policy::reference);
  m.def("local_variables_initializer", &LocalVariablesInitializer, "graph"_a, nb::rv_policy::reference);
  m.def("variables_initializer",
        [](const Scope& scope, const std::vector<Variable>& vars) {
          return Checked(scope, [&] { return VariablesInitializer(scope, vars); });
        },
        "scope"_a, "vars"_a, nb::rv_policy::reference);
  m.def("assign",
        [](const Scope& scope, const Output& ref, const Output& value, bool validate_shape, bool use_locking) {
          return Checked(scope, [&] {
            return Assign(scope, ref, value, {.validate_shape = validate_shape, .use_locking = use_locking});
          });
        },
        "scope"_a, "ref"_a, "value"_a, "validate_shape"_a = true, "use_locking"_a = true);
}

}  // namespace tw::python
