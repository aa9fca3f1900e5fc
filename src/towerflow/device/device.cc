#include "towerflow/device/device.h"

#include <cstring>

#include "towerflow/core/tensor.h"

namespace tw {

std::string LocalDeviceName(const std::string& type, int index) {
  return "/job:localhost/replica:0/task:0/device:" + type + ":" + std::to_string(index);
}

Device::Device(std::string type, int index, Allocator* allocator, int intra_op_threads)
    : type_(std::move(type)),
      index_(index),
      name_(LocalDeviceName(type_, index)),
      spec_(DeviceSpec::Local(type_, index)),
      allocator_(allocator) {
  // The calling thread takes one shard of every ParallelFor, so a device with k
  // threads needs a pool of k - 1.
  if (intra_op_threads > 1) {
    pool_ = std::make_unique<ThreadPool>(type_ + std::to_string(index_) + "_intra", intra_op_threads - 1);
  }
}

Device::Device(std::string type, int index, std::unique_ptr<Allocator> allocator, int intra_op_threads)
    : Device(std::move(type), index, allocator.get(), intra_op_threads) {
  owned_allocator_ = std::move(allocator);
}

Status Device::CopyFromHost(const Tensor& host, Tensor* on_device) {
  return errors::Unimplemented("no host-to-device copy for ", name_, " (a ", type_,
                               " device without host memory needs its backend's copy)");
}

Status Device::CopyToHost(const Tensor& on_device, Tensor* host) {
  return errors::Unimplemented("no device-to-host copy for ", name_, " (a ", type_,
                               " device without host memory needs its backend's copy)");
}

Status Device::CopyToPeer(const Tensor& on_device, Device* dst, Tensor* out) {
  return errors::Unimplemented("no direct copy from ", name_, " to ", dst->name());
}

Status Device::CopyOnDevice(const void* src, void* dst, size_t bytes) const {
  if (!host_memory()) return errors::Unimplemented(name_, " has no copy within its memory");
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return Status::OK();
}

Status Device::BeginCapture() { return errors::Unimplemented(name_, " cannot capture its work"); }

StatusOr<std::unique_ptr<CapturedWork>> Device::EndCapture() {
  return errors::Unimplemented(name_, " cannot capture its work");
}

Status Device::CopyToHostMany(const std::vector<Tensor>& on_device, std::vector<Tensor>* host) {
  host->resize(on_device.size());
  for (size_t i = 0; i < on_device.size(); ++i) TW_RETURN_IF_ERROR(CopyToHost(on_device[i], &(*host)[i]));
  return Status::OK();
}

namespace {

// A copy that was done when it was started.
class FinishedCopy final : public PendingCopy {
 public:
  Status Wait() override { return Status::OK(); }
};

}  // namespace

StatusOr<std::unique_ptr<PendingCopy>> Device::StartCopyToHostMany(const std::vector<Tensor>& on_device,
                                                                    std::vector<Tensor>* host) {
  TW_RETURN_IF_ERROR(CopyToHostMany(on_device, host));
  return std::unique_ptr<PendingCopy>(std::make_unique<FinishedCopy>());
}

}  // namespace tw
