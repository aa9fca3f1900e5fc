#include "towerflow/device/resource_mgr.h"

#include <vector>

namespace tw {

void ResourceMgr::CloseAll() {
  std::vector<std::shared_ptr<ResourceBase>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& [name, r] : resources_) all.push_back(r);
  }
  for (auto& r : all) r->Close();
}

size_t ResourceMgr::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resources_.size();
}

}  // namespace tw
