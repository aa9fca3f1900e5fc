#include "towerflow/device/device_set.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace tw {
namespace {

struct FactoryEntry {
  std::string name;
  std::string device_type;
  int priority = 0;
  std::unique_ptr<DeviceFactory> factory;
};

class FactoryRegistry {
 public:
  static FactoryRegistry& Global() {
    static FactoryRegistry* registry = new FactoryRegistry();
    return *registry;
  }
  Status Add(FactoryEntry entry) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (const auto& e : entries_) {
      if (e.name == entry.name) return errors::AlreadyExists("device factory '", entry.name, "' is registered twice");
    }
    entries_.push_back(std::move(entry));
    return Status::OK();
  }
  int Priority(const std::string& type) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    int best = -1;
    for (const auto& e : entries_) {
      if (e.device_type == type) best = std::max(best, e.priority);
    }
    return best;
  }
  // CPU first (CPU:0 is the client device), then by decreasing priority.
  std::vector<const FactoryEntry*> Ordered() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<const FactoryEntry*> out;
    for (const auto& e : entries_) out.push_back(&e);
    std::stable_sort(out.begin(), out.end(), [](const FactoryEntry* a, const FactoryEntry* b) {
      const bool a_cpu = a->device_type == kDeviceCpu, b_cpu = b->device_type == kDeviceCpu;
      if (a_cpu != b_cpu) return a_cpu;
      if (a->priority != b->priority) return a->priority > b->priority;
      return a->name < b->name;
    });
    return out;
  }

 private:
  mutable std::shared_mutex mu_;
  std::deque<FactoryEntry> entries_;  // guarded by mu_; a deque keeps pointers stable
};

}  // namespace

Status DeviceFactory::Register(const std::string& name, const std::string& device_type, int priority,
                               std::unique_ptr<DeviceFactory> factory) {
  return FactoryRegistry::Global().Add(FactoryEntry{name, device_type, priority, std::move(factory)});
}

int DeviceFactory::DevicePriority(const std::string& device_type) {
  EnsureDeviceFactoriesRegistered();
  return FactoryRegistry::Global().Priority(device_type);
}

StatusOr<std::vector<int>> OpenedCudaGpus(const SessionOptions& options, int visible) {
  if (options.max_gpus < -1) {
    return errors::InvalidArgument("SessionOptions.max_gpus must be -1 (every visible GPU) or >= 0, got ",
                                   options.max_gpus);
  }
  std::vector<int> ordinals;
  // A machine without GPUs opens none, whatever the list (as a CPU-only
  // build does): a script that picks its rank's GPU runs on CPUs too.
  if (visible == 0) return ordinals;
  if (options.visible_gpus.empty()) {
    for (int i = 0; i < visible; ++i) ordinals.push_back(i);
  } else {
    for (size_t i = 0; i < options.visible_gpus.size(); ++i) {
      const int ordinal = options.visible_gpus[i];
      if (ordinal < 0 || ordinal >= visible) {
        return errors::InvalidArgument("SessionOptions.visible_gpus[", i, "] = ", ordinal, " is not a visible GPU: ",
                                       visible, " visible, 0..", visible - 1,
                                       " (after CUDA_VISIBLE_DEVICES)");
      }
      if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end()) {
        return errors::InvalidArgument("SessionOptions.visible_gpus lists GPU ", ordinal, " twice");
      }
      ordinals.push_back(ordinal);
    }
  }
  if (options.max_gpus >= 0 && static_cast<size_t>(options.max_gpus) < ordinals.size()) {
    ordinals.resize(static_cast<size_t>(options.max_gpus));
  }
  return ordinals;
}

#if !TOWERFLOW_HAVE_CUDA
int VisibleCudaGpuCount() { return 0; }
std::string CudaGpuPciBusId(int) { return ""; }
#endif

void EnsureDeviceFactoriesRegistered() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterCpuDeviceFactory().Check();
    // Real and fake GPUs never mix: the CUDA factory makes no GPU when fake
    // ones are asked for, and the fake GPU factory refuses where a CUDA GPU
    // is visible (its "GPU" kernels are then CUDA kernels). The order the two
    // run in (same priority, then by name: FAKE_GPU first) does not matter.
#if TOWERFLOW_HAVE_CUDA
    RegisterCudaDeviceFactory().Check();
#endif
    RegisterFakeGpuDeviceFactory().Check();
  });
}

StatusOr<std::unique_ptr<DeviceSet>> DeviceSet::Create(const SessionOptions& options) {
  EnsureDeviceFactoriesRegistered();
  if (options.num_cpu_devices < 1 || options.num_cpu_devices > kMaxCpuDevices) {
    return errors::InvalidArgument("SessionOptions.num_cpu_devices must be 1 to ", kMaxCpuDevices, ", got ",
                                   options.num_cpu_devices);
  }
  if (options.num_fake_gpus < 0) {
    return errors::InvalidArgument("SessionOptions.num_fake_gpus must be >= 0, got ", options.num_fake_gpus);
  }
  std::vector<std::unique_ptr<Device>> devices;
  for (const FactoryEntry* e : FactoryRegistry::Global().Ordered()) {
    TW_RETURN_IF_ERROR(e->factory->CreateDevices(options, &devices));
  }
  if (devices.empty() || devices.front()->device_type() != kDeviceCpu) {
    return errors::Internal("no CPU device was created (the CPU device factory is missing)");
  }
  return std::make_unique<DeviceSet>(std::move(devices));
}

DeviceSet::DeviceSet(std::vector<std::unique_ptr<Device>> devices) : devices_(std::move(devices)) {
  for (const auto& d : devices_) {
    if (!HasType(d->device_type())) {
      types_.push_back(d->device_type());
      priority_[d->device_type()] = DeviceFactory::DevicePriority(d->device_type());
    }
  }
  std::stable_sort(types_.begin(), types_.end(), [this](const std::string& a, const std::string& b) {
    return Priority(a) > Priority(b);
  });
}

Device* DeviceSet::FindByName(const std::string& full_name) const {
  for (const auto& d : devices_) {
    if (d->name() == full_name) return d.get();
  }
  return nullptr;
}

int DeviceSet::Priority(const std::string& type) const {
  auto it = priority_.find(type);
  return it == priority_.end() ? -1 : it->second;
}

bool DeviceSet::HasType(const std::string& type) const {
  return std::find(types_.begin(), types_.end(), type) != types_.end();
}

std::vector<Device*> DeviceSet::FindMatchingDevices(const DeviceSpec& spec) const {
  std::vector<Device*> out;
  for (const auto& d : devices_) {
    if (spec.Matches(d->spec())) out.push_back(d.get());
  }
  // TF's DeviceSort: type priority, then name; the index stands in for the name
  // so that GPU:2 sorts before GPU:10.
  std::stable_sort(out.begin(), out.end(), [this](const Device* a, const Device* b) {
    const int pa = Priority(a->device_type());
    const int pb = Priority(b->device_type());
    if (pa != pb) return pa > pb;
    if (a->device_type() != b->device_type()) return a->device_type() < b->device_type();
    return a->index() < b->index();
  });
  return out;
}

std::string DeviceSet::DescribeTypes() const {
  std::vector<std::string> types = types_;
  std::sort(types.begin(), types.end());
  std::string out = "[";
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + types[i];
  return out + "]";
}

std::string DeviceSet::DescribeDevices() const {
  std::vector<std::string> names;
  for (const auto& d : devices_) names.push_back(d->name());
  std::sort(names.begin(), names.end());
  std::string out = "[ ";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + " ]";
}

}  // namespace tw
