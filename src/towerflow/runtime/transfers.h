// Transfers: how a tensor moves between devices and memories, for the
// transfer items of a plan (partition.h) and for callers outside a step (a
// dataset's PrefetchToDevice).
//
// Copies between host-memory devices (CPU, fake GPU) are memcpys; a device
// without host memory (CUDA) supplies Device::CopyFromHost/CopyToHost, and
// Device::CopyToPeer between two such devices (GPU to GPU, queued on the
// streams without waiting for either GPU; through the host when it has none).
// Thread-safe.
#ifndef TOWERFLOW_RUNTIME_TRANSFERS_H_
#define TOWERFLOW_RUNTIME_TRANSFERS_H_

#include <memory>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/device/device.h"

namespace tw {

// Moves `src`, which lives on `src_device`, to `dst_device`. Between two CPU
// devices (virtual CPU devices share the host allocator and address space) the
// destination shares the source's buffer, as TF's in-process rendezvous does
// for host memory: no byte is copied, and kernels never write a shared input
// in place. Otherwise a new tensor is allocated by `dst_device`'s allocator and
// the bytes copied (also between other host-memory devices, such as the test
// fake GPUs, so that they own their bytes as a real device would).
// ResourceExhausted when the destination is out of memory; Unimplemented when a
// device without host memory has no copy.
Status CopyTensorBetweenDevices(const Tensor& src, Device* src_device, Device* dst_device, Tensor* dst);
// A transfer's values (partition.h) from `src_device` into `dst_device`: one
// value as CopyTensorBetweenDevices moves it, several (a step's fetches from
// one device) into host memory with one wait for the device
// (Device::CopyToHostMany). With `pending` (a copy into host memory), the
// copies are queued and not waited for (Device::StartCopyToHostMany): `copies`
// hold the values once *pending's Wait() has returned.
Status CopyValues(const std::vector<Tensor>& values, Device* src_device, Device* dst_device,
                  std::vector<Tensor>* copies, std::unique_ptr<PendingCopy>* pending = nullptr);
// A host tensor into a new tensor of `dst_device` (its allocator and a copy
// for host memory, Device::CopyFromHost otherwise): the host-to-device half of
// CopyTensorBetweenDevices, for callers without a source Device (a dataset's
// PrefetchToDevice).
Status CopyHostTensorToDevice(const Tensor& src, Device* dst_device, Tensor* dst);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_TRANSFERS_H_
