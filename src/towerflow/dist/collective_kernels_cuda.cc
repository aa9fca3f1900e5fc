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

#include <map>
#include <mutex>

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
    // timed out returns here and frees this frame, while its task may still
    // be waiting inside ncclCommInitRank for a late rank, and then enqueue.
    GpuDevice* device = &gpu;  // the session's: outlives the world's calls
    TW_OP_REQUIRES_OK(ctx, world->RunInOrder(tag, [world, device, flat, total, type, op]() -> Status {
      GpuDevice& gpu = *device;
      TW_ASSIGN_OR_RETURN(ncclComm_t comm, CommFor(*world, gpu));
      TW_RETURN_IF_ERROR(gpu.Activate());  // the channel's thread
      auto exclusion = gpu.CaptureExclusion();  // off the launcher: not into a capture
      TW_NCCL_RETURN_IF_ERROR(ncclAllReduce(flat.raw_data(), flat.raw_data(), static_cast<size_t>(total), type, op,
                                            comm, gpu.stream()));
      return Status::OK();
    }));
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
