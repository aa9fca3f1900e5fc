#include "towerflow/core/device_spec.h"

#include <cctype>
#include <vector>

namespace tw {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsAlnumOrUnderscore(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Job names and device types: a letter, then letters, digits or '_' (TF's
// ConsumeJobName / ConsumeDeviceType).
bool IsIdentifier(std::string_view s) {
  if (s.empty() || !IsAlpha(s.front())) return false;
  for (char c : s) {
    if (!IsAlnumOrUnderscore(c)) return false;
  }
  return true;
}

// Decimal digits only, at most 9 of them, so the value fits an int.
bool ParseNumber(std::string_view s, int* value) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

StatusOr<DeviceSpec> DeviceSpec::Parse(std::string_view name) {
  auto malformed = [&](const std::string& why) {
    return errors::InvalidArgument("Malformed device specification '", name, "': ", why);
  };
  DeviceSpec spec;
  bool saw_job = false, saw_replica = false, saw_task = false, saw_device = false;
  // A field given twice is an error (Python's "Cannot specify multiple device types").
  auto once = [&](bool* seen, const char* field) -> Status {
    if (*seen) return malformed(StrCat(field, " is given twice"));
    *seen = true;
    return Status::OK();
  };
  // The id of "/device:TYPE:<id>" and "/gpu:<id>": "*" or a number.
  auto parse_id = [&](std::string_view s) -> Status {
    if (s == "*") return Status::OK();
    int id = 0;
    if (!ParseNumber(s, &id)) return malformed(StrCat("device id '", s, "' is not a number or '*'"));
    spec.set_id(id);
    return Status::OK();
  };
  for (std::string_view component : Split(name, '/')) {
    if (component.empty()) continue;  // the leading slash, or "//" (Python skips these)
    std::vector<std::string_view> parts = Split(component, ':');
    const std::string_view key = parts[0];
    const std::string legacy = Lower(key);
    if (key == "job" && parts.size() == 2) {
      TW_RETURN_IF_ERROR(once(&saw_job, "job"));
      if (parts[1] == "*") continue;
      if (!IsIdentifier(parts[1])) return malformed(StrCat("job name '", parts[1], "' is not a name"));
      spec.set_job(std::string(parts[1]));
    } else if ((key == "replica" || key == "task") && parts.size() == 2) {
      const bool replica = key == "replica";
      TW_RETURN_IF_ERROR(once(replica ? &saw_replica : &saw_task, replica ? "replica" : "task"));
      if (parts[1] == "*") continue;
      int v = 0;
      if (!ParseNumber(parts[1], &v)) return malformed(StrCat(key, " '", parts[1], "' is not a number"));
      replica ? spec.set_replica(v) : spec.set_task(v);
    } else if (key == "device" && (parts.size() == 2 || parts.size() == 3)) {
      TW_RETURN_IF_ERROR(once(&saw_device, "the device"));
      if (parts[1] != "*") {
        if (!IsIdentifier(parts[1])) return malformed(StrCat("device type '", parts[1], "' is not a name"));
        spec.set_type(std::string(parts[1]));
      }
      if (parts.size() == 3) TW_RETURN_IF_ERROR(parse_id(parts[2]));
    } else if ((legacy == "cpu" || legacy == "gpu") && parts.size() <= 2) {
      // The legacy form is the only one that capitalizes the type.
      TW_RETURN_IF_ERROR(once(&saw_device, "the device"));
      spec.set_type(legacy == "cpu" ? "CPU" : "GPU");
      if (parts.size() == 2) TW_RETURN_IF_ERROR(parse_id(parts[1]));
    } else {
      return malformed(StrCat("unknown field '", component,
                              "' (expected /job:<name>, /replica:<n>, /task:<n>, /device:<TYPE>:<n> or "
                              "the legacy /cpu:<n>, /gpu:<n>)"));
    }
  }
  return spec;
}

DeviceSpec DeviceSpec::Local(const std::string& type, int index) {
  DeviceSpec spec;
  spec.set_job("localhost");
  spec.set_replica(0);
  spec.set_task(0);
  spec.set_type(type);
  spec.set_id(index);
  return spec;
}

bool DeviceSpec::Matches(const DeviceSpec& d) const {
  if (has_job_ && (!d.has_job_ || d.job_ != job_)) return false;
  if (has_replica_ && (!d.has_replica_ || d.replica_ != replica_)) return false;
  if (has_task_ && (!d.has_task_ || d.task_ != task_)) return false;
  if (has_type_ && (!d.has_type_ || d.type_ != type_)) return false;
  if (has_id_ && (!d.has_id_ || d.id_ != id_)) return false;
  return true;
}

bool DeviceSpec::IsCompatibleWith(const DeviceSpec& o) const {
  if (has_job_ && o.has_job_ && job_ != o.job_) return false;
  if (has_replica_ && o.has_replica_ && replica_ != o.replica_) return false;
  if (has_task_ && o.has_task_ && task_ != o.task_) return false;
  if (has_type_ && o.has_type_ && type_ != o.type_) return false;
  if (has_id_ && o.has_id_ && id_ != o.id_) return false;
  return true;
}

Status DeviceSpec::MergeFrom(const DeviceSpec& other, bool allow_soft_placement) {
  auto conflict = [&](const char* what) {
    return errors::InvalidArgument("Cannot merge devices with incompatible ", what, ": '", ToString(), "' and '",
                                   other.ToString(), "'");
  };
  // Checked before anything changes, so a failed merge leaves *this as it was.
  if (has_job_ && other.has_job_ && job_ != other.job_) return conflict("jobs");
  if (has_replica_ && other.has_replica_ && replica_ != other.replica_) return conflict("replicas");
  if (has_task_ && other.has_task_ && task_ != other.task_) return conflict("tasks");
  const bool type_conflict = has_type_ && other.has_type_ && type_ != other.type_;
  const bool id_conflict = has_id_ && other.has_id_ && id_ != other.id_;
  if (!allow_soft_placement && type_conflict) return conflict("types");
  if (!allow_soft_placement && id_conflict) return conflict("ids");
  if (other.has_job_) set_job(other.job_);
  if (other.has_replica_) set_replica(other.replica_);
  if (other.has_task_) set_task(other.task_);
  // Soft placement resolves a conflict by leaving the choice to the placer.
  if (type_conflict) {
    clear_type();
    clear_id();
    return Status::OK();
  }
  if (other.has_type_) set_type(other.type_);
  if (id_conflict) {
    clear_id();
    return Status::OK();
  }
  if (other.has_id_) set_id(other.id_);
  return Status::OK();
}

void DeviceSpec::OverrideWith(const DeviceSpec& inner) {
  if (inner.has_job_) set_job(inner.job_);
  if (inner.has_replica_) set_replica(inner.replica_);
  if (inner.has_task_) set_task(inner.task_);
  if (inner.has_type_) set_type(inner.type_);
  if (inner.has_id_) set_id(inner.id_);
}

std::string DeviceSpec::ShortString() const {
  if (!has_type_ && !has_id_) return "";
  return "/device:" + (has_type_ ? type_ : std::string("*")) + ":" + (has_id_ ? std::to_string(id_) : "*");
}

std::string DeviceSpec::ToString() const {
  std::string out;
  if (has_job_) out += "/job:" + job_;
  if (has_replica_) out += "/replica:" + std::to_string(replica_);
  if (has_task_) out += "/task:" + std::to_string(task_);
  return out + ShortString();
}

bool DeviceSpec::operator==(const DeviceSpec& o) const {
  return has_job_ == o.has_job_ && has_replica_ == o.has_replica_ && has_task_ == o.has_task_ &&
         has_type_ == o.has_type_ && has_id_ == o.has_id_ && job_ == o.job_ && replica_ == o.replica_ &&
         task_ == o.task_ && type_ == o.type_ && id_ == o.id_;
}

}  // namespace tw
