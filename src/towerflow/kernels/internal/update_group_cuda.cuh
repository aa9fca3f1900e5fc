// The GPU frame of the update groups (kernels/update_group.h): one kernel
// object runs a group of one update op over many variables, up to kGroupChunk
// variables per launch (blockIdx.y picks one; the pointers travel in the
// kernel's parameters, so nothing is copied per step), and does the global
// step's AssignAdd when the plan made it the group's last member (the step
// bump, on the first launch). Each op supplies an Update policy:
//
//   template <typename T> struct FooUpdate {
//     using Chunk = ...;                      // kGroupChunk members' pointers,
//                                             // n[kGroupChunk], StepBump bump
//     static constexpr std::array<int, R> kRefs;  // the member's ref inputs
//     explicit FooUpdate(OpKernelConstruction*);  // the op's attrs
//     static Status Check(OpKernelContext* member);  // the op's own checks
//     static void Add(OpKernelContext* member, int i, Chunk* chunk);
//     void Launch(const GpuDevice&, dim3 grid, int threads, const Chunk&,
//                 OpKernelContext* first) const;  // the first member's scalars
//   };
//
// and registers GroupDef{op, kDeviceGpu, ..., &MakeGroupKernel<FooUpdate>}.
// Users: training_cuda.cu (momentum, gradient descent, Adam) and
// adaptive_training_cuda.cu (RMSProp, Adagrad). Each group's element update is
// its single op's, so each element rounds alike. Internal to kernels/;
// included by *_cuda.cu files only.
#ifndef TOWERFLOW_KERNELS_INTERNAL_UPDATE_GROUP_CUDA_CUH_
#define TOWERFLOW_KERNELS_INTERNAL_UPDATE_GROUP_CUDA_CUH_

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/update_group.h"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace update_group_cuda {

inline constexpr int kGroupChunk = 32;

// A group's step bump (runtime/update_groups.h): the global step's AssignAdd
// done by one thread of the group's first launch. Null pointers: none.
struct StepBump {
  int64_t* step64 = nullptr;
  const int64_t* by64 = nullptr;
  int32_t* step32 = nullptr;
  const int32_t* by32 = nullptr;

  bool empty() const { return step64 == nullptr && step32 == nullptr; }
  __device__ void ApplyOnce() const {
    if (blockIdx.x != 0 || blockIdx.y != 0 || threadIdx.x != 0) return;
    if (step64 != nullptr) *step64 += *by64;
    if (step32 != nullptr) *step32 += *by32;
  }
};

// The step bump's checks: AssignAdd's (CheckAssignUpdate: initialized, the
// same shapes), then one element of an integer type (the plan's rule).
// REQUIRES: the lock of the step's ref held.
inline Status StepBumpFor(OpKernelContext* bump, StepBump* out) {
  Tensor* step = bump->mutable_input(0);
  const Tensor& by = bump->input(1);
  TW_RETURN_IF_ERROR(CheckAssignUpdate(bump, by));
  if (step->NumElements() != 1) {
    return errors::InvalidArgument("AssignAdd of a step: ", DataTypeName(step->dtype()), step->shape().ToString(),
                                   " is not one element");
  }
  if (step->dtype() == kInt64) {
    out->step64 = step->data<int64_t>();
    out->by64 = by.data<int64_t>();
  } else if (step->dtype() == kInt32) {
    out->step32 = step->data<int32_t>();
    out->by32 = by.data<int32_t>();
  } else {
    return errors::InvalidArgument("AssignAdd of a step: ", DataTypeName(step->dtype()), " is not an integer");
  }
  return Status::OK();
}

// An update group's kernel (kernels/update_group.h): each member gets its
// context over its inputs (MemberContexts) and its op's own checks, every
// member's refs are locked while the launches are queued, and `Update`
// (MomentumUpdate, GradientDescentUpdate, AdamUpdate below) fills a chunk of
// kGroupChunk members' pointers and launches it with the first member's
// scalars (the GroupDef's compatibility made them the same).
template <typename T, typename Update>
class GpuUpdateGroupOp : public GpuOpKernel {
 public:
  GpuUpdateGroupOp(OpKernelConstruction* c, std::vector<const Node*> members)
      : GpuOpKernel(c), members_(std::move(members)), update_(c) {}
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    MemberContexts members(ctx, members_);
    // The step bump, if any, is the last member: its AssignAdd rides on the
    // first launch.
    const bool bump = members_.back()->op() == "AssignAdd";
    const int updates = members.size() - (bump ? 1 : 0);
    // A group has at least two updates (runtime/update_groups.h): the step
    // bump rides along with them, never alone.
    TW_CHECK(updates > 0) << "an update group of no updates";
    {
      std::vector<std::mutex*> mus;
      for (int m = 0; m < updates; ++m) {
        for (int r : Update::kRefs) mus.push_back(members.at(m)->input_ref_mutex(r));
      }
      if (bump) mus.push_back(members.at(updates)->input_ref_mutex(0));
      RefLocks locks(std::move(mus));
      typename Update::Chunk chunk{};
      // Every check before the first launch: a failing member leaves every
      // variable, and the step, as they were.
      for (int m = 0; m < updates; ++m) {
        if (Status s = Update::Check(members.at(m)); !s.ok()) {
          TW_OP_REQUIRES_OK(ctx, s.WithContext("in " + members_[static_cast<size_t>(m)]->DebugName()));
        }
      }
      if (bump) {
        if (Status s = StepBumpFor(members.at(updates), &chunk.bump); !s.ok()) {
          TW_OP_REQUIRES_OK(ctx, s.WithContext("in " + members_.back()->DebugName()));
        }
      }
      int count = 0;
      int64_t widest = 0;
      auto flush = [&]() -> Status {
        // Empty variables alone launch nothing, unless the step rides along.
        if (count == 0 || (widest == 0 && chunk.bump.empty())) return Status::OK();
        const LaunchShape shape = LaunchShapeFor(std::max<int64_t>(widest, 1), gpu);
        const dim3 grid(static_cast<unsigned>(shape.blocks), static_cast<unsigned>(count));
        update_.Launch(gpu, grid, shape.threads, chunk, members.at(0));
        TW_CUDA_LAUNCH_CHECK();
        chunk.bump = StepBump{};  // once
        return Status::OK();
      };
      for (int m = 0; m < updates; ++m) {
        OpKernelContext* mc = members.at(m);
        Update::Add(mc, count, &chunk);
        chunk.n[count] = mc->mutable_input(0)->NumElements();
        widest = std::max(widest, chunk.n[count]);
        if (++count == kGroupChunk) {
          TW_OP_REQUIRES_OK(ctx, flush());
          count = 0;
          widest = 0;
        }
      }
      TW_OP_REQUIRES_OK(ctx, flush());
    }
    for (int m = 0; m < members.size(); ++m) members.at(m)->forward_ref_input_to_ref_output(0, 0);
    TW_OP_REQUIRES_OK(ctx, members.Finish());
  }

 private:
  std::vector<const Node*> members_;
  Update update_;
};

template <template <typename> class Update>
StatusOr<std::unique_ptr<OpKernel>> MakeGroupKernel(const std::vector<const Node*>& members, Device* device) {
  OpKernelConstruction c(*members[0], device);
  auto t = members[0]->attrs().Get<DataType>("T");
  std::unique_ptr<OpKernel> kernel;
  if (t.ok() && *t == kFloat64) {
    kernel = std::make_unique<GpuUpdateGroupOp<double, Update<double>>>(&c, members);
  } else {
    kernel = std::make_unique<GpuUpdateGroupOp<float, Update<float>>>(&c, members);
  }
  if (!c.status().ok()) return c.status();
  return StatusOr<std::unique_ptr<OpKernel>>(std::move(kernel));
}

}  // namespace update_group_cuda
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_INTERNAL_UPDATE_GROUP_CUDA_CUH_
