// GpuAllocator (gpu_allocator.h): stream-ordered blocks of the GPU's default
// memory pool, within a logical device's byte limit.
#include "towerflow/device/cuda/gpu_allocator.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "towerflow/core/logging.h"

namespace tw {
namespace {

// "512 B", "64.0 MiB", "1.2 GiB".
std::string HumanBytes(size_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%zu B", bytes);
  } else {
    std::snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

bool PoisonRequested() {
  const char* env = std::getenv("TOWERFLOW_GPU_POISON");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

// A 0-byte request still gets a block of its own (Allocator's contract: a
// valid unique pointer); 256 bytes is the pool's alignment, the smallest unit.
size_t BlockBytes(size_t bytes) { return bytes == 0 ? 256 : bytes; }

constexpr char kOrdinalTag[] = " (ordinal ";

// The ordinals of the GPUs this process opened (an allocator each), as bits;
// past 63, every ordinal counts as opened.
std::atomic<uint64_t> g_opened{0};
bool Opened(int ordinal) {
  return ordinal < 0 || ordinal >= 64 || (g_opened.load(std::memory_order_acquire) >> ordinal & 1) != 0;
}

// Makes `ordinal` current for the scope and restores the thread's device after:
// a tensor may be freed (or allocated) in the middle of a kernel of another
// GPU, whose launches that follow need their own device current. Not back to
// a GPU this process never opened: a thread that chose no device reads 0, and
// making GPU 0 current creates its context (CUDA 12), on a GPU that a rank
// of a multi-process job left to another (SessionOptions::visible_gpus).
class ScopedDevice {
 public:
  explicit ScopedDevice(int ordinal) {
    err_ = cudaGetDevice(&previous_);
    if (err_ == cudaSuccess && previous_ != ordinal) {
      err_ = cudaSetDevice(ordinal);
      if (!Opened(previous_)) previous_ = -1;
    } else {
      previous_ = -1;  // nothing to restore
    }
  }
  ~ScopedDevice() {
    if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  cudaError_t error() const { return err_; }

 private:
  int previous_ = -1;
  cudaError_t err_ = cudaSuccess;
};

}  // namespace

// Name() carries the limit ("GPU:0 (ordinal 0, limit 64.0 MiB)"): it is what
// Tensor::Allocate's ResourceExhausted names, next to BytesInUse.
GpuAllocator::GpuAllocator(std::string name, int ordinal, size_t limit)
    : name_(StrCat(name, kOrdinalTag, ordinal, ", limit ", HumanBytes(limit), ")")),
      ordinal_(ordinal),
      limit_(limit),
      poison_(PoisonRequested()) {
  if (ordinal >= 0 && ordinal < 64) g_opened.fetch_or(uint64_t{1} << ordinal, std::memory_order_acq_rel);
}

std::string GpuAllocator::Describe() const {
  // name_ is "<label> (ordinal k, limit L)", made by the constructor.
  const std::string label = name_.substr(0, name_.rfind(kOrdinalTag));
  return StrCat(label, kOrdinalTag, ordinal_, "): ", HumanBytes(BytesInUse()), " in use of a ", HumanBytes(limit_),
                " limit, peak ", HumanBytes(peak_bytes()));
}

void* GpuAllocator::Allocate(size_t bytes) { return AllocateOn(bytes, stream_); }

void* GpuAllocator::AllocateOn(size_t bytes, cudaStream_t stream) {
  const size_t size = BlockBytes(bytes);
  if (size > limit_) return nullptr;
  // Reserve before allocating, so that two threads cannot both pass the limit;
  // every failure below gives the reservation back.
  const size_t before = in_use_.fetch_add(size, std::memory_order_relaxed);
  if (before + size > limit_) {
    in_use_.fetch_sub(size, std::memory_order_relaxed);
    return nullptr;
  }
  // The calling thread may serve another device (or none): the block must come
  // from this GPU's pool, ordered on `stream` (the compute stream, or a copy's).
  ScopedDevice device(ordinal_);
  cudaError_t err = device.error();
  void* ptr = nullptr;
  {
    // Not into a capture of the stream (HoldFrees): another thread's waits
    // for it to end; the capturing thread's own is refused. Recorded, it
    // would be an allocation node of the graph, which the held free would
    // give back before the graph's first launch had made it. A step graph's
    // kernels allocate from its own buffers (CaptureMemory), made before the
    // capture: a request that reaches the pool fails the capture, and the
    // graph turns off.
    std::unique_lock<std::mutex> lock(held_mu_);
    if (holding_.load(std::memory_order_relaxed) && capturing_ == std::this_thread::get_id()) {
      TW_LOG(WARNING) << name_ << ": an allocation of " << size << " bytes while its stream is captured is refused";
      in_use_.fetch_sub(size, std::memory_order_relaxed);
      return nullptr;
    }
    released_.wait(lock, [&] { return !holding_.load(std::memory_order_relaxed); });
    if (err == cudaSuccess) err = cudaMallocAsync(&ptr, size, stream);
    if (err == cudaSuccess && poison_) {
      // 0xFF bytes: a NaN in every float and double, -1 in every integer.
      err = cudaMemsetAsync(ptr, 0xFF, size, stream);
      if (err != cudaSuccess) {
        (void)cudaGetLastError();
        TW_LOG(ERROR) << "cudaMemsetAsync (TOWERFLOW_GPU_POISON) on " << name_ << ": " << cudaGetErrorName(err);
        (void)cudaFreeAsync(ptr, stream);
        ptr = nullptr;
      }
    }
  }
  if (err != cudaSuccess) {
    // Clear the thread's last error, which a later launch check would report.
    (void)cudaGetLastError();
    if (err != cudaErrorMemoryAllocation) {
      TW_LOG(ERROR) << "cudaMallocAsync of " << size << " bytes on " << name_ << ": " << cudaGetErrorName(err) << ": "
                    << cudaGetErrorString(err);
    }
    in_use_.fetch_sub(size, std::memory_order_relaxed);
    return nullptr;
  }
  // The peak counts blocks handed out, not failed requests.
  size_t peak = peak_.load(std::memory_order_relaxed);
  while (before + size > peak && !peak_.compare_exchange_weak(peak, before + size, std::memory_order_relaxed)) {
  }
  return ptr;
}

void GpuAllocator::HoldFrees() {
  std::lock_guard<std::mutex> lock(held_mu_);
  capturing_ = std::this_thread::get_id();
  holding_.store(true, std::memory_order_release);
}

void GpuAllocator::ReleaseHeldFrees() {
  std::vector<std::pair<void*, size_t>> held;
  {
    std::lock_guard<std::mutex> lock(held_mu_);
    holding_.store(false, std::memory_order_release);
    capturing_ = std::thread::id();
    held.swap(held_);
  }
  released_.notify_all();
  for (const auto& [ptr, bytes] : held) Deallocate(ptr, bytes);
}

void GpuAllocator::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  // Stream-ordered: work queued on the compute stream before this call (which
  // may still read the block) finishes before the block is reused.
  ScopedDevice device(ordinal_);
  cudaError_t err = device.error();
  {
    // The check and the free together, so that HoldFrees cannot begin a
    // capture between them.
    std::lock_guard<std::mutex> lock(held_mu_);
    if (holding_.load(std::memory_order_relaxed)) {
      held_.emplace_back(ptr, bytes);
      return;
    }
    if (err == cudaSuccess) err = cudaFreeAsync(ptr, stream_);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    TW_LOG(ERROR) << "cudaFreeAsync of " << BlockBytes(bytes) << " bytes on " << name_ << ": "
                  << cudaGetErrorName(err) << ": " << cudaGetErrorString(err);
  }
  in_use_.fetch_sub(BlockBytes(bytes), std::memory_order_relaxed);
}

}  // namespace tw
