#include "towerflow/kernels/collective_group.h"

#include <algorithm>

#include "towerflow/core/spin_wait.h"
#include "towerflow/device/device.h"

namespace tw {
namespace {

bool ReductionOrder(const CollectiveParticipant& a, const CollectiveParticipant& b) {
  if (a.device->device_type() != b.device->device_type()) return a.device->device_type() < b.device->device_type();
  if (a.device->index() != b.device->index()) return a.device->index() < b.device->index();
  return a.node->name() < b.node->name();
}

void SetComplete(CollectiveMeeting& m) {
  m.complete = true;
  m.complete_hint.store(true, std::memory_order_release);
}

void Fail(CollectiveMeeting& m, Status status) {
  if (m.complete) return;  // slices are being written: every participant is running
  m.status = std::move(status);
  SetComplete(m);
}

}  // namespace

int CollectiveMeeting::RankOf(const Node* node) const {
  int rank = 0;
  while (rank < static_cast<int>(arrived.size()) && arrived[static_cast<size_t>(rank)].node != node) ++rank;
  return rank;
}

std::string CollectiveGroup::DebugString() const {
  return "CollectiveAllReduce group '" + name_ + "' of " + std::to_string(num_devices_) + " devices";
}

void CollectiveGroup::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  for (auto& [step, m] : meetings_) {
    Fail(*m, errors::Cancelled("CollectiveAllReduce '", name_, "': the session closed while ", m->arrived.size(),
                               " of ", num_devices_, " participants waited"));
  }
  cv_.notify_all();
}

void CollectiveGroup::Cancel(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = meetings_.find(step);
  if (it == meetings_.end()) return;
  Fail(*it->second, errors::Cancelled("CollectiveAllReduce '", name_, "': the step failed while ",
                                      it->second->arrived.size(), " of ", num_devices_,
                                      " participants had arrived"));
  cv_.notify_all();
}

std::shared_ptr<CollectiveMeeting> CollectiveGroup::Arrive(int64_t step, CollectiveParticipant p,
                                                           const CancellationManager* cancellation,
                                                           const Completion& complete) {
  std::unique_lock<std::mutex> lock(mu_);
  std::shared_ptr<CollectiveMeeting>& slot = meetings_[step];
  if (!slot) slot = std::make_shared<CollectiveMeeting>();
  std::shared_ptr<CollectiveMeeting> m = slot;
  m->arrived.push_back(std::move(p));
  if (closed_) {
    Fail(*m, errors::Cancelled("CollectiveAllReduce '", name_, "': the session is closed"));
  } else if (cancellation != nullptr && cancellation->IsCancelled()) {
    Fail(*m, errors::Cancelled("CollectiveAllReduce '", name_, "': the step failed before this participant arrived"));
  } else if (static_cast<int64_t>(m->arrived.size()) > num_devices_) {
    Fail(*m, errors::Internal("CollectiveAllReduce '", name_, "': ", m->arrived.size(), " participants arrived for ",
                              num_devices_, " devices"));
  } else if (static_cast<int64_t>(m->arrived.size()) == num_devices_ && !m->complete) {
    std::sort(m->arrived.begin(), m->arrived.end(), ReductionOrder);
    m->status = CheckLists(*m);
    if (m->status.ok()) m->status = complete(*m);
    SetComplete(*m);
  }
  cv_.notify_all();
  if (!m->complete) {
    // Peers on other cores usually arrive within microseconds.
    lock.unlock();
    SpinUntil([&] { return m->complete_hint.load(std::memory_order_acquire); }, kDefaultSpin);
    lock.lock();
  }
  cv_.wait(lock, [&] { return m->complete; });
  return m;
}

void CollectiveGroup::FinishSlice(CollectiveMeeting& m) {
  const int n = static_cast<int>(m.arrived.size());
  std::unique_lock<std::mutex> lock(mu_);
  ++m.reduced;
  m.reduced_hint.store(m.reduced, std::memory_order_release);
  cv_.notify_all();
  if (m.reduced < n) {
    lock.unlock();
    SpinUntil([&] { return m.reduced_hint.load(std::memory_order_acquire) == n; }, kDefaultSpin);
    lock.lock();
  }
  cv_.wait(lock, [&] { return m.reduced == n; });
}

void CollectiveGroup::Leave(int64_t step, const std::shared_ptr<CollectiveMeeting>& m) {
  std::lock_guard<std::mutex> lock(mu_);
  if (++m->left < static_cast<int>(m->arrived.size()) || !m->complete) return;
  auto it = meetings_.find(step);
  if (it != meetings_.end() && it->second == m) meetings_.erase(it);
}

Status CollectiveGroup::CheckLists(const CollectiveMeeting& m) const {
  const CollectiveParticipant& first = m.arrived[0];
  for (const CollectiveParticipant& p : m.arrived) {
    // One kernel reduces the group: the CPU's through host pointers, a GPU's
    // over NCCL.
    if (p.device->device_type() != first.device->device_type()) {
      return errors::InvalidArgument("CollectiveAllReduce '", name_, "': ", p.node->DebugName(), " is on ",
                                     p.device->name(), " but ", first.node->DebugName(), " is on ",
                                     first.device->name(),
                                     ": the participants of one group must all be on GPUs or all on CPUs");
    }
    if (p.tensors.size() != first.tensors.size()) {
      return errors::InvalidArgument("CollectiveAllReduce '", name_, "': ", p.node->DebugName(), " on ",
                                     p.device->name(), " reduces ", p.tensors.size(), " tensors but ",
                                     first.node->DebugName(), " on ", first.device->name(), " reduces ",
                                     first.tensors.size());
    }
    for (size_t k = 0; k < p.tensors.size(); ++k) {
      const Tensor& a = p.tensors[k];
      const Tensor& b = first.tensors[k];
      if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
        return errors::InvalidArgument("CollectiveAllReduce '", name_, "': input ", k, " of ", p.node->DebugName(),
                                       " on ", p.device->name(), " is ", DataTypeName(a.dtype()), " ",
                                       a.shape().ToString(), " but input ", k, " of ", first.node->DebugName(), " on ",
                                       first.device->name(), " is ", DataTypeName(b.dtype()), " ",
                                       b.shape().ToString());
      }
    }
  }
  return Status::OK();
}

StatusOr<JoinedCollective> JoinCollective(OpKernelContext* ctx, const std::string& shared_name, int64_t num_devices,
                                          CollectiveParticipant self, const CollectiveGroup::Completion& complete) {
  auto group = ctx->resource_mgr()->LookupOrCreate<CollectiveGroup>(
      "CollectiveAllReduce:" + shared_name, [&]() -> StatusOr<std::shared_ptr<CollectiveGroup>> {
        return std::make_shared<CollectiveGroup>(shared_name, num_devices);
      });
  if (!group.ok()) return group.status();
  if ((*group)->num_devices() != num_devices) {
    return errors::InvalidArgument("CollectiveAllReduce '", shared_name, "': num_devices ", num_devices,
                                   " but the group has ", (*group)->num_devices());
  }
  const int64_t step = ctx->step_id();
  CancellationManager* cancellation = ctx->cancellation();
  CancellationManager::Token token = 0;
  bool registered = false;
  if (cancellation != nullptr) {
    std::shared_ptr<CollectiveGroup> g = *group;
    registered = cancellation->RegisterCallback(&token, [g, step] { g->Cancel(step); });
  }
  JoinedCollective joined{*group, (*group)->Arrive(step, std::move(self), cancellation, complete)};
  if (registered) cancellation->DeregisterCallback(token);
  return joined;
}

Status ReadCollectiveAllReduceAttrs(OpKernelConstruction* c, CollectiveAllReduceKernelAttrs* attrs) {
  std::string reduction;
  TW_RETURN_IF_ERROR(c->GetAttr("reduction", &reduction));
  TW_RETURN_IF_ERROR(c->GetAttr("num_devices", &attrs->num_devices));
  TW_RETURN_IF_ERROR(c->GetAttr("shared_name", &attrs->shared_name));
  if (reduction != "sum" && reduction != "mean") {
    return errors::InvalidArgument("reduction '", reduction, "' is not one of sum, mean");
  }
  if (attrs->num_devices < 1) {
    return errors::InvalidArgument("num_devices must be at least 1, got ", attrs->num_devices);
  }
  attrs->mean = reduction == "mean";
  return Status::OK();
}

}  // namespace tw
