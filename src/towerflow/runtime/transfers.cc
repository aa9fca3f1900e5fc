#include "towerflow/runtime/transfers.h"

#include <cstring>

namespace tw {

Status CopyTensorBetweenDevices(const Tensor& src, Device* src_device, Device* dst_device, Tensor* dst) {
  if (src_device->device_type() == kDeviceCpu && dst_device->device_type() == kDeviceCpu && src_device->host_memory() &&
      dst_device->host_memory()) {
    *dst = src;
    return Status::OK();
  }
  if (src_device->host_memory()) return CopyHostTensorToDevice(src, dst_device, dst);
  if (dst_device->host_memory()) return src_device->CopyToHost(src, dst);
  // Device to device: directly when the backend can (GPU to GPU), else through the host.
  Status direct = src_device->CopyToPeer(src, dst_device, dst);
  if (direct.code() != Code::kUnimplemented) return direct;
  Tensor host;
  TW_RETURN_IF_ERROR(src_device->CopyToHost(src, &host));
  return dst_device->CopyFromHost(host, dst);
}

Status CopyValues(const std::vector<Tensor>& values, Device* src_device, Device* dst_device,
                  std::vector<Tensor>* copies, std::unique_ptr<PendingCopy>* pending) {
  if (pending != nullptr) {
    TW_ASSIGN_OR_RETURN(*pending, src_device->StartCopyToHostMany(values, copies));
    return Status::OK();
  }
  if (values.size() != 1) return src_device->CopyToHostMany(values, copies);
  copies->resize(1);
  return CopyTensorBetweenDevices(values[0], src_device, dst_device, &(*copies)[0]);
}

Status CopyHostTensorToDevice(const Tensor& src, Device* dst_device, Tensor* dst) {
  if (!dst_device->host_memory()) return dst_device->CopyFromHost(src, dst);
  StatusOr<Tensor> t = Tensor::Allocate(dst_device->allocator(), src.dtype(), src.shape());
  if (!t.ok()) return t.status().WithContext("copying to " + dst_device->name());
  if (src.dtype() == kString) {
    auto from = src.flat<std::string>();
    auto to = t->flat<std::string>();
    for (size_t i = 0; i < from.size(); ++i) to[i] = from[i];
  } else if (src.TotalBytes() > 0) {
    std::memcpy(t->raw_data(), src.raw_data(), src.TotalBytes());
  }
  *dst = std::move(t).value();
  return Status::OK();
}

}  // namespace tw
