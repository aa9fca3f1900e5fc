// The fake GPU: a test-only device of type "GPU" backed by host memory, so that
// CPU-only CI exercises GPU placement, soft placement, partitioning and towers
// (SessionOptions::num_fake_gpus).
//
// Each fake GPU index has its own counting allocator, so a test sees the bytes
// that live "on the GPU" (one per index for the process's life: fetched tensors
// may outlive the session), and each device its own intra-op pool. Its kernels
// are the CPU kernel classes re-registered under device type "GPU" for a fixed
// list of common math, nn, state and training ops (FakeGpuKernelOps);
// everything else (Placeholder, string ops, DecodeRaw, queues, readers) has no
// fake-GPU kernel, which gives soft placement something to decide. On a machine
// with a CUDA GPU, fake GPUs are refused (the "GPU" kernels are CUDA kernels
// there). Thread-safe.
#ifndef TOWERFLOW_DEVICE_FAKE_FAKE_GPU_H_
#define TOWERFLOW_DEVICE_FAKE_FAKE_GPU_H_

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/device/kernel_registry.h"

namespace tw {

// How many times fake GPU `index` waited for itself in a copy to the host (a
// CopyToHost, one CopyToHostMany, or the Wait of one StartCopyToHostMany),
// over the process's life, in
// SessionOptions::fake_gpu_device_memory mode.
int64_t FakeGpuHostWaits(int index);

// The ops that get a fake-GPU kernel.
const std::vector<std::string>& FakeGpuKernelOps();

// For each op in `ops` that has CPU kernels and no "GPU" kernel yet, registers
// copies of its CPU KernelDefs under device type "GPU" (same classes, same
// dtypes). Idempotent and thread-safe; ops without CPU kernels (not registered
// yet) are skipped, so calling it again after more kernels register adds theirs.
// The fake GPU factory calls it with FakeGpuKernelOps() when it makes devices.
void RegisterFakeGpuKernels(KernelRegistry& registry, const std::vector<std::string>& ops);

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_FAKE_FAKE_GPU_H_
