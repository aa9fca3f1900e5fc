// GPU kernel of ProcessAllReduce (collective_ops.h): the bucket's tensors are
// packed into one flat buffer on the GPU, all-reduced with NCCL across the
// processes of the job (one NCCL rank per process: the GPU the bucket lives
// on), and unpacked into the outputs; all of it queued on the GPU's compute
// stream, nothing waits for the GPU. Compiled only with the CUDA backend and
// MPI (the *_cuda.cc and *_mpi.cc rules do not combine, so the file guards
// itself).
//
// The communicator: made on the first bucket a process reduces on a GPU, as
// Horovod does: rank 0 makes NCCL's unique id, the control channel broadcasts
// it, and every rank joins with ncclCommInitRank, in the gradients channel's
// order. NCCL calls are issued through World::RunInOrder, so every rank
// enqueues the buckets in one order whatever order its executor runs them.
// Mean: ncclAvg (float and double only; the CPU kernel covers the integers).
//
// The watchdog. A task returns once NCCL has the all-reduce queued, so the
// world's collective timeout never sees the GPU wait for a peer. NCCL's kernels
// spin until every rank joins, and a stopped or dead peer (or a network error,
// an asynchronous NCCL error) would leave this rank's host blocked forever in
// its next synchronisation. Each queued all-reduce is followed by an event;
// a thread polls the events, and NCCL's asynchronous error of their
// communicators, every 50 ms (as PyTorch's NCCL watchdog does). One still
// pending after the collective timeout, or an NCCL error, prints why, naming
// this rank, the bucket and the step, and ends the job (World::Abort: the
// launcher stops every rank, and their kernels with them): the collective
// timeout, kept for the GPU's part too. A call that times out on the host
// (a rank that never queued its part) ends the job from the kernel as well:
// its task may still be waiting in ncclCommInitRank, holding the GPU device
// that the session would destroy on the way out.
//
// CPU twin: ProcessAllReduce's CPU kernel (collective_kernels.cc). No parity
// test runs yet: it needs two processes on two physical GPUs (NCCL refuses two
// ranks on one GPU), which neither CI nor this project's one-GPU device
// machine has; it compiles in every CUDA build.
#include "towerflow/device/cuda/cuda_status.h"
#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/dist/register.h"
#include "towerflow/dist/world.h"

#ifdef TOWERFLOW_HAVE_MPI
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "towerflow/core/logging.h"

namespace tw::dist {
namespace {

struct NcclState {
  std::mutex mu;
  std::map<int, ncclComm_t> comms;  // by CUDA ordinal; guarded by mu
};

NcclState& Nccl() {
  static auto* state = new NcclState();  // communicators live until the process ends
  return *state;
}

// This process's communicator for the GPU `gpu`, made on first use (every rank
// must get here in the same order: from the gradients channel's first bucket).
StatusOr<ncclComm_t> CommFor(World& world, const GpuDevice& gpu) {
  NcclState& state = Nccl();
  std::lock_guard<std::mutex> lock(state.mu);
  if (auto it = state.comms.find(gpu.ordinal()); it != state.comms.end()) return it->second;
  ncclUniqueId id{};
  if (world.rank() == 0) TW_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
  TW_RETURN_IF_ERROR(world.Broadcast({.channel = Channel::kControl, .bucket = 0, .num_buckets = 1,
                                      .what = "NCCL's unique id"},
                                     &id, sizeof(id), 0));
  ncclComm_t comm = nullptr;
  TW_RETURN_IF_ERROR(gpu.Activate());
  TW_NCCL_RETURN_IF_ERROR(ncclCommInitRank(&comm, world.size(), id, world.rank()));
  state.comms[gpu.ordinal()] = comm;
  return comm;
}

// Watches the queued all-reduces (see the top of the file). Lives until the
// process ends, as the communicators do.
class NcclWatchdog {
 public:
  static NcclWatchdog& Get() {
    static auto* watchdog = new NcclWatchdog();
    return *watchdog;
  }

  // Follows the work queued on `gpu`'s stream so far (the all-reduce just
  // queued on `comm`) until it has run. REQUIRES: `gpu` is current.
  Status Watch(World& world, const GpuDevice& gpu, ncclComm_t comm, std::string what) {
    cudaEvent_t event = nullptr;
    TW_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    if (const cudaError_t err = cudaEventRecord(event, gpu.stream()); err != cudaSuccess) {
      (void)cudaEventDestroy(event);
      TW_CUDA_RETURN_IF_ERROR(err);
    }
    const double limit = world.options().collective_timeout_seconds;
    Pending p{event,      comm,         std::move(what), world.step(), world.rank(),
              world.size(), limit, Clock::now(), Clock::time_point::max()};
    if (limit > 0 && limit <= 1e9) {
      p.deadline = p.queued + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
    }
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(p));
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    watched_.notify_one();
    return Status::OK();
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    cudaEvent_t event;
    ncclComm_t comm;
    std::string what;
    int64_t step;
    int rank, size;
    double timeout;
    Clock::time_point queued, deadline;
  };

  void Run() {
    std::list<Pending> polled;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        watched_.wait(lock, [this] { return !pending_.empty(); });
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      // Polled without the lock: a query that blocks must not block the
      // channel's thread queueing the next all-reduce.
      {
        std::lock_guard<std::mutex> lock(mu_);
        polled.splice(polled.end(), pending_);
      }
      for (auto it = polled.begin(); it != polled.end();) {
        const cudaError_t state = cudaEventQuery(it->event);
        if (state == cudaSuccess) {
          (void)cudaEventDestroy(it->event);
          it = polled.erase(it);
          continue;
        }
        if (state == cudaErrorCudartUnloading || state == cudaErrorContextIsDestroyed || World::Current() == nullptr) {
          return;  // the process is ending (the world finalized, CUDA unloading): nothing left to watch
        }
        std::string why;
        if (state != cudaErrorNotReady) {
          (void)cudaGetLastError();
          why = StrCat("the GPU failed (", cudaGetErrorName(state), ": ", cudaGetErrorString(state), ")");
        }
        ncclResult_t async = ncclSuccess;
        if (why.empty() && ncclCommGetAsyncError(it->comm, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress) {
          why = StrCat("NCCL reported ", ncclGetErrorString(async));
        }
        if (why.empty() && Clock::now() >= it->deadline) {
          why = StrCat("it had not finished after the collective timeout (", it->timeout,
                       " s): a rank stopped, or never joined");
        }
        if (!why.empty()) Fail(*it, why);  // does not return
        ++it;
      }
      std::lock_guard<std::mutex> lock(mu_);
      pending_.splice(pending_.begin(), polled);  // still running: ahead of the newer ones
    }
  }

  [[noreturn]] static void Fail(const Pending& p, const std::string& why) {
    const double waited = std::chrono::duration<double>(Clock::now() - p.queued).count();
    std::fprintf(stderr, "towerflow: rank %d of %d: %s, step %lld, queued on the GPU %.1f s ago: %s; ending the job\n",
                 p.rank, p.size, p.what.c_str(), static_cast<long long>(p.step), waited, why.c_str());
    std::fflush(stderr);
    // MPI_Abort ends every rank, and with them their kernels: the
    // communicator is left as it is (its abort may itself block).
    if (World* world = World::Current(); world != nullptr) world->Abort(1);
    (void)ncclCommAbort(p.comm);  // the world already finalized: this process alone
    std::abort();
  }

  std::mutex mu_;
  std::condition_variable watched_;
  std::list<Pending> pending_;  // guarded by mu_
  std::thread thread_;          // started with the first watch; never joined
};

class GpuProcessAllReduceOp : public GpuOpKernel {
 public:
  explicit GpuProcessAllReduceOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    int64_t bucket = 0, num_buckets = 1;
    std::string reduction;
    TW_OP_REQUIRES_OK(c, c->GetAttr("bucket", &bucket));
    TW_OP_REQUIRES_OK(c, c->GetAttr("num_buckets", &num_buckets));
    TW_OP_REQUIRES_OK(c, c->GetAttr("reduction", &reduction));
    TW_OP_REQUIRES_OK(c, c->GetAttr("T", &dtype_));
    mean_ = reduction == "mean";
    tag_ = {.channel = Channel::kGradients, .bucket = static_cast<int>(bucket),
            .num_buckets = static_cast<int>(num_buckets), .what = ""};
  }

  bool MayBlock() const override { return true; }
  bool WaitsForPeers() const override { return true; }

  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const int n = ctx->num_inputs();
    World* world = World::Current();
    if (world == nullptr) {  // one process: its own sum and mean
      for (int k = 0; k < n; ++k) ctx->set_output(k, ctx->input(k));
      return;
    }
    int64_t total = 0;
    for (int k = 0; k < n; ++k) total += ctx->input(k).NumElements();
    Tensor flat;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(dtype_, TensorShape{total}, &flat));
    size_t offset = 0;
    for (int k = 0; k < n; ++k) {
      const Tensor& in = ctx->input(k);
      if (in.TotalBytes() == 0) continue;
      TW_OP_REQUIRES_OK(ctx, gpu.CopyOnDevice(in.raw_data(), static_cast<char*>(flat.raw_data()) + offset,
                                              in.TotalBytes()));
      offset += in.TotalBytes();
    }
    CollectiveTag tag = tag_;
    tag.what = StrCat(node().name(), " (", n, " tensors, ", offset, " bytes, NCCL)");
    const ncclDataType_t type = dtype_ == kFloat64 ? ncclFloat64 : ncclFloat32;
    const ncclRedOp_t op = mean_ ? ncclAvg : ncclSum;
    // The task holds what it uses by value, `flat` included: a call that
    // failed returns here and frees this frame, while its task may still
    // be waiting inside ncclCommInitRank for a late rank, and then enqueue.
    // The device is the session's, which outlives the task but on a timeout
    // (handled below).
    GpuDevice* device = &gpu;
    Status queued = world->RunInOrder(tag, [world, device, flat, total, type, op, what = tag.what]() -> Status {
      GpuDevice& gpu = *device;
      TW_ASSIGN_OR_RETURN(ncclComm_t comm, CommFor(*world, gpu));
      TW_RETURN_IF_ERROR(gpu.Activate());  // the channel's thread
      auto exclusion = gpu.CaptureExclusion();  // off the launcher: not into a capture
      TW_NCCL_RETURN_IF_ERROR(ncclAllReduce(flat.raw_data(), flat.raw_data(), static_cast<size_t>(total), type, op,
                                            comm, gpu.stream()));
      return NcclWatchdog::Get().Watch(*world, gpu, comm, what);
    });
    if (queued.code() == Code::kDeadlineExceeded) {
      std::fprintf(stderr, "towerflow: rank %d of %d: %s\n", world->rank(), world->size(), queued.ToString().c_str());
      std::fflush(stderr);
      world->Abort(1);
    }
    TW_OP_REQUIRES_OK(ctx, queued);
    offset = 0;
    for (int k = 0; k < n; ++k) {
      Tensor* out = nullptr;
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(k, ctx->input(k).shape(), &out));
      if (out->TotalBytes() == 0) continue;
      TW_OP_REQUIRES_OK(ctx, gpu.CopyOnDevice(static_cast<const char*>(flat.raw_data()) + offset, out->raw_data(),
                                              out->TotalBytes()));
      offset += out->TotalBytes();
    }
  }

 private:
  DataType dtype_ = kFloat32;
  bool mean_ = true;
  CollectiveTag tag_;
};

}  // namespace

void RegisterProcessCollectiveCudaKernels(KernelRegistry& kernels) {
  kernels.RegisterUntyped<GpuProcessAllReduceOp>("ProcessAllReduce", kDeviceGpu, "T", {kFloat32, kFloat64});
}

}  // namespace tw::dist

#else  // a CUDA build without MPI: no process but this one, no GPU kernel needed

namespace tw::dist {
void RegisterProcessCollectiveCudaKernels(KernelRegistry&) {}
}  // namespace tw::dist

#endif
