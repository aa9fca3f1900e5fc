// The CPU device factory: num_cpu_devices virtual CPU devices over the host
// allocator, each with its own intra-op pool of an equal share of the host's
// threads (TF's ThreadPoolDeviceFactory with device_count {"CPU": N}), so that
// towers on /cpu:0 and /cpu:1 compute side by side without sharing a pool.
#include <algorithm>
#include <thread>

#include "towerflow/device/device_set.h"

namespace tw {
namespace {

class CpuDeviceFactory final : public DeviceFactory {
 public:
  Status CreateDevices(const SessionOptions& options, std::vector<std::unique_ptr<Device>>* devices) override {
    const int total = options.intra_op_threads > 0
                          ? options.intra_op_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int per_device = std::max(1, total / options.num_cpu_devices);
    for (int i = 0; i < options.num_cpu_devices; ++i) {
      devices->push_back(std::make_unique<Device>(kDeviceCpu, i, CpuAllocator(), per_device));
    }
    return Status::OK();
  }
};

}  // namespace

Status RegisterCpuDeviceFactory() {
  // TF: REGISTER_LOCAL_DEVICE_FACTORY("CPU", ThreadPoolDeviceFactory, 60).
  return DeviceFactory::Register("CPU", kDeviceCpu, 60, std::make_unique<CpuDeviceFactory>());
}

}  // namespace tw
