// The CUDA device factory ("GPU", TF's GPU priority 210) and
// VisibleCudaGpuCount (device/device_set.h).
//
// Each physical GPU the session opens (SessionOptions::visible_gpus, else
// every GPU that CUDA_VISIBLE_DEVICES leaves visible; at most
// SessionOptions::max_gpus of them) becomes logical_gpus_per_gpu devices,
// numbered /device:GPU:0.. in that order, each with its own streams, handles
// and memory limit, all drawing on the GPU's default memory pool.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "towerflow/core/logging.h"
#include "towerflow/device/cuda/gpu_device.h"
#include "towerflow/device/device_set.h"

namespace tw {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Memory left outside the logical GPUs' limits for the CUDA libraries'
// own allocations, which do not come from our pool: each device's cuBLAS and
// cuBLASLt workspaces, cuDNN's handle and the workspaces its kernels ask for,
// NCCL's buffers, and the CUDA context itself.
size_t LibraryReserve(size_t total) { return std::max(size_t{512} * kMiB, total / 20); }

// Makes `ordinal` current and measures its memory, after giving back to the
// driver what the pool kept from devices of earlier sessions (a pool keeps
// freed blocks, and memory it keeps counts as used in cudaMemGetInfo).
Status MeasureGpu(int ordinal, size_t* free, size_t* total) {
  TW_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  cudaMemPool_t pool = nullptr;
  TW_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, ordinal));
  TW_CUDA_RETURN_IF_ERROR(cudaMemPoolTrimTo(pool, 0));
  TW_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(free, total));
  return Status::OK();
}

// The pool keeps freed blocks up to what this GPU's devices may hold at once
// (the default threshold, 0, would hand memory back to the driver at every
// synchronisation and make the next step allocate it again).
Status KeepFreedMemoryInPool(int ordinal, uint64_t threshold) {
  cudaMemPool_t pool = nullptr;
  TW_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, ordinal));
  TW_CUDA_RETURN_IF_ERROR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  return Status::OK();
}

// Lets every GPU that can reach another's memory read and write the blocks of
// its pool. A pool's blocks are visible to their own GPU only, whatever
// cudaDeviceEnablePeerAccess says; NCCL's communicators within one process
// (the towers' all-reduce, ncclCommInitAll) may read a peer's buffers
// directly, which would otherwise fault (as TF's and XLA's cudaMallocAsync
// allocators found). Best effort: a pair that cannot be joined keeps its
// copies through the driver, with a warning.
void ShareMemoryPoolsWithPeers(const std::vector<int>& ordinals) {
  for (const int owner : ordinals) {
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, owner) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    for (const int peer : ordinals) {
      int can = 0;
      if (peer == owner || cudaDeviceCanAccessPeer(&can, peer, owner) != cudaSuccess || !can) {
        (void)cudaGetLastError();
        continue;
      }
      cudaMemAccessDesc access{};
      access.location.type = cudaMemLocationTypeDevice;
      access.location.id = peer;
      access.flags = cudaMemAccessFlagsProtReadWrite;
      if (const cudaError_t err = cudaMemPoolSetAccess(pool, &access, 1); err != cudaSuccess) {
        (void)cudaGetLastError();
        TW_LOG(WARNING) << "CUDA device " << peer << " cannot access the memory pool of CUDA device " << owner
                        << ": cudaMemPoolSetAccess: " << cudaGetErrorName(err);
      }
    }
  }
}

class CudaDeviceFactory final : public DeviceFactory {
 public:
  Status CreateDevices(const SessionOptions& options, std::vector<std::unique_ptr<Device>>* devices) override {
    const int k = options.logical_gpus_per_gpu;
    if (k < 1) return errors::InvalidArgument("SessionOptions.logical_gpus_per_gpu must be at least 1, got ", k);
    if (options.gpu_memory_limit_mb < 0) {
      return errors::InvalidArgument("SessionOptions.gpu_memory_limit_mb must be >= 0 (0: an even share of the "
                                     "free memory), got ",
                                     options.gpu_memory_limit_mb);
    }
    // Fake GPUs replace real ones; the fake GPU factory refuses them where a
    // GPU is visible (device/fake/fake_gpu.cc), since the "GPU" kernels are
    // then CUDA kernels.
    if (options.num_fake_gpus > 0) return Status::OK();
    TW_ASSIGN_OR_RETURN(const std::vector<int> ordinals, OpenedCudaGpus(options, VisibleCudaGpuCount()));
    for (size_t position = 0; position < ordinals.size(); ++position) {
      const int ordinal = ordinals[position];
      size_t free = 0, total = 0;
      Status s = MeasureGpu(ordinal, &free, &total);
      if (!s.ok()) return s.WithContext(StrCat("measuring the memory of CUDA device ", ordinal));
      size_t limit = 0;
      if (options.gpu_memory_limit_mb > 0) {
        const uint64_t mb = static_cast<uint64_t>(options.gpu_memory_limit_mb);
        // k * mb MiB > total, without overflow: mb MiB > floor(total / k).
        if (mb > total / kMiB || mb * kMiB > total / static_cast<size_t>(k)) {
          return errors::InvalidArgument("SessionOptions.gpu_memory_limit_mb = ", options.gpu_memory_limit_mb,
                                         " MiB for each of ", k, " logical GPUs exceeds the ", total / kMiB,
                                         " MiB of CUDA device ", ordinal);
        }
        limit = mb * kMiB;
      } else {
        const size_t reserve = LibraryReserve(total);
        limit = (free > reserve ? free - reserve : 0) / static_cast<size_t>(k);
        if (limit == 0) {
          TW_LOG(WARNING) << "CUDA device " << ordinal << " has " << free / kMiB << " MiB free of " << total / kMiB
                          << " MiB, less than the " << reserve / kMiB
                          << " MiB kept for CUDA libraries: its GPUs can allocate nothing "
                             "(set SessionOptions.gpu_memory_limit_mb)";
        }
      }
      s = KeepFreedMemoryInPool(ordinal, static_cast<uint64_t>(limit) * static_cast<uint64_t>(k));
      if (!s.ok()) return s.WithContext(StrCat("configuring the memory pool of CUDA device ", ordinal));
      for (int j = 0; j < k; ++j) {
        GpuDeviceConfig config;
        config.index = static_cast<int>(position) * k + j;
        config.ordinal = ordinal;
        config.logical_index = j;
        config.logical_count = k;
        config.memory_limit = limit;
        // GPU kernels only queue work: the host side of a kernel is small.
        config.intra_op_threads = 1;
        config.allow_tf32 = options.allow_tf32;
        config.cudnn_autotune = options.cudnn_autotune;
        TW_ASSIGN_OR_RETURN(std::unique_ptr<GpuDevice> device, GpuDevice::Create(config));
        devices->push_back(std::move(device));
      }
    }
    ShareMemoryPoolsWithPeers(ordinals);
    return Status::OK();
  }
};

}  // namespace

int VisibleCudaGpuCount() {
  static const int count = [] {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      // No driver, no GPU, or a driver older than the runtime: no CUDA GPUs.
      (void)cudaGetLastError();
      TW_LOG(INFO) << "no CUDA GPUs: cudaGetDeviceCount: " << cudaGetErrorName(err) << ": "
                   << cudaGetErrorString(err);
      return 0;
    }
    return std::max(n, 0);
  }();
  return count;
}

std::string CudaGpuPciBusId(int ordinal) {
  if (ordinal < 0 || ordinal >= VisibleCudaGpuCount()) return "";
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof(id), ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return id;
}

Status RegisterCudaDeviceFactory() {
  return DeviceFactory::Register("GPU", kDeviceGpu, 210, std::make_unique<CudaDeviceFactory>());
}

}  // namespace tw
