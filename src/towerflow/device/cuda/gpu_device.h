// GpuDevice: one logical CUDA GPU as a towerflow device ("/device:GPU:k").
//
// Execution model. Each device has one compute stream: every GPU kernel of the
// device enqueues its work there and returns (Compute is asynchronous), and the
// executor counts a node as done once its work is enqueued. Because a consumer
// is only dispatched after its producer's Compute returned, and both enqueue on
// the same stream, the consumer's work runs after the producer's. Two more
// streams carry copies: host-to-device and device-to-host, each ordered against
// the compute stream with events, so a batch's copy to the GPU overlaps the
// previous kernels (its destination is allocated in its own stream's order). Only CopyToHost (fetches, CPU consumers) and Synchronize
// wait for the device.
//
// Memory comes from a GpuAllocator (gpu_allocator.h): stream-ordered blocks of
// the GPU's memory pool (cudaMallocAsync on the compute stream), within this
// logical device's limit. A tensor freed on the host while kernels that read it
// are still queued is released stream-ordered, so its memory is reused only by
// work queued after them.
//
// Libraries: a cuBLAS and a cuBLASLt handle bound to the compute stream (cuBLAS
// is thread-safe for calls on one handle and stream; the cuBLAS handle has one
// 32 MiB workspace of its own, set at creation); a cuDNN handle behind a
// mutex (cuDNN handles are not), lent with CudnnLease.
//
// Threads: every method that calls CUDA makes this device's ordinal current on
// the calling thread first; GPU kernels call Activate() before their first CUDA
// call, since executor threads serve every device. Logical GPUs of one physical
// GPU share its ordinal and pool, each with its own streams, handles and limit.
// Thread-safe.
#ifndef TOWERFLOW_DEVICE_CUDA_GPU_DEVICE_H_
#define TOWERFLOW_DEVICE_CUDA_GPU_DEVICE_H_

#include <memory>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <string>

#include "towerflow/device/cuda/cuda_status.h"
#include "towerflow/device/device.h"

namespace tw {

class GpuAllocator;
class PinnedStagingPool;

struct GpuDeviceConfig {
  int index = 0;            // towerflow's GPU index: /device:GPU:<index>
  int ordinal = 0;          // CUDA device ordinal (after CUDA_VISIBLE_DEVICES)
  int logical_index = 0;    // which logical GPU of the physical one (0 ..)
  int logical_count = 1;    // logical GPUs of this physical GPU
  size_t memory_limit = 0;  // bytes this device may hold at once
  int intra_op_threads = 1; // host threads for the host-side work of kernels
  bool allow_tf32 = false;  // float32 MatMul may use TF32 tensor cores
  bool cudnn_autotune = true;  // SessionOptions::cudnn_autotune
};

class GpuDevice final : public Device {
 public:
  // Creates the streams, events, handles and allocator. Errors name the call
  // and the ordinal (a driver without a GPU, a library that fails to start).
  static StatusOr<std::unique_ptr<GpuDevice>> Create(const GpuDeviceConfig& config);
  // Waits for queued work, then destroys handles, streams and events.
  ~GpuDevice() override;

  int ordinal() const { return config_.ordinal; }
  const GpuDeviceConfig& config() const { return config_; }
  bool allow_tf32() const { return config_.allow_tf32; }
  bool cudnn_autotune() const { return config_.cudnn_autotune; }
  // Whether the calling thread is recording this device's work (BeginCapture):
  // nothing that waits for the GPU may run then.
  bool capturing() const { return capturing_thread_.load() == std::this_thread::get_id(); }
  // Streaming multiprocessors of the GPU, for grid sizes.
  int sm_count() const { return sm_count_; }
  GpuAllocator* gpu_allocator() const { return gpu_allocator_; }

  // Makes this device's ordinal current on the calling thread (cudaSetDevice,
  // skipped when it already is).
  Status Activate() const;
  cudaStream_t stream() const { return compute_stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cublasLtHandle_t cublas_lt() const { return cublas_lt_; }

  // The cuDNN handle, locked for the lease's lifetime.
  class CudnnLease {
   public:
    cudnnHandle_t get() const { return handle_; }

   private:
    friend class GpuDevice;
    CudnnLease(cudnnHandle_t handle, std::mutex* mu) : handle_(handle), lock_(*mu) {}
    cudnnHandle_t handle_;
    std::unique_lock<std::mutex> lock_;
  };
  CudnnLease cudnn() const { return CudnnLease(cudnn_, &cudnn_mu_); }

  bool host_memory() const override { return false; }
  // Allocates `on_device` here, in the host-to-device stream's order, and
  // queues the copy on that stream, where it waits for no compute work (a
  // batch goes in while the step before it runs); the compute stream waits
  // for the copy before anything queued later. `host` may be freed on return.
  // InvalidArgument for string tensors (no GPU kernel takes them).
  Status CopyFromHost(const Tensor& host, Tensor* on_device) override;
  // Allocates `host` from the host allocator, queues the copy on the
  // device-to-host stream after the compute stream's work so far, and waits
  // for it: a kernel's asynchronous failure surfaces here as a Status.
  Status CopyToHost(const Tensor& on_device, Tensor* host) override;
  // Queues every copy on the device-to-host stream, then waits once.
  Status CopyToHostMany(const std::vector<Tensor>& on_device, std::vector<Tensor>* host) override;
  // Queues every copy on the device-to-host stream into one pinned block and
  // returns; the compute stream waits for the copies before anything queued
  // later. Wait() waits for them and fills `host` from the block. The copy
  // must not outlive the device.
  StatusOr<std::unique_ptr<PendingCopy>> StartCopyToHostMany(const std::vector<Tensor>& on_device,
                                                              std::vector<Tensor>* host) override;
  // Allocates `out` on `dst` (a GpuDevice; Unimplemented for another kind)
  // and queues the copy on dst's compute stream after the work queued so far
  // on this device's compute stream (which produced `on_device`); this
  // device's compute stream waits for the copy before anything queued later
  // (such as the stream-ordered free of `on_device`). Nothing waits for the
  // GPU. Logical GPUs of one physical GPU copy within its memory; physical
  // GPUs copy peer to peer (cudaMemcpyPeerAsync).
  Status CopyToPeer(const Tensor& on_device, Device* dst, Tensor* out) override;
  // Device-to-device copy of `bytes` on the compute stream (Assign, Identity).
  Status CopyOnDevice(const void* src, void* dst, size_t bytes) const override;
  // Stream capture of the compute stream into a CUDA graph (device.h). While
  // the calling thread captures, copies from other threads that would queue
  // on the compute stream wait for the capture to end, and the allocator's
  // frees are held (gpu_allocator.h). The capture mode is thread-local: a
  // call that would wait for the device fails the capture.
  bool CanCaptureWork() const override { return true; }
  Status BeginCapture() override;
  StatusOr<std::unique_ptr<CapturedWork>> EndCapture() override;
  // Held by a thread that queues work on the compute stream itself (a
  // library call such as ncclAllReduce, a copy) for as long as it queues:
  // that work never lands in another thread's capture (it waits for the
  // capture to end). Empty on the capturing thread.
  std::shared_lock<std::shared_mutex> CaptureExclusion() const;
  // Held while queueing work that makes one GPU's stream wait for another's:
  // CopyToPeer (each stream waits for the other), an NCCL launch over several
  // GPUs (train/collective_all_reduce_cuda.cc: each GPU's kernel waits for its
  // peers'). Two such launches never interleave, so their waits cannot form a
  // cycle between streams (an NCCL kernel queued behind a copy that waits for
  // the NCCL kernel on another GPU). Take it after any CaptureExclusion.
  static std::mutex& CrossStreamLaunchMutex();
  // Waits until all work queued so far on this device's streams has finished.
  Status Synchronize() const;
  // "device: 0, name: NVIDIA H200, pci bus id: 0000:19:00.0, compute capability: 9.0"
  // (plus ", logical 1 of 2" for a logical GPU).
  std::string physical_description() const override { return description_; }

 private:
  GpuDevice(const GpuDeviceConfig& config, std::unique_ptr<GpuAllocator> allocator);
  Status Init();
  // New host tensors for copies of `on_device` (CopyToHostMany and its
  // started form); InvalidArgument for string tensors.
  Status AllocateHostCopies(const std::vector<Tensor>& on_device, std::vector<Tensor>* host) const;

  GpuDeviceConfig config_;
  GpuAllocator* gpu_allocator_;  // owned by Device (the base class)
  std::string description_;
  int sm_count_ = 0;
  cudaStream_t compute_stream_ = nullptr;
  cudaStream_t h2d_stream_ = nullptr;
  cudaStream_t d2h_stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;  // set on cublas_ once, at creation
  cublasLtHandle_t cublas_lt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  mutable std::mutex cudnn_mu_;
  // Held exclusively by the capturing thread from BeginCapture to
  // EndCapture, shared by copies from other threads (CaptureExclusion).
  mutable std::shared_mutex capture_mu_;
  std::atomic<std::thread::id> capturing_thread_{};
  std::unique_lock<std::shared_mutex> capture_lock_;
  // Pinned blocks CopyFromHost copies through (pinned_staging.h says why).
  std::unique_ptr<PinnedStagingPool> staging_;
  // CopyFromHost's destinations: the GpuAllocator's blocks in the
  // host-to-device stream's order. Lives as long as the device (its tensors
  // name it).
  std::unique_ptr<Allocator> copy_in_allocator_;
};

}  // namespace tw

#endif  // TOWERFLOW_DEVICE_CUDA_GPU_DEVICE_H_
