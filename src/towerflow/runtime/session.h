// Session: runs a Graph. Run(feeds, fetches, targets) computes only what the
// fetches and targets need (an unfetched stateful op never runs), as TF1's
// Session does.
//
// A Session owns its devices, the kernels it created (one per node, kept across
// steps so stateful kernels keep their state), per-session resources (variables,
// queues), and a cache of executor plans keyed by the run signature. Run is
// thread-safe: queue runner threads and the training loop share one session. A
// failed step leaves the session usable. The graph must outlive the session and
// may grow while it exists; nodes are never removed.
#ifndef TOWERFLOW_RUNTIME_SESSION_H_
#define TOWERFLOW_RUNTIME_SESSION_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "towerflow/device/device.h"
#include "towerflow/device/op_kernel.h"
#include "towerflow/graph/graph.h"
#include "towerflow/runtime/executor.h"

namespace tw {

struct SessionOptions {
  // Threads that run independent nodes of a step; 0: one per core. 1 runs every
  // node on the calling thread.
  int inter_op_threads = 0;
  // Threads each device's heavy kernels (MatMul, Conv2D) split work over; 0: one
  // per core.
  int intra_op_threads = 0;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // Measure time inside kernels for StepStats (costs two clock reads per node).
  bool collect_step_stats = false;
};

using FeedList = std::vector<std::pair<Output, Tensor>>;

class Session {
 public:
  explicit Session(Graph& graph, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Feeds replace the given outputs (usually placeholders); fetches are returned
  // in order; targets are run for their effects. InvalidArgument naming the
  // output for a feed of the wrong dtype or shape, or a null fetch; a kernel
  // failure is returned with the node's name and op.
  StatusOr<std::vector<Tensor>> Run(const FeedList& feeds, const std::vector<Output>& fetches,
                                    const std::vector<Node*>& targets = {},
                                    StepStats* stats = nullptr);
  StatusOr<std::vector<Tensor>> Run(const std::vector<Output>& fetches,
                                    const std::vector<Node*>& targets = {});
  // Runs one target op (an initializer, a train op).
  Status Run(Node* target);

  // Cancels blocked operations (queues) and refuses further runs with Cancelled.
  void Close();
  bool closed() const;

  Graph& graph() const { return graph_; }
  const SessionOptions& options() const { return options_; }
  ResourceMgr* resource_mgr() { return &resources_; }
  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }

 private:
  StatusOr<std::shared_ptr<const ExecutorPlan>> GetPlan(const FeedList& feeds,
                                                        const std::vector<Output>& fetches,
                                                        const std::vector<Node*>& targets);
  StatusOr<std::shared_ptr<const ExecutorPlan>> BuildPlan(const FeedList& feeds,
                                                          const std::vector<Output>& fetches,
                                                          const std::vector<Node*>& targets);
  StatusOr<OpKernel*> GetKernel(const Node* node, Device* device);
  Status CheckFeed(const Output& output, const Tensor& value) const;

  Graph& graph_;
  SessionOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<ThreadPool> inter_op_pool_;
  std::unique_ptr<ElasticThreadPool> blocking_pool_;
  ResourceMgr resources_;

  mutable std::mutex mu_;
  bool closed_ = false;                                                   // guarded by mu_
  std::map<int, std::unique_ptr<OpKernel>> kernels_;                      // guarded by mu_
  std::map<std::string, std::shared_ptr<const ExecutorPlan>> plans_;      // guarded by mu_
  int64_t next_step_id_ = 0;                                              // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_SESSION_H_
