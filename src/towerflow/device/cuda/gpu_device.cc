// GpuDevice (gpu_device.h): the streams, library handles and host copies of
// one logical GPU.
//
// Ordering between streams uses events made for one use and destroyed at once
// (WaitForStream): cudaStreamWaitEvent captures the event's pending record when
// it is called, and cudaEventDestroy on a recorded event that has not completed
// is legal (its resources go when the device completes it). A per-use event
// needs no lock between the threads that copy at once; creating one costs
// about a microsecond, small against the copy it orders.
#include "towerflow/device/cuda/gpu_device.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "towerflow/core/logging.h"
#include "towerflow/core/tensor.h"
#include "towerflow/device/cuda/gpu_allocator.h"
#include "towerflow/device/cuda/pinned_staging.h"

namespace tw {
namespace {

// The cuBLAS handle's workspace (NVIDIA's recommendation for Hopper: 32 MiB).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// Idle pinned staging memory a device keeps for its next host-to-device copies.
constexpr size_t kMaxIdleStagingBytes = size_t{256} << 20;

// The GpuAllocator's blocks, allocated in another stream's order (a copy's
// destination, GpuAllocator::AllocateOn) and freed as the GpuAllocator frees.
class StreamOrderedAllocator final : public Allocator {
 public:
  StreamOrderedAllocator(GpuAllocator* gpu, cudaStream_t stream) : gpu_(gpu), stream_(stream) {}
  std::string Name() const override { return gpu_->Name(); }
  void* Allocate(size_t bytes) override { return gpu_->AllocateOn(bytes, stream_); }
  void Deallocate(void* ptr, size_t bytes) override { gpu_->Deallocate(ptr, bytes); }
  size_t BytesInUse() const override { return gpu_->BytesInUse(); }

 private:
  GpuAllocator* gpu_;
  cudaStream_t stream_;
};

// Makes `waiter` run what is queued on it later only after the work queued on
// `producer` so far.
Status WaitForStream(cudaStream_t waiter, cudaStream_t producer) {
  cudaEvent_t event = nullptr;
  TW_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  Status s = [&]() -> Status {
    TW_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, producer));
    TW_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(waiter, event, 0));
    return Status::OK();
  }();
  Status destroyed = CudaStatus(cudaEventDestroy(event), "cudaEventDestroy(event)", __FILE__, __LINE__);
  return s.ok() ? destroyed : s;
}

// As WaitForStream, for streams of two devices: an event must be created and
// recorded on its stream's device, `producer_ordinal`; a stream of any device
// may wait for it.
Status WaitForStreamOf(cudaStream_t waiter, cudaStream_t producer, int producer_ordinal) {
  TW_CUDA_RETURN_IF_ERROR(cudaSetDevice(producer_ordinal));
  return WaitForStream(waiter, producer);
}

}  // namespace

GpuDevice::GpuDevice(const GpuDeviceConfig& config, std::unique_ptr<GpuAllocator> allocator)
    : Device(kDeviceGpu, config.index, std::unique_ptr<Allocator>(std::move(allocator)), config.intra_op_threads),
      config_(config),
      gpu_allocator_(static_cast<GpuAllocator*>(this->allocator())) {}

StatusOr<std::unique_ptr<GpuDevice>> GpuDevice::Create(const GpuDeviceConfig& config) {
  auto allocator = std::make_unique<GpuAllocator>(StrCat("GPU:", config.index), config.ordinal, config.memory_limit);
  std::unique_ptr<GpuDevice> device(new GpuDevice(config, std::move(allocator)));
  Status s = device->Init();
  if (!s.ok()) {
    // The destructor releases what Init made before it failed.
    return s.WithContext(StrCat("creating ", device->short_name(), " on CUDA device ", config.ordinal));
  }
  return StatusOr<std::unique_ptr<GpuDevice>>(std::move(device));
}

Status GpuDevice::Init() {
  TW_RETURN_IF_ERROR(Activate());
  cudaDeviceProp prop;
  std::memset(&prop, 0, sizeof(prop));
  TW_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, config_.ordinal));
  sm_count_ = prop.multiProcessorCount;
  char pci[32];
  std::snprintf(pci, sizeof(pci), "%04x:%02x:%02x.0", static_cast<unsigned>(prop.pciDomainID),
                static_cast<unsigned>(prop.pciBusID), static_cast<unsigned>(prop.pciDeviceID));
  prop.name[sizeof(prop.name) - 1] = '\0';
  description_ = StrCat("device: ", config_.ordinal, ", name: ", static_cast<const char*>(prop.name),
                        ", pci bus id: ", pci, ", compute capability: ", prop.major, ".", prop.minor);
  if (config_.logical_count > 1) {
    description_ += StrCat(", logical ", config_.logical_index + 1, " of ", config_.logical_count);
  }

  // Non-blocking streams do not synchronise with the legacy default stream
  // (stream 0), which a library or a user's code may use.
  TW_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&compute_stream_, cudaStreamNonBlocking));
  TW_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&h2d_stream_, cudaStreamNonBlocking));
  TW_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&d2h_stream_, cudaStreamNonBlocking));
  gpu_allocator_->set_stream(compute_stream_);
  copy_in_allocator_ = std::make_unique<StreamOrderedAllocator>(gpu_allocator_, h2d_stream_);

  TW_CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
  TW_CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, compute_stream_));
  // One workspace for the handle's GEMMs, set once (after cublasSetStream,
  // which resets it): they all run on the compute stream, one after another.
  // Without it cuBLAS 12.2+ takes its workspace with cudaMallocAsync per call,
  // which a CUDA graph's capture records as memory nodes outside the
  // device's pool and limit. cudaMalloc memory is 256-byte aligned.
  TW_CUDA_RETURN_IF_ERROR(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
  TW_CUBLAS_RETURN_IF_ERROR(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
  // CUBLAS_DEFAULT_MATH computes float32 with at least float32's mantissa and
  // exponent (no TF32): results match the CPU twin to float32 rounding.
  // CUBLAS_TF32_TENSOR_OP_MATH lets single-precision routines round inputs to
  // TF32 (10-bit mantissa) on tensor cores. CUBLAS_PEDANTIC_MATH would also
  // forbid reduced-precision reductions and fast paths for every type, a mode
  // for numerical studies, not for training.
  TW_CUBLAS_RETURN_IF_ERROR(
      cublasSetMathMode(cublas_, config_.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  TW_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&cublas_lt_));
  TW_CUDNN_RETURN_IF_ERROR(cudnnCreate(&cudnn_));
  TW_CUDNN_RETURN_IF_ERROR(cudnnSetStream(cudnn_, compute_stream_));
  staging_ = std::make_unique<PinnedStagingPool>(kMaxIdleStagingBytes);
  return Status::OK();
}

GpuDevice::~GpuDevice() {
  auto log = [this](const Status& s) {
    if (!s.ok()) TW_LOG(ERROR) << "destroying " << short_name() << ": " << s.ToString();
  };
  log(Activate());
  for (cudaStream_t stream : {compute_stream_, h2d_stream_, d2h_stream_}) {
    if (stream != nullptr) log(CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize(stream)", __FILE__, __LINE__));
  }
  staging_.reset();  // no queued copy reads a block any more
  if (cudnn_ != nullptr) log(CudnnStatus(cudnnDestroy(cudnn_), "cudnnDestroy(cudnn_)", __FILE__, __LINE__));
  if (cublas_lt_ != nullptr) {
    log(CublasStatus(cublasLtDestroy(cublas_lt_), "cublasLtDestroy(cublas_lt_)", __FILE__, __LINE__));
  }
  if (cublas_ != nullptr) log(CublasStatus(cublasDestroy(cublas_), "cublasDestroy(cublas_)", __FILE__, __LINE__));
  if (cublas_workspace_ != nullptr) log(CudaStatus(cudaFree(cublas_workspace_), "cudaFree(cuBLAS workspace)", __FILE__, __LINE__));
  for (cudaStream_t stream : {compute_stream_, h2d_stream_, d2h_stream_}) {
    if (stream != nullptr) log(CudaStatus(cudaStreamDestroy(stream), "cudaStreamDestroy(stream)", __FILE__, __LINE__));
  }
  // A tensor that outlives its device (a programming error) is freed on the
  // legacy default stream instead of a destroyed one.
  gpu_allocator_->set_stream(nullptr);
}

Status GpuDevice::Activate() const {
  // cudaGetDevice reads the runtime's per-thread state; cudaSetDevice may call
  // into the driver. Executor threads mostly stay on one GPU, so most kernels
  // pay the first only. (Not a cache of our own: another library on this
  // thread, such as PyTorch in the same Python program, may change the device.)
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == config_.ordinal) return Status::OK();
  TW_CUDA_RETURN_IF_ERROR(cudaSetDevice(config_.ordinal));
  return Status::OK();
}

Status GpuDevice::CopyFromHost(const Tensor& host, Tensor* on_device) {
  if (host.dtype() == kString) {
    return errors::InvalidArgument("cannot copy string", host.shape().ToString(), " to ", name(),
                                   ": no GPU kernel takes string tensors (keep string ops on the CPU)");
  }
  auto exclusion = CaptureExclusion();
  TW_RETURN_IF_ERROR(Activate());
  // The destination is allocated in the host-to-device stream's order, so
  // the copy waits for no work of the compute stream: the next batch goes in
  // while the GPU still runs the step before it.
  StatusOr<Tensor> t = Tensor::Allocate(copy_in_allocator_.get(), host.dtype(), host.shape());
  if (!t.ok()) return t.status().WithContext("copying to " + name());
  const size_t bytes = host.TotalBytes();
  Status s;
  bool queued = false;
  if (bytes > 0) {
    // Through a pinned block (pinned_staging.h): `host` has been read when
    // this returns, so the caller may free or overwrite it.
    StatusOr<PinnedStagingPool::Block*> staged = staging_->Acquire(bytes);
    s = staged.status().WithContext(StrCat("pinning ", bytes, " bytes to copy to ", name()));
    if (s.ok()) {
      PinnedStagingPool::Block* block = staged.value();
      std::memcpy(block->data, host.raw_data(), bytes);
      s = CudaStatus(cudaMemcpyAsync(t->raw_data(), block->data, bytes, cudaMemcpyHostToDevice, h2d_stream_),
                     "cudaMemcpyAsync(HostToDevice)", __FILE__, __LINE__);
      queued = s.ok();
      Status released = staging_->Release(block, queued ? h2d_stream_ : nullptr);
      if (s.ok()) s = released;
    }
  }
  // Work queued on the compute stream from now on (consumers, and the
  // stream-ordered free of the tensor) runs after the copy, and after the
  // block's allocation on the host-to-device stream (with nothing to copy too).
  if (s.ok()) s = WaitForStream(compute_stream_, h2d_stream_);
  if (!s.ok()) {
    // The tensor's memory is freed on the compute stream when `t` goes,
    // unordered with the host-to-device stream: let what is queued there
    // (its allocation, a poison fill, a copy) finish first.
    (void)cudaStreamSynchronize(h2d_stream_);
    (void)cudaGetLastError();
    return s.WithContext(StrCat("copying ", DataTypeName(host.dtype()), host.shape().ToString(), " to ", name()));
  }
  *on_device = std::move(t).value();
  return Status::OK();
}

Status GpuDevice::CopyToHost(const Tensor& on_device, Tensor* host) {
  if (on_device.dtype() == kString) {
    return errors::InvalidArgument("cannot copy string", on_device.shape().ToString(), " from ", name(),
                                   ": no GPU kernel makes string tensors");
  }
  auto exclusion = CaptureExclusion();
  TW_RETURN_IF_ERROR(Activate());
  StatusOr<Tensor> t = Tensor::Allocate(CpuAllocator(), on_device.dtype(), on_device.shape());
  if (!t.ok()) return t.status().WithContext("copying from " + name() + " to the host");
  const size_t bytes = on_device.TotalBytes();
  if (bytes > 0) {
    Status s = WaitForStream(d2h_stream_, compute_stream_);
    if (s.ok()) {
      s = CudaStatus(cudaMemcpyAsync(t->raw_data(), on_device.raw_data(), bytes, cudaMemcpyDeviceToHost, d2h_stream_),
                     "cudaMemcpyAsync(DeviceToHost)", __FILE__, __LINE__);
    }
    if (s.ok()) s = CudaStatus(cudaStreamSynchronize(d2h_stream_), "cudaStreamSynchronize(d2h)", __FILE__, __LINE__);
    if (!s.ok()) {
      // Kernels run asynchronously: a kernel's failure (an illegal address, a
      // launch that ran out of resources) is reported by the next call that
      // waits for the device, which is often this one.
      return s.WithContext(StrCat("copying ", DataTypeName(on_device.dtype()), on_device.shape().ToString(), " from ",
                                  name(), " to the host (the error may come from an earlier kernel queued on ",
                                  short_name(), ")"));
    }
  }
  *host = std::move(t).value();
  return Status::OK();
}

Status GpuDevice::AllocateHostCopies(const std::vector<Tensor>& on_device, std::vector<Tensor>* host) const {
  host->clear();
  for (const Tensor& t : on_device) {
    if (t.dtype() == kString) {
      return errors::InvalidArgument("cannot copy string", t.shape().ToString(), " from ", name(),
                                     ": no GPU kernel makes string tensors");
    }
    StatusOr<Tensor> h = Tensor::Allocate(CpuAllocator(), t.dtype(), t.shape());
    if (!h.ok()) return h.status().WithContext("copying from " + name() + " to the host");
    host->push_back(std::move(h).value());
  }
  return Status::OK();
}

Status GpuDevice::CopyToHostMany(const std::vector<Tensor>& on_device, std::vector<Tensor>* host) {
  auto exclusion = CaptureExclusion();
  TW_RETURN_IF_ERROR(Activate());
  TW_RETURN_IF_ERROR(AllocateHostCopies(on_device, host));
  // Every copy queued after the compute stream's work so far, then one wait.
  Status s = WaitForStream(d2h_stream_, compute_stream_);
  for (size_t i = 0; i < on_device.size() && s.ok(); ++i) {
    const size_t bytes = on_device[i].TotalBytes();
    if (bytes == 0) continue;
    s = CudaStatus(cudaMemcpyAsync((*host)[i].raw_data(), on_device[i].raw_data(), bytes, cudaMemcpyDeviceToHost,
                                   d2h_stream_),
                   "cudaMemcpyAsync(DeviceToHost)", __FILE__, __LINE__);
  }
  // Even after a failed queue: nothing may still write into `host` on return.
  Status synced = CudaStatus(cudaStreamSynchronize(d2h_stream_), "cudaStreamSynchronize(d2h)", __FILE__, __LINE__);
  if (s.ok()) s = synced;
  if (!s.ok()) {
    return s.WithContext(StrCat("copying ", on_device.size(), " tensors from ", name(),
                                " to the host (the error may come from an earlier kernel queued on ", short_name(), ")"));
  }
  return Status::OK();
}

namespace {

// A step's fetches copied out of a GPU into one pinned block
// (GpuDevice::StartCopyToHostMany): Wait waits for the copies' event, then
// moves the values from the block into the host tensors.
class GpuPendingCopy final : public PendingCopy {
 public:
  GpuPendingCopy(const GpuDevice* device, PinnedStagingPool* staging, PinnedStagingPool::Block* block,
                 cudaEvent_t copied, cudaStream_t stream, std::vector<Tensor> host, std::vector<size_t> offsets)
      : device_(device), staging_(staging), block_(block), copied_(copied), stream_(stream), host_(std::move(host)),
        offsets_(std::move(offsets)) {}
  ~GpuPendingCopy() override {
    if (block_ == nullptr) return;
    // Never waited for: the block stays busy until the copies into it end.
    if (Status s = device_->Activate(); !s.ok()) TW_LOG(ERROR) << s.ToString();
    if (Status s = staging_->Release(block_, stream_); !s.ok()) TW_LOG(ERROR) << "pinned staging: " << s.ToString();
    (void)cudaEventDestroy(copied_);
  }

  Status Wait() override {
    if (block_ == nullptr) return errors::FailedPrecondition("a copy from ", device_->name(), " was waited for twice");
    TW_RETURN_IF_ERROR(device_->Activate());
    Status s = CudaStatus(cudaEventSynchronize(copied_), "cudaEventSynchronize(fetches copied)", __FILE__, __LINE__);
    if (s.ok()) {
      for (size_t i = 0; i < host_.size(); ++i) {
        const size_t bytes = host_[i].TotalBytes();
        if (bytes > 0) std::memcpy(host_[i].raw_data(), static_cast<const char*>(block_->data) + offsets_[i], bytes);
      }
    }
    // Waited for (or failed while waiting, after which nothing is queued on
    // the stream that could still write the block: the device has failed).
    Status released = staging_->Release(block_, s.ok() ? nullptr : stream_);
    block_ = nullptr;
    (void)cudaEventDestroy(copied_);
    if (!s.ok()) {
      (void)cudaGetLastError();
      return s.WithContext(StrCat("copying ", host_.size(), " tensors from ", device_->name(),
                                  " to the host (the error may come from a kernel queued on ", device_->short_name(),
                                  " before the copy, or after it: a later step's)"));
    }
    return released;
  }

 private:
  const GpuDevice* device_;
  PinnedStagingPool* staging_;
  PinnedStagingPool::Block* block_;
  cudaEvent_t copied_;
  cudaStream_t stream_;
  std::vector<Tensor> host_;  // share their buffers with the caller's tensors
  std::vector<size_t> offsets_;
};

}  // namespace

StatusOr<std::unique_ptr<PendingCopy>> GpuDevice::StartCopyToHostMany(const std::vector<Tensor>& on_device,
                                                                       std::vector<Tensor>* host) {
  auto exclusion = CaptureExclusion();
  TW_RETURN_IF_ERROR(Activate());
  TW_RETURN_IF_ERROR(AllocateHostCopies(on_device, host));
  // Each value at a 64-byte aligned offset of one pinned block: a copy into
  // pageable memory would not return before the device reached it.
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const Tensor& t : on_device) {
    offsets.push_back(total);
    total += (t.TotalBytes() + 63) / 64 * 64;
  }
  StatusOr<PinnedStagingPool::Block*> staged = staging_->Acquire(std::max<size_t>(total, 64));
  if (!staged.ok()) return staged.status().WithContext(StrCat("pinning ", total, " bytes to copy from ", name()));
  PinnedStagingPool::Block* block = staged.value();
  cudaEvent_t copied = nullptr;
  Status s = CudaStatus(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming), "cudaEventCreateWithFlags", __FILE__,
                        __LINE__);
  // The copies after the compute stream's work so far, then the event.
  if (s.ok()) s = WaitForStream(d2h_stream_, compute_stream_);
  for (size_t i = 0; i < on_device.size() && s.ok(); ++i) {
    const size_t bytes = on_device[i].TotalBytes();
    if (bytes == 0) continue;
    s = CudaStatus(cudaMemcpyAsync(static_cast<char*>(block->data) + offsets[i], on_device[i].raw_data(), bytes,
                                   cudaMemcpyDeviceToHost, d2h_stream_),
                   "cudaMemcpyAsync(DeviceToHost)", __FILE__, __LINE__);
  }
  if (s.ok()) s = CudaStatus(cudaEventRecord(copied, d2h_stream_), "cudaEventRecord(fetches copied)", __FILE__, __LINE__);
  // Work queued on the compute stream from now on (the stream-ordered free
  // of `on_device`, the next step's kernels over the same memory) runs after
  // the copies have read it.
  if (s.ok()) s = WaitForStream(compute_stream_, d2h_stream_);
  if (!s.ok()) {
    // Nothing may still write into the block once it is lent again.
    (void)cudaStreamSynchronize(d2h_stream_);
    (void)cudaGetLastError();
    if (copied != nullptr) (void)cudaEventDestroy(copied);
    if (Status r = staging_->Release(block, nullptr); !r.ok()) TW_LOG(ERROR) << "pinned staging: " << r.ToString();
    return s.WithContext(StrCat("copying ", on_device.size(), " tensors from ", name(), " to the host"));
  }
  return std::unique_ptr<PendingCopy>(
      std::make_unique<GpuPendingCopy>(this, staging_.get(), block, copied, d2h_stream_, *host, std::move(offsets)));
}

Status GpuDevice::CopyToPeer(const Tensor& on_device, Device* dst, Tensor* out) {
  auto* peer = dynamic_cast<GpuDevice*>(dst);
  if (peer == nullptr) return errors::Unimplemented("no direct copy from ", name(), " to ", dst->name());
  if (on_device.dtype() == kString) {
    return errors::InvalidArgument("cannot copy string", on_device.shape().ToString(), " from ", name(), " to ",
                                   peer->name(), ": no GPU kernel makes string tensors");
  }
  // Neither stream may be capturing (a peer's exclusion after ours: two
  // peers copying to each other at once take them in opposite orders, but a
  // capture never copies between devices, so only shared holds meet).
  auto exclusion = CaptureExclusion();
  auto peer_exclusion = peer->CaptureExclusion();
  std::lock_guard<std::mutex> cross(CrossStreamLaunchMutex());
  // The destination's memory comes stream-ordered on the peer's compute stream.
  TW_RETURN_IF_ERROR(peer->Activate());
  StatusOr<Tensor> t = Tensor::Allocate(peer->allocator(), on_device.dtype(), on_device.shape());
  if (!t.ok()) return t.status().WithContext("copying from " + name() + " to " + peer->name());
  const size_t bytes = on_device.TotalBytes();
  if (bytes > 0) {
    // On the peer's compute stream, after the work here that produced the source.
    Status s = WaitForStreamOf(peer->compute_stream_, compute_stream_, config_.ordinal);
    bool queued = false;
    if (s.ok()) s = peer->Activate();
    if (s.ok()) {
      s = peer->ordinal() == ordinal()
              ? CudaStatus(cudaMemcpyAsync(t->raw_data(), on_device.raw_data(), bytes, cudaMemcpyDeviceToDevice,
                                           peer->compute_stream_),
                           "cudaMemcpyAsync(DeviceToDevice)", __FILE__, __LINE__)
              : CudaStatus(cudaMemcpyPeerAsync(t->raw_data(), peer->ordinal(), on_device.raw_data(), ordinal(), bytes,
                                               peer->compute_stream_),
                           "cudaMemcpyPeerAsync", __FILE__, __LINE__);
      queued = s.ok();
    }
    // Work queued here from now on (the stream-ordered free of the source) runs
    // after the copy.
    if (s.ok()) s = WaitForStreamOf(compute_stream_, peer->compute_stream_, peer->ordinal());
    if (!s.ok()) {
      // The source may be freed on this device's stream when its tensor goes:
      // let a copy already queued finish reading it first.
      if (queued) (void)cudaStreamSynchronize(peer->compute_stream_);
      (void)cudaGetLastError();
      return s.WithContext(StrCat("copying ", DataTypeName(on_device.dtype()), on_device.shape().ToString(), " from ",
                                  name(), " to ", peer->name()));
    }
  }
  *out = std::move(t).value();
  return Status::OK();
}

Status GpuDevice::CopyOnDevice(const void* src, void* dst, size_t bytes) const {
  if (bytes == 0) return Status::OK();
  auto exclusion = CaptureExclusion();
  TW_RETURN_IF_ERROR(Activate());
  TW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_stream_));
  return Status::OK();
}

std::mutex& GpuDevice::CrossStreamLaunchMutex() {
  static auto* mu = new std::mutex();  // used until the process ends
  return *mu;
}

std::shared_lock<std::shared_mutex> GpuDevice::CaptureExclusion() const {
  if (capturing_thread_.load(std::memory_order_acquire) == std::this_thread::get_id()) return {};
  return std::shared_lock<std::shared_mutex>(capture_mu_);
}

namespace {

// One CUDA graph, replayed on the stream it was captured from.
class GpuGraph final : public CapturedWork {
 public:
  GpuGraph(const GpuDevice* device, cudaGraphExec_t exec) : device_(device), exec_(exec) {}
  ~GpuGraph() override {
    // A replay still queued keeps running; wait for it before the graph goes.
    // A failure is logged and cleared: the thread's next launch check would
    // otherwise report it against an unrelated kernel.
    if (device_->Activate().ok()) {
      if (const cudaError_t err = cudaStreamSynchronize(device_->stream()); err != cudaSuccess) {
        (void)cudaGetLastError();
        TW_LOG(ERROR) << device_->name() << ": waiting for a step graph's replays: " << cudaGetErrorName(err) << ": "
                      << cudaGetErrorString(err);
      }
    }
    if (cudaGraphExecDestroy(exec_) != cudaSuccess) (void)cudaGetLastError();
  }
  Status Launch() override {
    TW_RETURN_IF_ERROR(device_->Activate());
    TW_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, device_->stream()));
    return Status::OK();
  }

 private:
  const GpuDevice* device_;
  cudaGraphExec_t exec_;
};

}  // namespace

Status GpuDevice::BeginCapture() {
  std::unique_lock<std::shared_mutex> lock(capture_mu_);
  TW_RETURN_IF_ERROR(Activate());
  gpu_allocator_->HoldFrees();
  // Thread-local mode: a call on this thread that is unsafe during capture
  // (a synchronisation, a synchronous copy) fails instead of running.
  cudaError_t err = cudaStreamBeginCapture(compute_stream_, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    gpu_allocator_->ReleaseHeldFrees();
    return CudaStatus(err, "cudaStreamBeginCapture(compute)", __FILE__, __LINE__);
  }
  capturing_thread_.store(std::this_thread::get_id(), std::memory_order_release);
  capture_lock_ = std::move(lock);
  return Status::OK();
}

StatusOr<std::unique_ptr<CapturedWork>> GpuDevice::EndCapture() {
  if (capturing_thread_.load(std::memory_order_acquire) != std::this_thread::get_id()) {
    return errors::FailedPrecondition(name(), ": EndCapture without BeginCapture on this thread");
  }
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(compute_stream_, &graph);
  cudaGraphExec_t exec = nullptr;
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  if (err != cudaSuccess) (void)cudaGetLastError();
  capturing_thread_.store(std::thread::id(), std::memory_order_release);
  gpu_allocator_->ReleaseHeldFrees();
  capture_lock_ = std::unique_lock<std::shared_mutex>();
  if (err != cudaSuccess) return CudaStatus(err, "capturing a CUDA graph (cudaStreamEndCapture, cudaGraphInstantiate)", __FILE__, __LINE__);
  return std::unique_ptr<CapturedWork>(new GpuGraph(this, exec));
}

Status GpuDevice::Synchronize() const {
  TW_RETURN_IF_ERROR(Activate());
  TW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_stream_));
  TW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(h2d_stream_));
  TW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d2h_stream_));
  return Status::OK();
}

}  // namespace tw
