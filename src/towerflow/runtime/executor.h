// Executor: runs one pruned subgraph (an ExecutorPlan) for one step.
//
// The plan is built once per (feeds, fetches, targets) signature and cached by the
// Session; it lists the nodes the fetches and targets need, each with its kernel,
// where each input comes from (a node output or a feed), and its successors.
// A step keeps a pending count per node; ready nodes run on the calling thread,
// and when several become ready at once the expensive extra ones go to the
// inter-op pool (TF's "inline the first ready node" rule) while cheap ones stay
// inline; a kernel whose measured cost on this plan is below a few
// microseconds counts as cheap whatever it declares (ExecutorPlan::Costs).
// Cheap roots run on the calling thread. Kernels that may block (queues, readers) run on the blocking pool, a
// thread each, so that they can wait on other steps without starving them. A failing kernel aborts the step:
// nodes not yet started are skipped, and Run returns the first error prefixed by
// the failing node's name and op. A value is released when its last consumer
// has run (ExecutorPlan::entry_uses). Each kernel runs with its item's device (its
// allocator and intra-op pool); a plan spanning devices carries transfer items
// for its cross-device edges (partition.h). Plans are immutable; Run is
// thread-safe.
#ifndef TOWERFLOW_RUNTIME_EXECUTOR_H_
#define TOWERFLOW_RUNTIME_EXECUTOR_H_

#include <memory>
#include <vector>

#include "towerflow/runtime/plan.h"
#include "towerflow/runtime/step_stats.h"

namespace tw {

// How an Executor runs its steps; the session fills one from SessionOptions.
struct ExecutorOptions {
  // Where a step's ready work goes besides the calling thread. May be null:
  // every node then runs on the calling thread (blocking kernels still go to
  // `blocking_pool`, which must not be null).
  ThreadPool* inter_op_pool = nullptr;
  ElasticThreadPool* blocking_pool = nullptr;
  ResourceMgr* resources = nullptr;
  // Every step records its kernel times (StepStats), asked for or not.
  bool collect_stats = false;
  // After each kernel, its float outputs are scanned, and the first NaN or
  // Inf fails the step with InvalidArgument naming the node, the op, the
  // output, its shape and device (tf.add_check_numerics_ops for every op).
  bool check_numerics = false;
  // Kernels on devices without an intra-op pool of their own split their work
  // over idle threads of `inter_op_pool` (OpKernelContext::Params::idle_helpers).
  bool lend_idle_threads = false;
  // One thread per GPU, by ExecutorPlan::Item::launcher: each GPU's items
  // run on its own thread, in one order (the order of its stream), and the
  // threads of several GPUs launch at once. Empty or null entries: items
  // run on any thread. Null: none. Must outlive the Executor (the session's).
  const std::vector<ThreadPool*>* launchers = nullptr;
};

class Executor {
 public:
  Executor(std::shared_ptr<const ExecutorPlan> plan, const ExecutorOptions& options);

  // Runs one step. `feeds` must match the plan's feed indices. With
  // `deferred`, the copies of fetched values out of a device's own memory
  // (ExecutorPlan::Item::fetch_copy) are queued and not waited for: they are
  // appended to `deferred`, and the returned tensors that they fill hold
  // their values once every one of them has been waited for (on a failed
  // step, those queued are still appended: their destructor is safe).
  StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& feeds, int64_t step_id, StepStats* stats = nullptr,
                                    std::vector<std::unique_ptr<PendingCopy>>* deferred = nullptr) const;

 private:
  std::shared_ptr<const ExecutorPlan> plan_;
  ExecutorOptions options_;
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_EXECUTOR_H_
