#include "towerflow/graph/scope.h"

#include "towerflow/core/device_spec.h"

namespace tw {

Scope::Scope(Graph& graph) : state_(std::make_shared<State>(State{&graph, {}})) {}

Scope Scope::NewSubScope(const std::string& name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (name.empty()) return s;
  s.name_scope_ = graph().UniqueName(Prefixed(name));
  return s;
}

Scope Scope::WithOpName(const std::string& name) const {
  Scope s = *this;
  s.op_name_ = name;
  return s;
}

Scope Scope::WithDevice(const std::string& device) const {
  Scope s = *this;
  // "" clears the device (Python's tf.device(None)).
  if (device.empty()) {
    s.device_.clear();
    return s;
  }
  StatusOr<DeviceSpec> inner = DeviceSpec::Parse(device);
  if (!inner.ok()) {
    // Recorded once here, naming the string; nodes of the returned scope keep
    // the enclosing device.
    UpdateStatus(inner.status().WithContext("Scope::WithDevice"));
    return s;
  }
  // Nothing to merge with: keep the string as written ("/gpu:0").
  if (device_.empty()) {
    s.device_ = device;
    return s;
  }
  // As TF's merge_device: fields the inner spec sets replace the enclosing
  // scope's, the others are inherited ("/job:ps" + "/gpu:1" ->
  // "/job:ps/device:GPU:1"; a full inner spec replaces everything). device_ was
  // parsed when it was set, so it parses again.
  StatusOr<DeviceSpec> outer = DeviceSpec::Parse(device_);
  DeviceSpec merged = outer.ok() ? *outer : DeviceSpec();
  merged.OverrideWith(*inner);
  s.device_ = merged.ToString();
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Output>& deps) const {
  Scope s = *this;
  for (const Output& d : deps) {
    if (d.valid()) s.control_deps_.push_back(d.node);
  }
  return s;
}

Scope Scope::WithNoControlDependencies() const {
  Scope s = *this;
  s.control_deps_.clear();
  return s;
}

Scope Scope::ColocatedWith(const Output& other) const {
  Scope s = *this;
  if (other.valid()) s.colocation_.push_back("loc:@" + other.node->name());
  return s;
}

Scope Scope::WithVariableScope(const std::string& name, Reuse reuse) const {
  Scope s = NewSubScope(name);
  s.var_scope_ = var_scope_.empty() ? name : var_scope_ + "/" + name;
  if (reuse == Reuse::kReuse) s.reuse_ = true;
  if (reuse == Reuse::kNoReuse) s.reuse_ = false;
  return s;
}

Scope Scope::WithReuseVariables() const {
  Scope s = *this;
  s.reuse_ = true;
  return s;
}

Scope Scope::WithoutReuse() const {
  Scope s = *this;
  s.reuse_ = false;
  return s;
}

Status Scope::status() const {
  if (state_->errors.empty()) return Status::OK();
  const Status& first = state_->errors.front();
  if (state_->errors.size() == 1) return first;
  return Status(first.code(), first.message() + " (and " +
                                  std::to_string(state_->errors.size() - 1) + " more errors)");
}

void Scope::UpdateStatus(const Status& s) const {
  if (!s.ok()) state_->errors.push_back(s);
}

void Scope::ForgetErrors(size_t keep) const {
  if (state_->errors.size() > keep) state_->errors.resize(keep);
}

std::string Scope::Prefixed(const std::string& name) const {
  return name_scope_.empty() ? name : name_scope_ + "/" + name;
}

std::string Scope::MakeNodeName(const std::string& default_name) const {
  // TF's rule: a name ending in '/' is a name scope's full name, and the node
  // takes it as it is (`with name_scope(...) as scope: ... op(name=scope)`).
  if (!op_name_.empty() && op_name_.back() == '/') return op_name_.substr(0, op_name_.size() - 1);
  return graph().UniqueName(Prefixed(op_name_.empty() ? default_name : op_name_));
}

NodeBuilder::NodeBuilder(const Scope& scope, std::string op, std::string default_name)
    : scope_(scope), default_name_(default_name.empty() ? op : std::move(default_name)) {
  spec_.op = std::move(op);
  spec_.device = scope.device();
  spec_.control_inputs = scope.control_dependencies();
  spec_.colocation = scope.colocation();
}

NodeBuilder& NodeBuilder::Input(const Output& input) {
  if (!input.valid()) has_null_input_ = true;
  spec_.inputs.push_back(input);
  return *this;
}

NodeBuilder& NodeBuilder::Inputs(const std::vector<Output>& inputs) {
  for (const Output& in : inputs) Input(in);
  return *this;
}

NodeBuilder& NodeBuilder::ControlInput(Node* node) {
  if (node == nullptr) {
    has_null_input_ = true;
  } else {
    spec_.control_inputs.push_back(node);
  }
  return *this;
}

NodeBuilder& NodeBuilder::Attr(const std::string& name, AttrValue value) {
  spec_.attrs.Set(name, std::move(value));
  return *this;
}

Node* NodeBuilder::Finalize() {
  // A null input means an earlier builder failed and already recorded why.
  if (has_null_input_) {
    if (scope_.ok()) {
      scope_.UpdateStatus(errors::InvalidArgument("building '", scope_.Prefixed(default_name_),
                                                  "' (", spec_.op, "): an input is null"));
    }
    return nullptr;
  }
  spec_.name = scope_.MakeNodeName(default_name_);
  auto node = scope_.graph().AddNode(std::move(spec_));
  if (!node.ok()) {
    scope_.UpdateStatus(node.status());
    return nullptr;
  }
  return *node;
}

}  // namespace tw
