// Device: one place kernels run ("/job:localhost/replica:0/task:0/device:CPU:0"),
// with the allocator its tensors come from and the intra-op threads its heavy
// kernels may use. Devices are made by DeviceFactory implementations
// (device_set.h) into a Session's DeviceSet and live as long as it does.
// Thread-safe after construction.
#ifndef TOWERFLOW_DEVICE_DEVICE_H_
#define TOWERFLOW_DEVICE_DEVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "towerflow/core/allocator.h"
#include "towerflow/core/status.h"
#include "towerflow/core/device_spec.h"
#include "towerflow/core/threadpool.h"

namespace tw {

class Tensor;

inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

// The fully qualified local name of device `index` of `type`.
std::string LocalDeviceName(const std::string& type, int index);

// Work a device recorded between BeginCapture and EndCapture (a CUDA graph),
// replayed as recorded: the same kernels over the same buffers.
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  // Queues one replay on the device's stream (asynchronous, as kernels are).
  virtual Status Launch() = 0;
};

// Copies to the host that were queued and not waited for
// (Device::StartCopyToHostMany).
class PendingCopy {
 public:
  // Destroying a copy that was never waited for is safe: what it copies into
  // stays its own until the device has finished with it.
  virtual ~PendingCopy() = default;
  // Returns once the host tensors the copy was started with hold their
  // values, or the device's error (an earlier kernel's asynchronous failure
  // surfaces here). Call at most once.
  virtual Status Wait() = 0;
};

class Device {
 public:
  // `intra_op_threads` <= 1 means heavy kernels run on the calling thread only.
  // `allocator` must outlive the device.
  Device(std::string type, int index, Allocator* allocator, int intra_op_threads);
  // As above, the device owning its allocator (a fake GPU's own memory count).
  Device(std::string type, int index, std::unique_ptr<Allocator> allocator, int intra_op_threads);
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }
  // The parsed name; complete (every field set).
  const DeviceSpec& spec() const { return spec_; }
  // "/device:GPU:1": how logs and warnings name a local device.
  std::string short_name() const { return spec_.ShortString(); }
  const std::string& device_type() const { return type_; }
  int index() const { return index_; }
  Allocator* allocator() const { return allocator_; }
  // nullptr when the device runs kernels single-threaded.
  ThreadPool* intra_op_pool() const { return pool_.get(); }
  int intra_op_threads() const { return pool_ ? pool_->NumThreads() + 1 : 1; }

  // True when the host can read and write this device's tensors directly
  // (CPU, fake GPU): transfers between two such devices are memcpys. A device
  // with memory of its own (CUDA, [cuda]) returns false and overrides the copies.
  virtual bool host_memory() const { return true; }
  // For devices without host memory: copy between the host tensor `host` and a
  // new tensor on this device, and back. The defaults return Unimplemented.
  virtual Status CopyFromHost(const Tensor& host, Tensor* on_device);
  virtual Status CopyToHost(const Tensor& on_device, Tensor* host);
  // Copies every tensor of `on_device` to new host tensors, waiting for the
  // device once (a step's fetches). The default copies one by one.
  virtual Status CopyToHostMany(const std::vector<Tensor>& on_device, std::vector<Tensor>* host);
  // Like CopyToHostMany, but returns once the copies are queued behind the
  // device's work so far, without waiting for it: `host` gets new tensors
  // that hold the values once the returned copy's Wait() has returned (a
  // step's fetches, read one step late by a training loop that keeps its GPU
  // busy meanwhile). `on_device` may be released at once: work queued on the
  // device later never overwrites it before the copy has read it. The
  // default copies at once (CopyToHostMany) and returns a finished copy.
  virtual StatusOr<std::unique_ptr<PendingCopy>> StartCopyToHostMany(const std::vector<Tensor>& on_device,
                                                                      std::vector<Tensor>* host);
  // For devices without host memory: copies `on_device` into a new tensor in
  // `dst`'s memory without going through the host, when the backend can
  // (between GPUs). The default returns Unimplemented, and the caller copies
  // through the host.
  virtual Status CopyToPeer(const Tensor& on_device, Device* dst, Tensor* out);
  // A device-to-device copy of `bytes` in this device's stream order (after
  // the work queued so far, before the work queued later). The default, for
  // host memory, copies at once.
  virtual Status CopyOnDevice(const void* src, void* dst, size_t bytes) const;

  // Stream capture (runtime/step_graph.h). A device that can record the
  // work its kernels queue returns true: between BeginCapture and EndCapture
  // on one thread, its kernels' work is recorded, not run (nothing may wait
  // for the device meanwhile), and EndCapture returns it for replays. The
  // defaults: false, and Unimplemented.
  virtual bool CanCaptureWork() const { return false; }
  virtual Status BeginCapture();
  // Ends the capture begun on this thread; an error (a kernel did something
  // a capture cannot record) leaves the device as before BeginCapture.
  virtual StatusOr<std::unique_ptr<CapturedWork>> EndCapture();

  // One line for "Device mapping:" (TF prints the physical device, e.g.
  // "device: 0, name: Tesla K40c, pci bus id: 0000:05:00.0"); empty for host CPUs.
  virtual std::string physical_description() const { return ""; }

 private:
  std::string type_;
  int index_;
  std::string name_;
  DeviceSpec spec_;
  std::unique_ptr<Allocator> owned_allocator_;
  Allocator* allocator_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_DEVICE_H_
