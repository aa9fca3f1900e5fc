// Saver: the restore graph (placeholders -> assigns -> restore_all) and the
// checks that make a restore all-or-nothing.
#include "towerflow/train/saver.h"

#include <set>
#include <string_view>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"

namespace tw::train {
namespace {

// InvalidArgument when `vars` is empty, holds an unbuilt variable or repeats a
// name of the file (`keys`, one per variable).
Status CheckVariables(const std::vector<Variable>& vars, const std::vector<std::string>& keys) {
  if (vars.empty()) return errors::InvalidArgument("Saver: no variables to save");
  std::set<std::string_view> names;
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variable& v = vars[i];
    if (!v.valid() || !v.value.valid()) {
      return errors::InvalidArgument("Saver: variable '", v.name, "' was not built (null ref or value)");
    }
    if (keys[i].empty()) return errors::InvalidArgument("Saver: an empty name for variable '", v.name, "'");
    if (!names.insert(keys[i]).second) {
      return errors::InvalidArgument("Saver: two variables are saved as '", keys[i], "'");
    }
  }
  return Status::OK();
}

// "'w'" or "'w' (saved as 'dense/kernel')".
std::string Named(const Variable& v, const std::string& key) {
  return key == v.name ? StrCat("'", v.name, "'") : StrCat("'", v.name, "' (saved as '", key, "')");
}

}  // namespace

Saver::Saver(const Scope& scope, std::vector<Variable> vars) : vars_(std::move(vars)) {
  if (vars_.empty()) vars_ = GlobalVariables(scope.graph());
  for (const Variable& v : vars_) keys_.push_back(v.name);
  Build(scope);
}

Saver::Saver(const Scope& scope, const std::vector<std::pair<std::string, Variable>>& named) {
  for (const auto& [key, v] : named) {
    keys_.push_back(key);
    vars_.push_back(v);
  }
  Build(scope);
}

void Saver::Build(const Scope& scope) {
  build_status_ = CheckVariables(vars_, keys_);
  if (!build_status_.ok()) {
    scope.UpdateStatus(build_status_);
    return;
  }
  const Scope save = scope.NewSubScope("save");
  std::vector<Output> assigns;
  for (const Variable& v : vars_) {
    Output placeholder = Placeholder(save, v.ref.dtype(), v.ref.shape());
    placeholders_.push_back(placeholder);
    assigns.push_back(Assign(save, v, placeholder));
  }
  restore_op_ = Group(save.WithOpName("restore_all"), assigns);
  if (restore_op_ == nullptr || !save.ok()) {
    build_status_ = save.ok() ? errors::Internal("Saver: building save/restore_all failed")
                              : save.status().WithContext("Saver: building the restore graph failed");
  }
}

StatusOr<std::vector<std::pair<std::string, Tensor>>> Saver::Fetch(Session& session) const {
  TW_RETURN_IF_ERROR(build_status_);
  std::vector<Output> fetches;
  fetches.reserve(vars_.size());
  for (const Variable& v : vars_) fetches.push_back(v.value);
  auto values = session.Run(fetches);
  if (!values.ok()) return values.status();
  std::vector<std::pair<std::string, Tensor>> tensors;
  tensors.reserve(vars_.size());
  for (size_t i = 0; i < vars_.size(); ++i) tensors.emplace_back(keys_[i], std::move((*values)[i]));
  return tensors;
}

Status Saver::Write(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                    const std::map<std::string, std::string>& metadata) {
  return WriteSafetensors(path, tensors, metadata, {.checksums = true});
}

Status Saver::Save(Session& session, const std::string& path,
                   const std::map<std::string, std::string>& metadata) const {
  auto tensors = Fetch(session);
  if (!tensors.ok()) return tensors.status().WithContext(StrCat("Saver: saving ", path));
  return Write(path, *tensors, metadata);
}

Status Saver::Restore(Session& session, const std::string& path) const {
  TW_RETURN_IF_ERROR(build_status_);
  TW_ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensors(path));
  return RestoreFrom(session, file, path);
}

StatusOr<std::vector<const Tensor*>> Saver::MatchFile(const SafetensorsFile& file,
                                                      const std::string& path) const {
  std::map<std::string_view, const Tensor*> by_name;
  for (const auto& [name, t] : file.tensors) by_name.emplace(name, &t);
  std::vector<const Tensor*> matched;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const Variable& v = vars_[i];
    auto it = by_name.find(keys_[i]);
    if (it == by_name.end()) {
      return errors::NotFound("Saver: variable ", Named(v, keys_[i]), " is not in checkpoint ", path);
    }
    const Tensor& t = *it->second;
    if (t.dtype() != v.ref.dtype()) {
      return errors::InvalidArgument("Saver: variable ", Named(v, keys_[i]), " is ", DataTypeName(v.ref.dtype()),
                                     " but checkpoint ", path, " holds ", DataTypeName(t.dtype()));
    }
    if (!PartialShape(t.shape()).IsCompatibleWith(v.ref.shape())) {
      return errors::InvalidArgument("Saver: variable ", Named(v, keys_[i]), " has shape ",
                                     v.ref.shape().ToString(), " but checkpoint ", path, " holds ",
                                     t.shape().ToString());
    }
    matched.push_back(&t);
  }
  return matched;
}

Status Saver::RestoreFrom(Session& session, const SafetensorsFile& file, const std::string& path) const {
  TW_RETURN_IF_ERROR(build_status_);
  TW_ASSIGN_OR_RETURN(std::vector<const Tensor*> values, MatchFile(file, path));
  FeedList feeds;
  feeds.reserve(vars_.size());
  for (size_t i = 0; i < vars_.size(); ++i) feeds.emplace_back(placeholders_[i], *values[i]);
  auto run = session.Run(feeds, {}, {restore_op_});
  if (!run.ok()) return run.status().WithContext(StrCat("Saver: restoring ", path));
  return Status::OK();
}

}  // namespace tw::train
