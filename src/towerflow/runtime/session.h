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
// the training loop share one session. A failed step leaves the session usable. The graph must outlive the session and
// may grow while it exists; nodes are never removed.
#ifndef TOWERFLOW_RUNTIME_SESSION_H_
#define TOWERFLOW_RUNTIME_SESSION_H_

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "towerflow/device/device.h"
#include "towerflow/device/device_set.h"
#include "towerflow/device/op_kernel.h"
#include "towerflow/device/placer.h"
#include "towerflow/graph/graph.h"
#include "towerflow/runtime/executor.h"
#include "towerflow/runtime/fusion.h"

namespace tw {

struct SessionOptions {
  // Threads that run independent nodes of a step, the calling thread
  // included (the session's pool has one fewer); 0: one per core. 1 runs every
  // node on the calling thread.
  int inter_op_threads = 0;
  // Threads the heavy kernels (MatMul, Conv2D) split work over, shared among
  // the CPU devices; 0: one per core, and a kernel on a device left with one
  // thread (virtual CPU devices sharing the cores) also splits its work over
  // inter-op threads that are idle at the time.
  int intra_op_threads = 0;
  // Virtual CPU devices /device:CPU:0 .. N-1 (TF's device_count {"CPU": N}),
  // each with its own intra-op pool of max(1, intra_op_threads / N) threads.
  int num_cpu_devices = 1;
  // Test-only fake GPUs /device:GPU:0 .. N-1: device type "GPU", host memory,
  // the CPU kernels of common math/nn/state ops (device/fake/fake_gpu.h). Real
  // GPUs come from the CUDA backend ([cuda]; CUDA_VISIBLE_DEVICES decides which).
  int num_fake_gpus = 0;
  // Real GPUs (CUDA backend; device_set.h's DeviceOptions says more): at most
  // `max_gpus` of the visible ones (-1: all), each split into
  // `logical_gpus_per_gpu` devices of `gpu_memory_limit_mb` MiB (0: an even
  // share of the free memory); `allow_tf32` lets cuBLAS use TF32 for float32.
  int max_gpus = -1;
  int logical_gpus_per_gpu = 1;
  int64_t gpu_memory_limit_mb = 0;
  bool allow_tf32 = false;
  // An op whose requested device cannot run it (no kernel for that type, or no
  // such device) goes to one that can, instead of failing.
  bool allow_soft_placement = false;
  // Print "name: (Op): <device>" to stdout for every node when it is placed
  // (the whole graph at session creation, later nodes at the run that first
  // needs them), and "Device mapping:" at creation.
  bool log_device_placement = false;
  // 1: each placement line also gives its reason (device/placer.h).
  int log_device_placement_verbosity = 0;
  // Towers that consume one dequeue built outside them (runtime/
  // pitfall_detector.h) are a warning; true makes them an InvalidArgument error
  // from every Run.
  bool strict_tower_inputs = false;
  // Measure time inside kernels for StepStats (costs two clock reads per node).
  bool collect_step_stats = false;
  // Scan every float output of every kernel; the first NaN or Inf fails the
  // run with InvalidArgument naming the node and op that produced it (TF's
  // add_check_numerics_ops). Costs a pass over every output.
  bool check_numerics = false;
  // Run producer -> consumer chains that have a fused kernel as one kernel
  // where nothing else reads the producer's output (runtime/fusion.h:
  // Conv2D -> BiasAdd / BiasAddRelu on the CPU). Results are the same up to
  // float rounding; false runs every node's own kernel.
  bool fuse_kernels = true;
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

  // Cancels blocked operations (queues) and refuses further runs with Cancelled.
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

 private:
  StatusOr<std::shared_ptr<const ExecutorPlan>> GetPlan(const FeedList& feeds,
                                                        const std::vector<Output>& fetches,
                                                        const std::vector<Node*>& targets);
  StatusOr<std::shared_ptr<const ExecutorPlan>> BuildPlan(const FeedList& feeds,
                                                          const std::vector<Output>& fetches,
                                                          const std::vector<Node*>& targets);
  StatusOr<OpKernel*> GetKernel(const Node* node, Device* device);
  // The fused kernel of `fusion` into `consumer` (fusion.h). REQUIRES: mu_ held.
  StatusOr<OpKernel*> GetFusedKernel(const Node* consumer, const PlannedFusion& fusion, Device* device);
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
  std::map<std::string, std::shared_ptr<const ExecutorPlan>> plans_;      // guarded by mu_
  int64_t next_step_id_ = 0;                                              // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_SESSION_H_
