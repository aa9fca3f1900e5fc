// Session: runs a Graph. Run(feeds, fetches, targets) computes only what the
// fetches and targets need (an unfetched stateful op never runs), as TF1's
// Session does.
//
// A Session owns its devices (a DeviceSet made from the options), the placement
// of the graph's nodes on them (device/placer.h: the whole graph at creation,
// nodes added later when a new plan first needs them; once per node, never per
// step), the kernels it created (one per node, on the node's device, kept
// across steps so stateful kernels keep their state), per-session resources
// (variables, queues), and a cache of executor plans keyed by the run
// signature; a plan spanning devices carries transfers for its cross-device
// edges (runtime/partition.h). Run is thread-safe: queue runner threads and
// the training loop share one session. A failed step leaves the session
// usable. The graph must outlive the session and may grow while it exists;
// nodes are never removed. The session's state lives behind a pointer
// (SessionImpl), so this header names no internal type.
#ifndef TOWERFLOW_RUNTIME_SESSION_H_
#define TOWERFLOW_RUNTIME_SESSION_H_

// Internal: the session's state (runtime/session_impl.h: plans, kernels,
// devices, resources), opaque to users. Declared before the exported region,
// so that libtowerflow.so does not export it.
namespace tw {
class SessionImpl;
}  // namespace tw

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/core/session_options.h"
#include "towerflow/graph/graph.h"
#include "towerflow/runtime/step_stats.h"

namespace tw {


using FeedList = std::vector<std::pair<Output, Tensor>>;

// One device of a session, as Session::ListDevices describes it (TF's
// DeviceAttributes).
struct DeviceAttributes {
  std::string name;         // "/job:localhost/replica:0/task:0/device:GPU:0"
  std::string short_name;   // "/device:GPU:0", what tw::Scope::WithDevice takes
  std::string device_type;  // "CPU" or "GPU"
  // What backs it: "NVIDIA H200, compute capability 9.0, ..." for a GPU,
  // "virtual CPU device 1 of 4 on the host's cores", "" for the only CPU.
  std::string physical_description;
  int intra_op_threads = 1;  // threads its kernels split work over
};

// The fetched values of a step run with Session::RunAsync, on their way to
// the host. Movable; must not outlive its session. Destroying one that was
// never waited for is safe (the values are dropped when the devices are done).
class PendingFetches {
 public:
  PendingFetches() = default;
  // A moved-from one holds nothing (Wait is FailedPrecondition).
  PendingFetches(PendingFetches&& other) noexcept
      : values_(std::move(other.values_)), wait_(std::move(other.wait_)), pending_(other.pending_) {
    other.wait_ = nullptr;
    other.pending_ = false;
  }
  PendingFetches& operator=(PendingFetches&& other) noexcept {
    values_ = std::move(other.values_);
    wait_ = std::move(other.wait_);
    pending_ = other.pending_;
    other.wait_ = nullptr;
    other.pending_ = false;
    return *this;
  }
  // Waits until the devices have computed the values and copied them to the
  // host, then returns them in the order they were fetched. A GPU kernel of
  // the step that failed after RunAsync returned fails here, as Run would
  // have. FailedPrecondition when called twice (or on a default-made one).
  StatusOr<std::vector<Tensor>> Wait();
  // Whether Wait is still to be called.
  bool pending() const { return pending_; }

 private:
  friend class Session;
  std::vector<Tensor> values_;
  std::function<Status()> wait_;  // null: the values are ready
  bool pending_ = false;
};

class Session {
 public:
  explicit Session(Graph& graph, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Feeds replace the given outputs (usually placeholders); fetches are returned
  // in order; targets are run for their effects. InvalidArgument naming the
  // output for a feed of the wrong dtype or shape, or a null fetch; a kernel
  // failure is returned with the node's name and op. A node of the plan that
  // could not be placed fails the run with the placer's error (InvalidArgument
  // "Cannot assign a device for operation '<name>': ..."); bad device options
  // and, with strict_tower_inputs, a shared batch fail every run.
  StatusOr<std::vector<Tensor>> Run(const FeedList& feeds, const std::vector<Output>& fetches,
                                    const std::vector<Node*>& targets = {},
                                    StepStats* stats = nullptr);
  StatusOr<std::vector<Tensor>> Run(const std::vector<Output>& fetches,
                                    const std::vector<Node*>& targets = {});
  // Runs one target op (an initializer, a train op).
  Status Run(Node* target);
  // Runs one step as Run does, but returns once every kernel of the step has
  // run or, on a GPU, been queued on its stream, without waiting for the GPU
  // to finish: the fetched values in a GPU's memory are copied to the host
  // behind the step's work, and PendingFetches::Wait returns them. The next
  // step may run before that Wait: its GPU work queues behind this step's,
  // which is how a training loop keeps its GPU busy while it reads the
  // previous step's loss (one step late). Errors of the step's host work are
  // returned here, a GPU's own by Wait. On devices that share the host's
  // memory the values are ready when this returns.
  StatusOr<PendingFetches> RunAsync(const FeedList& feeds, const std::vector<Output>& fetches,
                                    const std::vector<Node*>& targets = {}, StepStats* stats = nullptr);

  // Cancels blocked operations (queues) and refuses further runs with Cancelled.
  void Close();
  bool closed() const;

  Graph& graph() const;
  const SessionOptions& options() const;

  // The session's devices: CPUs first (CPU:0 is where feeds and fetches
  // live), then GPUs.
  std::vector<DeviceAttributes> ListDevices() const;
  // "Device mapping:" and one line per device with a physical description,
  // as log_device_placement prints at creation.
  std::string DescribeDevices() const;
  // Where `node` runs (its full device name), and why (device/placer's
  // reason: "requested", "soft placement: no GPU kernel for ..."); "" for a
  // node not placed yet (nodes added to the graph after creation are placed
  // by the first Run whose plan needs them) or that could not be placed. Read
  // them when no other thread is running the session.
  std::string PlacedDevice(const Node& node) const;
  std::string PlacementReason(const Node& node) const;

  // Towerflow's own modules reach the session's devices, placement and
  // resources through this (runtime/session_impl.h); user code never needs it.
  SessionImpl& impl() const { return *impl_; }

 private:
  std::unique_ptr<SessionImpl> impl_;
};

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_RUNTIME_SESSION_H_
