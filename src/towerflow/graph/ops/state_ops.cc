// Schemas and builders of the variable ops (VariableV2, Assign, AssignAdd,
// AssignSub, IsVariableInitialized) and the variable store behind GetVariable.
#include "towerflow/graph/ops/state_ops.h"

#include <algorithm>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

// Shape function of the Assign* ops: the value must fit the variable's shape.
Status AssignShape(InferenceContext* c) {
  // AssignAdd/AssignSub have no validate_shape attr: they always validate.
  auto validate = c->GetAttr<bool>("validate_shape");
  if (validate.ok() && !*validate) {
    c->set_output(0, c->input(1));
    return Status::OK();
  }
  auto merged = c->input(0).Merge(c->input(1));
  if (!merged.ok()) {
    return errors::InvalidArgument("the value's shape ", c->input(1).ToString(),
                                   " does not match the variable's shape ", c->input(0).ToString());
  }
  c->set_output(0, *merged);
  return Status::OK();
}

std::string StoreKey(const std::string& full_name) { return "var:" + full_name; }

}  // namespace

void RegisterStateOps(OpRegistry& r) {
  r.Register(OpDefBuilder("VariableV2")
                 .RefOutput("ref", "dtype")
                 .RequiredAttr("shape", AttrType::kShape)
                 .TypeAttr("dtype", {})
                 .Attr("container", std::string())
                 .Attr("shared_name", std::string())
                 .Stateful()
                 .Shape([](InferenceContext* c) {
                   TW_ASSIGN_OR_RETURN(PartialShape s, c->GetAttr<PartialShape>("shape"));
                   c->set_output(0, s);
                   return Status::OK();
                 })
                 .Doc("A mutable tensor that persists across steps; outputs a reference to it.")
                 .Build()).Check();
  r.Register(OpDefBuilder("Assign")
                 .RefInput("ref", "T")
                 .Input("value", "T")
                 .RefOutput("output_ref", "T")
                 .TypeAttr("T", {})
                 .Attr("validate_shape", true)
                 .Attr("use_locking", true)
                 .Shape(AssignShape)
                 .Doc("ref = value; outputs ref.")
                 .Build()).Check();
  for (const char* op : {"AssignAdd", "AssignSub"}) {
    r.Register(OpDefBuilder(op)
                   .RefInput("ref", "T")
                   .Input("value", "T")
                   .RefOutput("output_ref", "T")
                   .TypeAttr("T", NumericTypes())
                   .Attr("use_locking", false)
                   .Shape(AssignShape)
                   .Doc(std::string(op) == "AssignAdd" ? "ref += value; outputs ref." : "ref -= value; outputs ref.")
                   .Build()).Check();
  }
  r.Register(OpDefBuilder("IsVariableInitialized")
                 .RefInput("ref", "dtype")
                 .Output("is_initialized", "bool")
                 .TypeAttr("dtype", {})
                 .Shape(shape_fns::Scalar)
                 .Doc("Whether the variable has been assigned.")
                 .Build()).Check();
  r.Register(OpDefBuilder("InitializedValue")
                 .RefInput("ref", "dtype")
                 .Input("initial_value", "dtype")
                 .Output("value", "dtype")
                 .TypeAttr("dtype", {})
                 .Shape([](InferenceContext* c) -> Status {
                   auto merged = c->input(0).Merge(c->input(1));
                   if (!merged.ok()) {
                     return errors::InvalidArgument("InitializedValue: the initial value's shape ",
                                                    c->input(1).ToString(), " is not the variable's ",
                                                    c->input(0).ToString());
                   }
                   c->set_output(0, *merged);
                   return Status::OK();
                 })
                 .Doc("The variable's value when it has been assigned, else initial_value.")
                 .Build()).Check();
}

Output VariableV2(const Scope& scope, const PartialShape& shape, DataType dtype,
                  const std::string& shared_name) {
  return NodeBuilder(scope, "VariableV2", "Variable")
      .Attr("shape", shape)
      .Attr("dtype", dtype)
      .Attr("shared_name", shared_name)
      .Finalize();
}

Output Assign(const Scope& scope, const Output& ref, const Output& value, AssignOptions options) {
  return NodeBuilder(scope, "Assign")
      .Input(ref)
      .Input(value)
      .Attr("validate_shape", options.validate_shape)
      .Attr("use_locking", options.use_locking)
      .Finalize();
}
Output Assign(const Scope& scope, const Variable& var, const Output& value, AssignOptions options) {
  return Assign(scope, var.ref, value, options);
}
Output AssignAdd(const Scope& scope, const Output& ref, const Output& value) {
  return NodeBuilder(scope, "AssignAdd").Input(ref).Input(value).Finalize();
}
Output AssignAdd(const Scope& scope, const Variable& var, const Output& value) {
  return AssignAdd(scope, var.ref, value);
}
Output AssignSub(const Scope& scope, const Output& ref, const Output& value) {
  return NodeBuilder(scope, "AssignSub").Input(ref).Input(value).Finalize();
}
Output AssignSub(const Scope& scope, const Variable& var, const Output& value) {
  return AssignSub(scope, var.ref, value);
}
Output InitializedValue(const Scope& scope, const Variable& var) {
  if (var.initializer == nullptr || var.initializer->num_inputs() < 2) {
    scope.UpdateStatus(errors::InvalidArgument("InitializedValue: variable ", var.name, " has no initializer"));
    return Output();
  }
  return NodeBuilder(scope, "InitializedValue")
      .Input(var.ref)
      .Input(var.initializer->input(1))
      .Finalize();
}

Output IsVariableInitialized(const Scope& scope, const Output& ref) {
  return NodeBuilder(scope, "IsVariableInitialized").Input(ref).Finalize();
}

const Variable* FindVariable(Graph& graph, const std::string& full_name) {
  std::any* stored = graph.FindObject(StoreKey(full_name));
  return stored == nullptr ? nullptr : std::any_cast<Variable>(stored);
}

Variable CreateVariable(const Scope& scope, const std::string& full_name, const TensorShape& shape,
                        VariableOptions options) {
  Graph& g = scope.graph();
  if (full_name.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("a variable needs a name"));
    return Variable();
  }
  if (FindVariable(g, full_name) != nullptr) {
    scope.UpdateStatus(errors::AlreadyExists("Variable ", full_name, " already exists"));
    return Variable();
  }
  // Variables live outside the caller's name scope and control dependencies (TF
  // builds them under init_scope): a private scope rooted at the graph, whose
  // errors are copied to the caller's. Opening the name scope first reserves
  // "<full_name>" so the variable node gets exactly that name and its helpers
  // "<full_name>/Assign", "<full_name>/read".
  Scope root = Scope(g).WithDevice(scope.device());
  Scope vs = root.NewSubScope(full_name);
  Variable v;
  v.name = full_name;
  NodeSpec spec;
  spec.name = vs.name_scope();
  spec.op = "VariableV2";
  spec.device = scope.device();
  spec.attrs.Set("shape", PartialShape(shape));
  spec.attrs.Set("dtype", options.dtype);
  auto node = g.AddNode(std::move(spec));
  if (!node.ok()) {
    scope.UpdateStatus(node.status().WithContext("creating variable " + full_name));
    return Variable();
  }
  v.ref = Output(*node, 0);

  Initializer init = options.initializer;
  if (!init) init = IsFloating(options.dtype) ? GlorotUniformInitializer() : ZerosInitializer();
  Output initial = init(vs.NewSubScope("Initializer"), shape, options.dtype);
  if (root.ok() && !initial.valid()) {
    root.UpdateStatus(errors::InvalidArgument("the initializer of variable ", full_name,
                                              " returned a null Output"));
  }
  if (initial.valid() && initial.dtype() != options.dtype) {
    root.UpdateStatus(errors::InvalidArgument("the initializer of variable ", full_name, " made a ",
                                              DataTypeName(initial.dtype()), " value; the variable is ",
                                              DataTypeName(options.dtype)));
  }
  if (root.ok()) {
    Scope colocated = vs.ColocatedWith(v.ref);
    v.initializer = Assign(colocated.WithOpName("Assign"), v.ref, initial).node;
    v.value = Identity(colocated.WithOpName("read"), v.ref);
  }
  if (!root.ok()) {
    for (const Status& s : root.errors()) {
      scope.UpdateStatus(s.WithContext("creating variable " + full_name));
    }
    return Variable();
  }

  g.SetObject(StoreKey(full_name), v);
  std::vector<std::string> keys = options.collections;
  if (keys.empty()) keys.push_back(collections::kGlobalVariables);
  if (options.trainable &&
      std::find(keys.begin(), keys.end(), collections::kTrainableVariables) == keys.end()) {
    keys.push_back(collections::kTrainableVariables);
  }
  for (const std::string& key : keys) g.AddToCollection(key, v);
  return v;
}

Variable GetVariable(const Scope& scope, const std::string& name, const TensorShape& shape,
                     VariableOptions options) {
  const std::string full = scope.variable_scope().empty() ? name : scope.variable_scope() + "/" + name;
  const Variable* found = FindVariable(scope.graph(), full);
  if (scope.reuse()) {
    if (found == nullptr) {
      scope.UpdateStatus(errors::NotFound("Variable ", full,
                                          " does not exist, or was not created with GetVariable(). "
                                          "Did you mean to set reuse=None in VarScope?"));
      return Variable();
    }
    const PartialShape& have = found->ref.shape();
    if (!(have == PartialShape(shape))) {
      scope.UpdateStatus(errors::InvalidArgument("Trying to share variable ", full,
                                                 ", but specified shape ", shape.ToString(),
                                                 " and found shape ", have.ToString(), "."));
      return Variable();
    }
    if (found->ref.dtype() != options.dtype) {
      scope.UpdateStatus(errors::InvalidArgument("Trying to share variable ", full,
                                                 ", but specified dtype ", DataTypeName(options.dtype),
                                                 " and found dtype ", DataTypeName(found->ref.dtype()), "."));
      return Variable();
    }
    return *found;
  }
  if (found != nullptr) {
    scope.UpdateStatus(errors::AlreadyExists("Variable ", full,
                                             " already exists, disallowed. Did you mean to set "
                                             "reuse=True in VarScope?"));
    return Variable();
  }
  return CreateVariable(scope, full, shape, std::move(options));
}

std::vector<Variable> GlobalVariables(const Graph& graph) {
  return graph.GetCollection<Variable>(collections::kGlobalVariables);
}
std::vector<Variable> TrainableVariables(const Graph& graph) {
  return graph.GetCollection<Variable>(collections::kTrainableVariables);
}

Node* VariablesInitializer(const Scope& scope, const std::vector<Variable>& vars) {
  NodeBuilder b(scope, "NoOp", "init");
  for (const Variable& v : vars) {
    if (v.initializer != nullptr) b.ControlInput(v.initializer);
  }
  return b.Finalize();
}

Node* GlobalVariablesInitializer(Graph& graph) {
  return VariablesInitializer(Scope(graph), GlobalVariables(graph));
}

Node* LocalVariablesInitializer(Graph& graph) {
  return VariablesInitializer(Scope(graph), graph.GetCollection<Variable>(collections::kLocalVariables));
}

}  // namespace tw
