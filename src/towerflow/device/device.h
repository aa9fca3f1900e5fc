// Device: one place kernels run ("/job:localhost/replica:0/task:0/device:CPU:0"),
// with the allocator its tensors come from and the intra-op threads its heavy
// kernels may use. Devices are created by a Session's device set and live as long
// as it does. Thread-safe after construction.
#ifndef TOWERFLOW_DEVICE_DEVICE_H_
#define TOWERFLOW_DEVICE_DEVICE_H_

#include <memory>
#include <string>

#include "towerflow/core/allocator.h"
#include "towerflow/core/threadpool.h"

namespace tw {

inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

// The fully qualified local name of device `index` of `type`.
std::string LocalDeviceName(const std::string& type, int index);

class Device {
 public:
  // `intra_op_threads` <= 1 means heavy kernels run on the calling thread only.
  Device(std::string type, int index, Allocator* allocator, int intra_op_threads);
  virtual ~Device() = default;

  const std::string& name() const { return name_; }
  const std::string& device_type() const { return type_; }
  int index() const { return index_; }
  Allocator* allocator() const { return allocator_; }
  // nullptr when the device runs kernels single-threaded.
  ThreadPool* intra_op_pool() const { return pool_.get(); }
  int intra_op_threads() const { return pool_ ? pool_->NumThreads() + 1 : 1; }

 private:
  std::string type_;
  int index_;
  std::string name_;
  Allocator* allocator_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_DEVICE_H_
