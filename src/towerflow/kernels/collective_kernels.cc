// CPU kernel of CollectiveAllReduce (graph/ops/collective_ops.h).
//
// The participants of one step meet in a CollectiveGroup, a session resource
// named after the shared_name. The last to arrive checks that every
// participant brought the same dtypes and shapes, orders them by device (then
// node name), and allocates the outputs. Then each participant reduces its own
// 1/N of the elements of the whole list (all tensors laid end to end) into the
// shared outputs, waits until every slice is done, and leaves with them. A
// participant waits only for its peers: the executor runs it on a thread that
// may block (MayBlock), the step's cancellation wakes it when the step fails
// elsewhere, and closing the session wakes it too.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>

#include "towerflow/core/spin_wait.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/internal/exact_reciprocal.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

struct Participant {
  const Node* node = nullptr;
  const Device* device = nullptr;
  std::vector<Tensor> inputs;
};

// One step's meeting of the group.
// Fields are guarded by the group's mutex; the atomics mirror two of them so
// that waiters can spin without it.
struct Meeting {
  std::vector<Participant> arrived;  // in reduction order once complete
  bool complete = false;             // every participant arrived, or the meeting failed
  Status status;                     // why it failed
  std::vector<Tensor> outputs;       // shared by every participant
  int reduced = 0;                   // participants whose slice is written
  int left = 0;                      // participants that returned
  std::atomic<bool> complete_hint{false};
  std::atomic<int> reduced_hint{0};
};

bool ReductionOrder(const Participant& a, const Participant& b) {
  if (a.device->device_type() != b.device->device_type()) return a.device->device_type() < b.device->device_type();
  if (a.device->index() != b.device->index()) return a.device->index() < b.device->index();
  return a.node->name() < b.node->name();
}

class CollectiveGroup final : public ResourceBase {
 public:
  CollectiveGroup(std::string name, int64_t num_devices) : name_(std::move(name)), num_devices_(num_devices) {}

  std::string DebugString() const override {
    return "CollectiveAllReduce group '" + name_ + "' of " + std::to_string(num_devices_) + " devices";
  }
  int64_t num_devices() const { return num_devices_; }

  void Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& [step, m] : meetings_) {
      Fail(*m, errors::Cancelled("CollectiveAllReduce '", name_, "': the session closed while ",
                                 m->arrived.size(), " of ", num_devices_, " participants waited"));
    }
    cv_.notify_all();
  }

  // The step failed elsewhere: participants waiting for peers give up.
  void Cancel(int64_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = meetings_.find(step);
    if (it == meetings_.end()) return;
    Fail(*it->second, errors::Cancelled("CollectiveAllReduce '", name_, "': the step failed while ",
                                        it->second->arrived.size(), " of ", num_devices_,
                                        " participants had arrived"));
    cv_.notify_all();
  }

  // Joins the meeting of `step` and waits until it is complete (or failed).
  // `cancellation` is checked under the group's lock, so that a cancellation
  // racing with the arrival is never missed (Cancel takes the same lock).
  std::shared_ptr<Meeting> Arrive(int64_t step, Participant p, Allocator* allocator,
                                  const CancellationManager* cancellation) {
    std::unique_lock<std::mutex> lock(mu_);
    std::shared_ptr<Meeting>& slot = meetings_[step];
    if (!slot) slot = std::make_shared<Meeting>();
    std::shared_ptr<Meeting> m = slot;
    m->arrived.push_back(std::move(p));
    if (closed_) {
      Fail(*m, errors::Cancelled("CollectiveAllReduce '", name_, "': the session is closed"));
    } else if (cancellation != nullptr && cancellation->IsCancelled()) {
      Fail(*m, errors::Cancelled("CollectiveAllReduce '", name_, "': the step failed before this participant arrived"));
    } else if (static_cast<int64_t>(m->arrived.size()) > num_devices_) {
      Fail(*m, errors::Internal("CollectiveAllReduce '", name_, "': ", m->arrived.size(),
                                " participants arrived for ", num_devices_, " devices"));
    } else if (static_cast<int64_t>(m->arrived.size()) == num_devices_ && !m->complete) {
      std::sort(m->arrived.begin(), m->arrived.end(), ReductionOrder);
      m->status = Prepare(*m, allocator);
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

  // Marks this participant's slice written and waits for every other slice.
  // Every participant has arrived, so this wait depends on running kernels only.
  void FinishSlice(Meeting& m) {
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

  // The participant returns; the last one forgets the meeting.
  void Leave(int64_t step, const std::shared_ptr<Meeting>& m) {
    std::lock_guard<std::mutex> lock(mu_);
    if (++m->left < static_cast<int>(m->arrived.size()) || !m->complete) return;
    auto it = meetings_.find(step);
    if (it != meetings_.end() && it->second == m) meetings_.erase(it);
  }

 private:
  static void SetComplete(Meeting& m) {
    m.complete = true;
    m.complete_hint.store(true, std::memory_order_release);
  }

  static void Fail(Meeting& m, Status status) {
    if (m.complete) return;  // slices are being written: every participant is running
    m.status = std::move(status);
    SetComplete(m);
  }

  // Checks that every participant matches the first; allocates the outputs.
  Status Prepare(Meeting& m, Allocator* allocator) const {
    const Participant& first = m.arrived[0];
    for (const Participant& p : m.arrived) {
      if (p.inputs.size() != first.inputs.size()) {
        return errors::InvalidArgument("CollectiveAllReduce '", name_, "': ", p.node->DebugName(), " on ",
                                       p.device->name(), " reduces ", p.inputs.size(), " tensors but ",
                                       first.node->DebugName(), " on ", first.device->name(), " reduces ",
                                       first.inputs.size());
      }
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        const Tensor& a = p.inputs[k];
        const Tensor& b = first.inputs[k];
        if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
          return errors::InvalidArgument(
              "CollectiveAllReduce '", name_, "': input ", k, " of ", p.node->DebugName(), " on ",
              p.device->name(), " is ", DataTypeName(a.dtype()), " ", a.shape().ToString(), " but input ", k,
              " of ", first.node->DebugName(), " on ", first.device->name(), " is ", DataTypeName(b.dtype()), " ",
              b.shape().ToString());
        }
      }
    }
    for (const Tensor& in : first.inputs) {
      StatusOr<Tensor> out = Tensor::Allocate(allocator, in.dtype(), in.shape());
      if (!out.ok()) return out.status().WithContext("CollectiveAllReduce '" + name_ + "'");
      m.outputs.push_back(std::move(out).value());
    }
    return Status::OK();
  }

  const std::string name_;
  const int64_t num_devices_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, std::shared_ptr<Meeting>> meetings_;  // by step id; guarded by mu_
  bool closed_ = false;                                   // guarded by mu_
};

// Writes elements [begin, end) of the list laid end to end: for each, the sum
// over participants in order (z = x0 + x1, then z + x2, ..., as AddN adds),
// divided by N for the mean (as Div(AddN(...), N) does).
template <typename T>
void ReduceSlice(Meeting& m, bool mean, int64_t begin, int64_t end, ThreadPool* pool) {
  const size_t n = m.arrived.size();
  const T divisor = static_cast<T>(n);
  // A power-of-two count divides as a multiplication, the same bits.
  bool multiply = false;
  if constexpr (std::is_floating_point_v<T>) multiply = internal::ReciprocalIsExact(divisor);
  const T scale = multiply ? static_cast<T>(T(1) / divisor) : T(1);
  int64_t offset = 0;  // of tensor k's first element in the whole list
  for (size_t k = 0; k < m.outputs.size() && offset < end; ++k) {
    const int64_t size = m.outputs[k].NumElements();
    const int64_t lo = std::max(begin, offset) - offset, hi = std::min(end, offset + size) - offset;
    offset += size;
    if (lo >= hi) continue;
    std::vector<const T*> in(n);
    for (size_t j = 0; j < n; ++j) in[j] = m.arrived[j].inputs[k].template data<T>();
    T* out = m.outputs[k].template data<T>();
    ParallelFor(pool, hi - lo, static_cast<int64_t>(n) + 1, [&](int64_t b, int64_t e) {
      // Blocks keep the partial sums in L1 while later inputs stream through.
      constexpr int64_t kBlock = 4096;
      for (int64_t blo = lo + b; blo < lo + e; blo += kBlock) {
        const int64_t bhi = std::min(lo + e, blo + kBlock);
        T* __restrict z = out;
        const T* __restrict x0 = in[0];
        if (n == 1) {
          for (int64_t i = blo; i < bhi; ++i) z[i] = x0[i];
        } else {
          const T* __restrict x1 = in[1];
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(x0[i] + x1[i]);
        }
        for (size_t j = 2; j < n; ++j) {
          const T* __restrict x = in[j];
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(z[i] + x[i]);
        }
        if (mean && multiply) {
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(z[i] * scale);
        } else if (mean) {
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(z[i] / divisor);
        }
      }
    });
  }
}

template <typename T>
class CollectiveAllReduceOp : public OpKernel {
 public:
  explicit CollectiveAllReduceOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string reduction;
    TW_OP_REQUIRES_OK(c, c->GetAttr("reduction", &reduction));
    TW_OP_REQUIRES_OK(c, c->GetAttr("num_devices", &num_devices_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name_));
    if (reduction != "sum" && reduction != "mean") {
      TW_OP_REQUIRES_OK(c, errors::InvalidArgument("reduction '", reduction, "' is not one of sum, mean"));
    }
    if (num_devices_ < 1) {
      TW_OP_REQUIRES_OK(c, errors::InvalidArgument("num_devices must be at least 1, got ", num_devices_));
    }
    mean_ = reduction == "mean";
  }

  bool MayBlock() const override { return num_devices_ > 1; }
  bool WaitsForPeers() const override { return num_devices_ > 1; }

  void Compute(OpKernelContext* ctx) override {
    const int num = ctx->num_inputs();
    if (num_devices_ == 1) {  // its own sum; x / 1 == x
      for (int k = 0; k < num; ++k) ctx->set_output(k, ctx->input(k));
      return;
    }
    auto group = ctx->resource_mgr()->LookupOrCreate<CollectiveGroup>(
        "CollectiveAllReduce:" + shared_name_, [&]() -> StatusOr<std::shared_ptr<CollectiveGroup>> {
          return std::make_shared<CollectiveGroup>(shared_name_, num_devices_);
        });
    TW_OP_REQUIRES_OK(ctx, group.status());
    if ((*group)->num_devices() != num_devices_) {
      TW_OP_REQUIRES_OK(ctx, errors::InvalidArgument("CollectiveAllReduce '", shared_name_, "': num_devices ",
                                                     num_devices_, " but the group has ",
                                                     (*group)->num_devices()));
    }
    Participant self{&ctx->node(), ctx->device(), {}};
    for (int k = 0; k < num; ++k) self.inputs.push_back(ctx->input(k));

    const int64_t step = ctx->step_id();
    CancellationManager* cancellation = ctx->cancellation();
    CancellationManager::Token token = 0;
    bool registered = false;
    if (cancellation != nullptr) {
      std::shared_ptr<CollectiveGroup> g = *group;
      registered = cancellation->RegisterCallback(&token, [g, step] { g->Cancel(step); });
    }
    std::shared_ptr<Meeting> m = (*group)->Arrive(step, std::move(self), ctx->device()->allocator(), cancellation);
    if (registered) cancellation->DeregisterCallback(token);
    if (m->status.ok()) {
      int rank = 0;
      while (rank < static_cast<int>(m->arrived.size()) && m->arrived[static_cast<size_t>(rank)].node != &ctx->node()) {
        ++rank;
      }
      int64_t total = 0;
      for (const Tensor& t : m->outputs) total += t.NumElements();
      const int64_t n = static_cast<int64_t>(m->arrived.size());
      ReduceSlice<T>(*m, mean_, total * rank / n, total * (rank + 1) / n, ctx->intra_op_pool());
      (*group)->FinishSlice(*m);
      for (int k = 0; k < num; ++k) ctx->set_output(k, m->outputs[static_cast<size_t>(k)]);
    } else {
      ctx->SetStatus(m->status);
    }
    (*group)->Leave(step, m);
  }

 private:
  int64_t num_devices_ = 1;
  std::string shared_name_;
  bool mean_ = false;
};

}  // namespace

void RegisterCollectiveKernels(KernelRegistry& r) {
  r.RegisterTyped<CollectiveAllReduceOp, float, double, int32_t, int64_t>("CollectiveAllReduce", kDeviceCpu);
}

}  // namespace tw
