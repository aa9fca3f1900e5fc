// SessionImpl: the state behind a Session (runtime/session.h, whose contract
// it implements): its devices, the placement of the graph's nodes, the
// kernels it created, per-session resources, and the cache of executor plans
// keyed by the run signature. Towerflow's own modules reach it through
// Session::impl() for what users never need: the Device objects, the
// Placement with its reasons, the ResourceMgr (queues and variables by name).
// Thread-safe as Session is: one mutex guards plans, kernels and placement.
#ifndef TOWERFLOW_RUNTIME_SESSION_IMPL_H_
#define TOWERFLOW_RUNTIME_SESSION_IMPL_H_

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "towerflow/device/device.h"
#include "towerflow/device/device_set.h"
#include "towerflow/device/op_kernel.h"
#include "towerflow/device/placer.h"
#include "towerflow/graph/graph.h"
#include "towerflow/runtime/executor.h"
#include "towerflow/runtime/fusion.h"
#include "towerflow/runtime/plan_builder.h"
#include "towerflow/runtime/session.h"

namespace tw {

class SessionImpl : private KernelSource {
 public:
  SessionImpl(Graph& graph, SessionOptions options);
  ~SessionImpl();
  SessionImpl(const SessionImpl&) = delete;
  SessionImpl& operator=(const SessionImpl&) = delete;

  // Session::Run, Close and closed.
  // With `deferred`: Executor::Run's deferred fetch copies (Session::RunAsync).
  StatusOr<std::vector<Tensor>> Run(const FeedList& feeds, const std::vector<Output>& fetches,
                                    const std::vector<Node*>& targets, StepStats* stats,
                                    std::vector<std::unique_ptr<PendingCopy>>* deferred = nullptr);
  void Close();
  bool closed() const;

  Graph& graph() const { return graph_; }
  const SessionOptions& options() const { return options_; }
  ResourceMgr* resource_mgr() { return &resources_; }
  // CPU devices first (CPU:0 is where feeds and fetches live), then GPUs.
  const std::vector<std::unique_ptr<Device>>& devices() const { return device_set_->devices(); }
  const DeviceSet& device_set() const { return *device_set_; }
  // Where each node placed so far runs, and why. Nodes added to the graph after
  // creation are placed by the first Run whose plan is new; read it when no
  // other thread is running the session.
  const Placement& placement() const { return placement_; }
  // The plan a Run with this signature runs (built and cached on first use):
  // what a step does, for tests and tools (plan.h's CountItems).
  StatusOr<std::shared_ptr<const ExecutorPlan>> GetPlan(const FeedList& feeds,
                                                        const std::vector<Output>& fetches,
                                                        const std::vector<Node*>& targets);
  // Session::ListDevices and Session::DescribeDevices.
  std::vector<DeviceAttributes> ListDevices() const;
  std::string DeviceMapping() const;

 private:
  // PlanBuilder (plan_builder.h) over this session's graph and placement.
  // REQUIRES: mu_ held.
  StatusOr<std::shared_ptr<const ExecutorPlan>> BuildPlan(const FeedList& feeds,
                                                          const std::vector<Output>& fetches,
                                                          const std::vector<Node*>& targets);
  // KernelSource (plan_builder.h): the node's kernel, made once; the fused
  // kernel of `fusion` into `consumer` (fusion.h). REQUIRES: mu_ held.
  StatusOr<OpKernel*> Kernel(const Node* node, Device* device) override;
  StatusOr<OpKernel*> FusedKernel(const Node* consumer, const PlannedFusion& fusion, Device* device) override;
  StatusOr<OpKernel*> GroupKernel(const PlannedGroup& group) override;
  Status CheckFeed(const Output& output, const Tensor& value) const;
  // Places the nodes added since the last call and checks tower inputs.
  // REQUIRES: mu_ held.
  void PlaceNewNodes();

  Graph& graph_;
  SessionOptions options_;
  Status init_status_;  // bad device options: every Run returns it
  std::unique_ptr<DeviceSet> device_set_;
  std::unique_ptr<ThreadPool> inter_op_pool_;
  std::unique_ptr<ElasticThreadPool> blocking_pool_;
  // One thread per GPU, by index (SessionOptions::gpu_launcher_threads).
  std::vector<std::unique_ptr<ThreadPool>> launcher_threads_;
  std::vector<ThreadPool*> launchers_;
  ResourceMgr resources_;

  mutable std::mutex mu_;
  bool closed_ = false;                                                   // guarded by mu_
  Placement placement_;                                                   // guarded by mu_
  std::set<int> warned_dequeues_;                                         // guarded by mu_
  Status tower_inputs_status_;  // guarded by mu_; strict_tower_inputs findings
  std::map<int, std::unique_ptr<OpKernel>> kernels_;                      // guarded by mu_
  // Fused kernels by consumer node id, fusion and absorbed node ids: plans
  // of one session may fuse different nodes into one consumer (a step that
  // fetches a tower's gradient keeps the sum apart, and only Div fuses).
  std::map<std::tuple<int, const FusionDef*, std::vector<int>>, std::unique_ptr<OpKernel>>
      fused_kernels_;  // guarded by mu_
  // Update groups' kernels by definition and member node ids.
  std::map<std::pair<const GroupDef*, std::vector<int>>, std::unique_ptr<OpKernel>> group_kernels_;  // guarded by mu_
  std::map<std::string, std::shared_ptr<const ExecutorPlan>> plans_;      // guarded by mu_
  int64_t next_step_id_ = 0;                                              // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_SESSION_IMPL_H_
