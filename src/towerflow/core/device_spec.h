// DeviceSpec: a parsed, possibly partial device name, as TF's
// DeviceNameUtils::ParsedName and Python's DeviceSpec.
//
// Accepted forms (TF's C++ and Python parsers together):
//   "/job:localhost/replica:0/task:0/device:CPU:0"   the full form
//   "/device:GPU:1", "/device:CPU:*", "/job:ps"        partial specs, "*" = any
//   "/cpu:0", "/gpu:1", "/GPU:1", "gpu:1", "/gpu"       the legacy forms, which alone
//                                                       capitalize the type
// "/device:cpu:0" keeps its type "cpu", which no local device has (as in TF). A
// leading slash may be left out ("gpu:0", the seed's tf.device('gpu:%d' % i)).
// "" and "/" are the empty spec. Anything else, and a field given twice, is
// InvalidArgument "Malformed device specification '<s>': <why>".
//
// DeviceSpec lives in core/ (TF keeps it in core/util) because graph/'s Scope
// merges device scopes and graph/ may not depend on device/. A plain value;
// thread-compatible.
#ifndef TOWERFLOW_CORE_DEVICE_SPEC_H_
#define TOWERFLOW_CORE_DEVICE_SPEC_H_

#include <string>
#include <string_view>

#include "towerflow/core/status.h"

namespace tw {

class DeviceSpec {
 public:
  DeviceSpec() = default;  // matches every device

  static StatusOr<DeviceSpec> Parse(std::string_view name);
  // The spec of local device `index` of `type`: /job:localhost/replica:0/task:0/device:<type>:<index>.
  static DeviceSpec Local(const std::string& type, int index);

  bool has_job() const { return has_job_; }
  bool has_replica() const { return has_replica_; }
  bool has_task() const { return has_task_; }
  bool has_type() const { return has_type_; }
  bool has_id() const { return has_id_; }
  const std::string& job() const { return job_; }
  int replica() const { return replica_; }
  int task() const { return task_; }
  const std::string& type() const { return type_; }
  int id() const { return id_; }

  void set_job(std::string job) { job_ = std::move(job); has_job_ = true; }
  void set_replica(int r) { replica_ = r; has_replica_ = true; }
  void set_task(int t) { task_ = t; has_task_ = true; }
  void set_type(std::string type) { type_ = std::move(type); has_type_ = true; }
  void set_id(int id) { id_ = id; has_id_ = true; }
  void clear_type() { type_.clear(); has_type_ = false; }
  void clear_id() { id_ = 0; has_id_ = false; }

  // True when no field is set.
  bool empty() const { return !has_job_ && !has_replica_ && !has_task_ && !has_type_ && !has_id_; }
  // Every field set: names exactly one device.
  bool IsCompleteSpecification() const { return has_job_ && has_replica_ && has_task_ && has_type_ && has_id_; }
  // True when every field set here equals the field of `device` (TF's
  // IsSpecification(this, device)): "/device:GPU:*" matches every GPU.
  bool Matches(const DeviceSpec& device) const;
  // True when some device could match both (no set field differs).
  bool IsCompatibleWith(const DeviceSpec& other) const;

  // TF's MergeDevNames: fills the fields this spec lacks from `other`. A field
  // set in both with different values is InvalidArgument ("Cannot merge devices
  // with incompatible types: '/device:GPU:0' and '/device:CPU:0'") unless
  // `allow_soft_placement`, which clears the conflicting type and id (a
  // conflicting id alone clears the id) and returns OK. Unchanged on error.
  Status MergeFrom(const DeviceSpec& other, bool allow_soft_placement = false);
  // Python's DeviceSpec.merge_from, for nested device scopes: each field set in
  // `inner` replaces ours; the others stay (an inner partial spec fills from us).
  void OverrideWith(const DeviceSpec& inner);

  // The canonical form: set fields only, "*" for a type without id or an id
  // without type: "/job:localhost/replica:0/task:0/device:GPU:1",
  // "/device:CPU:*", "" for the empty spec.
  std::string ToString() const;
  // "/device:GPU:1" (type and id only), how logs and warnings name local devices.
  std::string ShortString() const;

  bool operator==(const DeviceSpec& o) const;
  bool operator!=(const DeviceSpec& o) const { return !(*this == o); }

 private:
  bool has_job_ = false, has_replica_ = false, has_task_ = false, has_type_ = false, has_id_ = false;
  std::string job_;
  int replica_ = 0;
  int task_ = 0;
  std::string type_;
  int id_ = 0;
};

}  // namespace tw

#endif  // TOWERFLOW_CORE_DEVICE_SPEC_H_
