// PlanBuilder: turns a run signature (what is fed, fetched and targeted) into
// the ExecutorPlan its steps run (plan.h). Four passes:
//   1. prune: the nodes the fetches and targets need, walking back through
//      data and control inputs; a fed output cuts its edge (TF1's pruning);
//   2. fuse: producer-consumer chains that run as one kernel (fusion.h), and
//      independent updates that share one (update_groups.h);
//   3. items: one per remaining node, with its kernel from the KernelSource;
//   4. wiring: data edges, with transfer items where an edge crosses devices
//      or memories (partition.h), control edges, and the fetches, which are
//      host tensors (a value in device memory gets a transfer to the host);
//   5. resolving: constants and variable references are made once
//      (PlanOptions::resources; plan_resolve.h);
//   6. step graphs: a GPU's kernels that can be recorded become one item
//      (step_graph_regions.h).
// A plan whose step would run some members of a CollectiveAllReduce group but
// not all of them is refused (they would wait for each other forever).
//
// The builder reads the graph and the placement; it never changes them. One
// builder builds one plan at a time (the session holds its lock meanwhile).
#ifndef TOWERFLOW_RUNTIME_PLAN_BUILDER_H_
#define TOWERFLOW_RUNTIME_PLAN_BUILDER_H_

#include <memory>
#include <vector>

#include "towerflow/device/placer.h"
#include "towerflow/graph/graph.h"
#include "towerflow/runtime/fusion.h"
#include "towerflow/runtime/plan.h"
#include "towerflow/runtime/step_graph_regions.h"
#include "towerflow/runtime/update_groups.h"

namespace tw {

struct PlanOptions {
  // Fuse producer-consumer chains and group updates (SessionOptions::fuse_kernels).
  bool fuse_kernels = true;
  // Step arenas (step_arena.h, SessionOptions::step_arena): for no item, for
  // items on devices without host memory, or for every item.
  enum class Arena { kOff, kDeviceMemory, kAll };
  Arena arena = Arena::kDeviceMemory;
  // Pin each GPU's items to its launcher thread (ExecutorPlan::Item::launcher:
  // the GPU's index; SessionOptions::gpu_launcher_threads).
  bool gpu_launchers = true;
  // Run the kernels whose outputs are fixed (OpKernel::OutputsFixed: Const,
  // VariableV2) once, here, when every reader reads them directly (no
  // transfer, no control edge, not fetched): steps read their outputs from
  // the plan instead of running an item per constant and variable. Null:
  // every node is an item.
  ResourceMgr* resources = nullptr;
  // Step graphs (step_graph.h; SessionOptions::cuda_graphs): which GPUs'
  // kernels run as one recorded item.
  StepGraphOptions step_graphs;
};

// Where a plan's kernels come from: a session keeps one kernel per node (and
// one per fusion), made on first use and shared by all of its plans.
class KernelSource {
 public:
  virtual ~KernelSource() = default;
  virtual StatusOr<OpKernel*> Kernel(const Node* node, Device* device) = 0;
  virtual StatusOr<OpKernel*> FusedKernel(const Node* consumer, const PlannedFusion& fusion, Device* device) = 0;
  virtual StatusOr<OpKernel*> GroupKernel(const PlannedGroup& group) = 0;
};

class PlanBuilder {
 public:
  // `host_device`: where feeds and fetches live (the client CPU device).
  // Every argument must outlive the builder.
  PlanBuilder(const Graph& graph, const Placement& placement, Device* host_device, KernelSource* kernels,
              const PlanOptions& options)
      : graph_(graph), placement_(placement), host_device_(host_device), kernels_(kernels), options_(options) {}

  // The plan for one signature: `feeds` are the fed outputs, in the order
  // the step's feed values come. InvalidArgument for an output fed twice, a
  // null or out-of-range fetch, a null target, an incomplete collective
  // group; a needed node that could not be placed fails with the placer's
  // error; a kernel that cannot be made, with its error.
  StatusOr<std::shared_ptr<const ExecutorPlan>> Build(const std::vector<Output>& feeds,
                                                      const std::vector<Output>& fetches,
                                                      const std::vector<Node*>& targets) const;

 private:
  const Graph& graph_;
  const Placement& placement_;
  Device* host_device_;
  KernelSource* kernels_;
  PlanOptions options_;
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_PLAN_BUILDER_H_
