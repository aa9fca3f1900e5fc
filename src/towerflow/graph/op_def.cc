#include "towerflow/graph/op_def.h"

#include "towerflow/core/logging.h"

namespace tw {

const AttrDef* OpDef::FindAttr(const std::string& attr) const {
  for (const auto& a : attrs) {
    if (a.name == attr) return &a;
  }
  return nullptr;
}

OpDefBuilder::OpDefBuilder(std::string name) { def_.name = std::move(name); }

ArgDef OpDefBuilder::MakeArg(std::string name, const std::string& type) {
  ArgDef arg;
  arg.name = std::move(name);
  auto fixed = ParseDataType(type);
  if (fixed.ok()) {
    arg.fixed_type = *fixed;
  } else {
    arg.type_attr = type;
  }
  return arg;
}

OpDefBuilder& OpDefBuilder::Input(std::string name, const std::string& type) {
  def_.inputs.push_back(MakeArg(std::move(name), type));
  return *this;
}
OpDefBuilder& OpDefBuilder::RefInput(std::string name, const std::string& type) {
  def_.inputs.push_back(MakeArg(std::move(name), type));
  def_.inputs.back().is_ref = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::ListInput(std::string name, const std::string& type,
                                      std::string number_attr) {
  def_.inputs.push_back(MakeArg(std::move(name), type));
  def_.inputs.back().number_attr = number_attr;
  if (!def_.FindAttr(number_attr)) RequiredAttr(number_attr, AttrType::kInt);
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string name, const std::string& type) {
  def_.outputs.push_back(MakeArg(std::move(name), type));
  return *this;
}
OpDefBuilder& OpDefBuilder::RefOutput(std::string name, const std::string& type) {
  def_.outputs.push_back(MakeArg(std::move(name), type));
  def_.outputs.back().is_ref = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::TypeAttr(std::string name, std::vector<DataType> allowed,
                                     std::optional<DataType> default_value) {
  AttrDef a;
  a.name = std::move(name);
  a.type = AttrType::kType;
  a.allowed_types = std::move(allowed);
  if (default_value) a.default_value = *default_value;
  def_.attrs.push_back(std::move(a));
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrValue default_value) {
  AttrDef a;
  a.name = std::move(name);
  a.type = AttrTypeOf(default_value);
  a.default_value = std::move(default_value);
  def_.attrs.push_back(std::move(a));
  return *this;
}
OpDefBuilder& OpDefBuilder::RequiredAttr(std::string name, AttrType type) {
  AttrDef a;
  a.name = std::move(name);
  a.type = type;
  def_.attrs.push_back(std::move(a));
  return *this;
}
OpDefBuilder& OpDefBuilder::Stateful() {
  def_.is_stateful = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Shape(ShapeFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::Doc(std::string summary) {
  def_.summary = std::move(summary);
  return *this;
}
OpDef OpDefBuilder::Build() {
  for (const auto& arg : def_.inputs) {
    TW_CHECK(arg.fixed_type != DataType::kInvalid || def_.FindAttr(arg.type_attr))
        << def_.name << ": input " << arg.name << " names unknown type attr " << arg.type_attr;
  }
  for (const auto& arg : def_.outputs) {
    TW_CHECK(arg.fixed_type != DataType::kInvalid || def_.FindAttr(arg.type_attr))
        << def_.name << ": output " << arg.name << " names unknown type attr " << arg.type_attr;
  }
  return std::move(def_);
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterAllOps(*r);
    return r;
  }();
  return *registry;
}

Status OpRegistry::Register(OpDef def) {
  const std::string name = def.name;
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (ops_.count(name)) return errors::AlreadyExists("op '", name, "' is already registered");
  ops_[name] = std::make_unique<OpDef>(std::move(def));
  return Status::OK();
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

StatusOr<const OpDef*> OpRegistry::Lookup(const std::string& name) const {
  const OpDef* def = Find(name);
  if (def == nullptr) {
    return errors::NotFound("op type '", name,
                            "' is not registered (`towerflow ops` lists the registered ops)");
  }
  return def;
}

std::vector<const OpDef*> OpRegistry::List() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : ops_) out.push_back(def.get());
  return out;
}

}  // namespace tw
