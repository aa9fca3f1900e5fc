// GPU kernel of CollectiveAllReduce (graph/ops/collective_ops.h): the towers'
// gradients on this process's GPUs averaged by NCCL, as TF's NcclAllReduce
// and MirroredStrategy do, where reduce-broadcast copies every gradient to one
// GPU and the sum back to every other.
//
// Each participant brings its outputs: its inputs' buffers where it holds the
// only reference (a tower's gradients, read by nothing else), else a copy on
// its GPU's compute stream. The participants meet (kernels/collective_group.h);
// the last to arrive hands every participant's list to one NcclAllReducer
// (nccl_all_reduce.h: one NCCL rank per physical GPU, logical GPUs of one
// physical GPU combined in its memory first, small tensors fused into
// buckets), which queues the reduction, in place, on every participant's
// compute stream. Nothing waits for the GPU: work queued after the
// participant on its stream reads the result.
//
// The reducer is a session resource per ordered list of devices, made on the
// first meeting (its communicators come with its first call). The meeting
// holds every participant's GpuDevice::CaptureExclusion while it queues, so
// the NCCL calls never land in a step graph being recorded on another thread
// (the kernel itself may block, so it is never recorded: OpKernel::MayBlock),
// and GpuDevice::CrossStreamLaunchMutex, so that no copy between two of the
// GPUs is queued between their NCCL kernels (it could wait for one NCCL
// kernel ahead of the other, which waits for it).
//
// Mean: NCCL's ncclAvg when every device is a physical GPU of its own and the
// dtype is floating, else the sum divided by N (NcclAllReducer). NCCL's order
// of summation is its own: the CPU twin (collective_kernels.cc) sums in device
// order, so the two agree to rounding, not bit for bit.
//
// Registered by EnsureCollectiveAllReduceCudaKernel (train/nccl_all_reduce.h)
// when CUDA GPUs are visible, from the graph builders that make the op
// (train/all_reduce.h); fake GPUs keep the CPU kernel's copy.
#include <string>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/device/device_set.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/collective_group.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/train/nccl_all_reduce.h"

namespace tw::train {
namespace {

class NcclReducerResource final : public ResourceBase {
 public:
  NcclReducerResource(std::string devices, std::vector<GpuDevice*> gpus)
      : devices_(std::move(devices)), reducer_(std::move(gpus)) {}
  std::string DebugString() const override { return "NcclAllReducer over " + devices_; }
  NcclAllReducer& reducer() { return reducer_; }

 private:
  const std::string devices_;
  NcclAllReducer reducer_;
};

// Queues the meeting's reduction, each list in place. The meeting checked
// that every participant is on a GPU, as this one: a CUDA GPU (fake GPUs,
// which run the CPU kernel, never share a process with CUDA GPUs).
Status ReduceMeeting(OpKernelContext* ctx, const std::string& group, bool mean, CollectiveMeeting& m) {
  std::vector<GpuDevice*> gpus;
  std::string names;
  for (const CollectiveParticipant& p : m.arrived) {
    // Participants are Compute's callers: their devices are theirs to use.
    gpus.push_back(static_cast<GpuDevice*>(const_cast<Device*>(p.device)));
    names += (names.empty() ? "" : ",") + p.device->name();
  }
  auto resource = ctx->resource_mgr()->LookupOrCreate<NcclReducerResource>(
      "NcclAllReducer:" + names, [&]() -> StatusOr<std::shared_ptr<NcclReducerResource>> {
        return std::make_shared<NcclReducerResource>(names, gpus);
      });
  if (!resource.ok()) return resource.status();
  std::vector<std::shared_lock<std::shared_mutex>> exclusions;
  for (size_t i = 0; i < gpus.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || gpus[j] == gpus[i];
    if (!seen) exclusions.push_back(gpus[i]->CaptureExclusion());
  }
  std::lock_guard<std::mutex> cross(GpuDevice::CrossStreamLaunchMutex());
  const size_t count = m.arrived[0].tensors.size();
  std::vector<std::vector<Tensor*>> values(count);
  for (size_t k = 0; k < count; ++k) {
    for (CollectiveParticipant& p : m.arrived) values[k].push_back(&p.tensors[k]);
  }
  return (*resource)->reducer().AllReduceBatch(values, mean ? Reduction::kMean : Reduction::kSum)
      .WithContext("CollectiveAllReduce '" + group + "'");
}

class GpuCollectiveAllReduceOp final : public GpuOpKernel {
 public:
  explicit GpuCollectiveAllReduceOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, ReadCollectiveAllReduceAttrs(c, &attrs_));
  }

  bool MayBlock() const override { return attrs_.num_devices > 1; }
  bool WaitsForPeers() const override { return attrs_.num_devices > 1; }

 protected:
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const int num = ctx->num_inputs();
    if (attrs_.num_devices == 1) {  // its own sum; x / 1 == x
      for (int k = 0; k < num; ++k) ctx->set_output(k, ctx->input(k));
      return;
    }
    CollectiveParticipant self{&ctx->node(), ctx->device(), {}};
    for (int k = 0; k < num; ++k) {
      const Tensor& in = ctx->input(k);
      Tensor* out = nullptr;
      TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({k}, k, in.shape(), &out));
      if (out->raw_data() != in.raw_data()) {
        TW_OP_REQUIRES_OK(ctx, gpu.CopyOnDevice(in.raw_data(), out->raw_data(), in.TotalBytes()));
      }
      self.tensors.push_back(*out);
    }
    auto joined = JoinCollective(
        ctx, attrs_.shared_name, attrs_.num_devices, std::move(self),
        [&](CollectiveMeeting& m) { return ReduceMeeting(ctx, attrs_.shared_name, attrs_.mean, m); });
    TW_OP_REQUIRES_OK(ctx, joined.status());
    if (!joined->meeting->status.ok()) ctx->SetStatus(joined->meeting->status);
    joined->Leave(ctx->step_id());
  }

 private:
  CollectiveAllReduceKernelAttrs attrs_;
};

}  // namespace

void RegisterCollectiveAllReduceCudaKernel(KernelRegistry& registry) {
  registry.RegisterUntyped<GpuCollectiveAllReduceOp>("CollectiveAllReduce", kDeviceGpu, "T",
                                                     {kFloat32, kFloat64, kInt32, kInt64});
}

bool EnsureCollectiveAllReduceCudaKernel() {
  static const bool registered = [] {
    EnsureKernelsRegistered();
    if (VisibleCudaGpuCount() == 0) return false;
    RegisterCollectiveAllReduceCudaKernel(KernelRegistry::Global());
    return true;
  }();
  return registered;
}

}  // namespace tw::train
