// The meeting of CollectiveAllReduce's participants (graph/ops/collective_ops.h),
// shared by its kernels: the CPU kernel (collective_kernels.cc), which reduces
// a slice per participant, and the GPU kernel over NCCL
// (train/collective_all_reduce_cuda.cc), which hands every participant's
// tensors to one all-reducer.
//
// The participants of one step meet in a CollectiveGroup, a session resource
// named after the shared_name. The last to arrive orders them by device (then
// node name), checks that they are on devices of one type and brought the
// same dtypes and shapes, and runs
// the kernel's completion (under the group's lock, while every other
// participant waits): the CPU kernel allocates the shared outputs there, the
// GPU kernel queues the all-reduce. A participant waits only for its peers:
// the executor runs it on a thread that may block (OpKernel::MayBlock), the
// step's cancellation wakes it when the step fails elsewhere, and closing the
// session wakes it too.
#ifndef TOWERFLOW_KERNELS_COLLECTIVE_GROUP_H_
#define TOWERFLOW_KERNELS_COLLECTIVE_GROUP_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/device/op_kernel.h"

namespace tw {

struct CollectiveParticipant {
  const Node* node = nullptr;
  const Device* device = nullptr;
  std::vector<Tensor> tensors;  // what it brings: its inputs (CPU), its outputs to reduce in place (GPU)
};

// One step's meeting of a group. Fields are guarded by the group's mutex; the
// atomics mirror two of them so that waiters can spin without it.
struct CollectiveMeeting {
  std::vector<CollectiveParticipant> arrived;  // in reduction order once complete
  bool complete = false;                       // every participant arrived, or the meeting failed
  Status status;                               // why it failed
  std::vector<Tensor> outputs;                 // shared by every participant (the CPU kernel's)
  int reduced = 0;                             // participants whose slice is written
  int left = 0;                                // participants that returned
  std::atomic<bool> complete_hint{false};
  std::atomic<int> reduced_hint{0};

  // This node's index in `arrived` (its rank in the reduction order).
  int RankOf(const Node* node) const;
};

class CollectiveGroup final : public ResourceBase {
 public:
  // Runs once per meeting, by the last participant to arrive, under the
  // group's lock, after the participants were ordered and their lists
  // checked; an error fails every participant.
  using Completion = std::function<Status(CollectiveMeeting&)>;

  CollectiveGroup(std::string name, int64_t num_devices) : name_(std::move(name)), num_devices_(num_devices) {}

  std::string DebugString() const override;
  const std::string& name() const { return name_; }
  int64_t num_devices() const { return num_devices_; }
  void Close() override;
  // The step failed elsewhere: participants waiting for peers give up.
  void Cancel(int64_t step);

  // Joins the meeting of `step` and waits until it is complete (or failed).
  // `cancellation` is checked under the group's lock, so that a cancellation
  // racing with the arrival is never missed (Cancel takes the same lock).
  std::shared_ptr<CollectiveMeeting> Arrive(int64_t step, CollectiveParticipant p,
                                            const CancellationManager* cancellation, const Completion& complete);
  // Marks this participant's slice written and waits for every other slice.
  // Every participant has arrived, so this wait depends on running kernels only.
  void FinishSlice(CollectiveMeeting& m);
  // The participant returns; the last one forgets the meeting.
  void Leave(int64_t step, const std::shared_ptr<CollectiveMeeting>& m);

 private:
  Status CheckLists(const CollectiveMeeting& m) const;

  const std::string name_;
  const int64_t num_devices_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, std::shared_ptr<CollectiveMeeting>> meetings_;  // by step id; guarded by mu_
  bool closed_ = false;                                             // guarded by mu_
};

// A participant's whole part: its kernel's group (a resource of the session,
// made on first use), the step's cancellation registered while it waits. The
// group's name comes from the "shared_name" attr; InvalidArgument when the
// group holds another num_devices.
struct JoinedCollective {
  std::shared_ptr<CollectiveGroup> group;
  std::shared_ptr<CollectiveMeeting> meeting;
  void Leave(int64_t step) const { group->Leave(step, meeting); }
};
StatusOr<JoinedCollective> JoinCollective(OpKernelContext* ctx, const std::string& shared_name, int64_t num_devices,
                                          CollectiveParticipant self, const CollectiveGroup::Completion& complete);

// The attrs every CollectiveAllReduce kernel reads: reduction (sum or mean),
// num_devices (at least 1) and shared_name; errors as InvalidArgument.
struct CollectiveAllReduceKernelAttrs {
  bool mean = false;
  int64_t num_devices = 1;
  std::string shared_name;
};
Status ReadCollectiveAllReduceAttrs(OpKernelConstruction* c, CollectiveAllReduceKernelAttrs* attrs);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_COLLECTIVE_GROUP_H_
