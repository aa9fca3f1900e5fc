// ResourceMgr: the per-session table of stateful objects that outlive a step:
// variables now, queues and readers ([input]). Keyed by name (the creating node's
// shared name). Thread-safe; resources are shared_ptr-owned so a step holding one
// keeps it alive while the session closes.
#ifndef TOWERFLOW_DEVICE_RESOURCE_MGR_H_
#define TOWERFLOW_DEVICE_RESOURCE_MGR_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"

namespace tw {

class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  virtual std::string DebugString() const = 0;
  // Called once when the owning session closes: wake blocked waiters.
  virtual void Close() {}
};

// A variable's storage: VariableV2 outputs a reference to `tensor`, guarded by `mu`.
class Var final : public ResourceBase {
 public:
  std::mutex mu;
  Tensor tensor;  // guarded by mu; !IsInitialized() until first assigned
  std::string DebugString() const override { return "Var " + tensor.DebugString(); }
};

class ResourceMgr {
 public:
  // Returns the resource called `name`, creating it with `create` if absent.
  // InvalidArgument when a resource of another type has that name.
  // A resource created after CloseAll is closed before it is returned: a step
  // that passed the session's closed check just before Close must not create,
  // and then block on, a queue that Close never saw.
  template <typename T>
  StatusOr<std::shared_ptr<T>> LookupOrCreate(const std::string& name,
                                              const std::function<StatusOr<std::shared_ptr<T>>()>& create) {
    std::shared_ptr<T> created;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = resources_.find(name);
      if (it != resources_.end()) {
        auto typed = std::dynamic_pointer_cast<T>(it->second);
        if (!typed) {
          return errors::InvalidArgument("resource '", name, "' exists with another type: ",
                                         it->second->DebugString());
        }
        return typed;
      }
      TW_ASSIGN_OR_RETURN(created, create());
      resources_[name] = created;
      if (!closed_) return created;
    }
    created->Close();
    return created;
  }
  // Calls Close() on every resource, and on every one created later; used when
  // the session closes.
  void CloseAll();
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<ResourceBase>> resources_;  // guarded by mu_
  bool closed_ = false;                                              // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_RESOURCE_MGR_H_
