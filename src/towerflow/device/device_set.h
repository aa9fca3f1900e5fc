// DeviceSet: the devices one Session runs on, and DeviceFactory, the registry
// of the backends that make them.
//
// A DeviceFactory makes the devices of one backend from SessionOptions: "CPU"
// (device/cpu/, N virtual CPU devices sharing the host's threads), "FAKE_GPU"
// (device/fake/, test-only GPUs backed by host memory) and, when built, the CUDA
// backend ([cuda], device/cuda/: GPUs that CUDA_VISIBLE_DEVICES leaves visible,
// renumbered from 0; it registers itself next to the others in
// EnsureDeviceFactoriesRegistered). Each factory carries its device type's
// priority, as TF's REGISTER_LOCAL_DEVICE_FACTORY does: GPU 210, CPU 60; the
// placer prefers higher priorities for unconstrained ops.
//
// A DeviceSet owns its devices, in creation order (CPU:0 first: the client
// device that feeds and fetches live on). The registry is thread-safe; a
// DeviceSet is immutable once created and thread-safe to read.
#ifndef TOWERFLOW_DEVICE_DEVICE_SET_H_
#define TOWERFLOW_DEVICE_DEVICE_SET_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "towerflow/device/device.h"
#include "towerflow/core/session_options.h"

namespace tw {


class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  // Appends this backend's devices (possibly none) to `devices`, which holds the
  // devices of the factories that ran before. InvalidArgument for bad options.
  virtual Status CreateDevices(const SessionOptions& options, std::vector<std::unique_ptr<Device>>* devices) = 0;

  // Registers `factory` under `name` ("CPU", "FAKE_GPU", "GPU") for devices of
  // `device_type` with `priority`. AlreadyExists when the name is taken.
  static Status Register(const std::string& name, const std::string& device_type, int priority,
                         std::unique_ptr<DeviceFactory> factory);
  // The priority of a device type: the highest of its factories; -1 if none.
  static int DevicePriority(const std::string& device_type);
};

// Registers the built-in factories (CPU, fake GPU, and CUDA when built) once.
// Thread-safe; DeviceSet::Create calls it.
void EnsureDeviceFactoriesRegistered();
// One per backend; each lives in its backend folder.
Status RegisterCpuDeviceFactory();
Status RegisterFakeGpuDeviceFactory();
// device/cuda/gpu_device_factory.cc; only in builds with TOWERFLOW_CUDA.
Status RegisterCudaDeviceFactory();
// How many GPUs the CUDA backend sees (after CUDA_VISIBLE_DEVICES): 0 in a
// build without it, without a driver, or without a GPU. Never fails; cached.
int VisibleCudaGpuCount();
// The PCI bus id of visible CUDA GPU `ordinal` ("0000:3b:00.0"), which names
// the physical GPU whatever CUDA_VISIBLE_DEVICES renumbered; empty where there
// is no such GPU (or no CUDA backend).
std::string CudaGpuPciBusId(int ordinal);
// The ordinals of the physical GPUs the CUDA backend opens, in device order,
// when `visible` GPUs are visible: options.visible_gpus, else 0..visible-1,
// cut to options.max_gpus when that is >= 0; none when no GPU is visible.
// InvalidArgument naming the entry for an ordinal that is not visible or is
// listed twice, or a max_gpus < -1.
StatusOr<std::vector<int>> OpenedCudaGpus(const SessionOptions& options, int visible);

class DeviceSet {
 public:
  // Runs every registered factory, CPU first, then the others by decreasing
  // priority. InvalidArgument naming the option for bad options (fewer than one
  // CPU device, a negative GPU count).
  static StatusOr<std::unique_ptr<DeviceSet>> Create(const SessionOptions& options);
  // A set of the given devices (tests).
  explicit DeviceSet(std::vector<std::unique_ptr<Device>> devices);

  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }
  int num_devices() const { return static_cast<int>(devices_.size()); }
  // The client device: CPU:0 (the first device).
  Device* client_device() const { return devices_.front().get(); }
  // nullptr when absent.
  Device* FindByName(const std::string& full_name) const;
  // Devices that `spec` matches, ordered as the placer prefers them: by type
  // priority (GPU before CPU), then by index.
  std::vector<Device*> FindMatchingDevices(const DeviceSpec& spec) const;
  // The device types present, by priority: {"GPU", "CPU"}.
  const std::vector<std::string>& device_types() const { return types_; }
  bool HasType(const std::string& type) const;
  // The priority of a present device type (DeviceFactory::DevicePriority); -1 if absent.
  int Priority(const std::string& type) const;
  // "[CPU, GPU]": the types for "Registered devices:" in errors (sorted by name, as TF).
  std::string DescribeTypes() const;
  // "[ /job:localhost/replica:0/task:0/device:CPU:0, ... ]", sorted by name.
  std::string DescribeDevices() const;

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::string> types_;
  std::map<std::string, int> priority_;  // per type in types_
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_DEVICE_SET_H_
