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

#include <atomic>
#include <memory>
#include <vector>

#include "towerflow/device/op_kernel.h"
#include "towerflow/runtime/step_stats.h"

namespace tw {

struct KernelDef;

struct ExecutorPlan {
  struct Input {
    int entry = -1;  // index of a producer output in the step's entry table, or
    int feed = -1;   // index into the step's feeds
    bool is_ref = false;  // the consumer takes the variable itself
  };
  struct Item {
    const Node* node = nullptr;
    OpKernel* kernel = nullptr;  // null for a transfer
    // The kernel's registration: which of its inputs and outputs live in host
    // memory on a device without host memory. Null for a transfer.
    const KernelDef* kernel_def = nullptr;
    Device* device = nullptr;    // where the kernel runs: its allocator and intra-op pool
    int entry_base = 0;  // entries [entry_base, entry_base + num_outputs)
    std::vector<Input> inputs;
    std::vector<int> successors;  // one per edge, so pending counts match
    int initial_pending = 0;
    // A transfer (partition.h: the Send/Recv pair of a cross-device edge) copies
    // output `transfer_output` of `node`, produced on `transfer_from`, from
    // inputs[0] into its one entry on `device`.
    Device* transfer_from = nullptr;
    int transfer_output = 0;
    bool is_transfer() const { return transfer_from != nullptr; }
    // A copy out of a device's own memory into host memory: it waits for the
    // device's queued work (a GPU's stream) before the copy returns.
    bool waits_for_device() const {
      return is_transfer() && !transfer_from->host_memory() && device->host_memory();
    }
    // A fused item (fusion.h) runs `node` together with the nodes that feed
    // it in `fused->nodes` (PlannedFusion::Absorbed's order: node's direct
    // producer last):
    // its inputs are `fused->inputs` in order, each an input (node, index) of
    // one of them; its outputs are node's.
    struct Fused {
      std::vector<const Node*> nodes;
      std::vector<std::pair<const Node*, int>> inputs;
    };
    std::shared_ptr<const Fused> fused;
    // A node item's inputs: how many, the graph output input `i` reads, and
    // whether the kernel takes it by reference.
    int NumInputs() const;
    const Output& InputSource(int i) const;
    bool InputIsRef(int i) const;
  };
  std::vector<Item> items;
  // What the plan's steps learn about their kernels (TF's KernelStats): the
  // measured cost of each item, so that a kernel that declares itself
  // expensive but runs in a few microseconds on this plan's shapes stays on
  // the thread that made it ready instead of paying a hand-off to the pool.
  // The only mutable part of a plan; updated without locks by its steps.
  struct Costs {
    explicit Costs(size_t n) : ns(new std::atomic<int64_t>[n]), runs(new std::atomic<uint32_t>[n]) {
      for (size_t i = 0; i < n; ++i) {
        ns[i].store(-1, std::memory_order_relaxed);  // unknown: expensive
        runs[i].store(0, std::memory_order_relaxed);
      }
    }
    std::unique_ptr<std::atomic<int64_t>[]> ns;    // moving average of Compute's time; -1 unknown
    std::unique_ptr<std::atomic<uint32_t>[]> runs;
  };
  std::shared_ptr<Costs> costs;  // one entry per item; null: declared costs only
  int num_entries = 0;
  // Per entry, how many item inputs read it (CountEntryUses): a step drops its
  // reference to an entry's value when the last of them has run, so that the
  // buffer goes back to the allocator (and is reused, warm in cache, by the
  // kernels after it) instead of living to the end of the step, as TF's
  // executor does. Fetched entries are kept. Empty: every entry lives to the
  // end of the step.
  std::vector<int> entry_uses;
  int num_transfers = 0;  // transfer items among `items`
  std::vector<int> roots;           // items with no pending inputs
  std::vector<Input> fetches;       // where each fetched value comes from
};

// Fills plan->entry_uses from the items' inputs and the fetches. Call once
// the plan's items, transfers and fetches are final.
void CountEntryUses(ExecutorPlan* plan);


class Executor {
 public:
  // `inter_op_pool` may be null: every node then runs on the calling thread
  // (blocking kernels still go to `blocking_pool`, which must not be null).
  // `check_numerics`: after each kernel, its float outputs are scanned, and the
  // first NaN or Inf fails the step with InvalidArgument naming the node, the
  // op, the output, its shape and device (tf.add_check_numerics_ops for every op).
  // `lend_idle_threads`: kernels on devices without an intra-op pool of their
  // own split their work over idle threads of `inter_op_pool`
  // (OpKernelContext::Params::idle_helpers).
  Executor(std::shared_ptr<const ExecutorPlan> plan, ThreadPool* inter_op_pool,
           ElasticThreadPool* blocking_pool, ResourceMgr* resources, bool collect_stats,
           bool check_numerics = false, bool lend_idle_threads = false);

  // Runs one step. `feeds` must match the plan's feed indices.
  StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& feeds, int64_t step_id,
                                    StepStats* stats = nullptr) const;

 private:
  std::shared_ptr<const ExecutorPlan> plan_;
  ThreadPool* pool_;
  ElasticThreadPool* blocking_pool_;
  ResourceMgr* resources_;
  bool collect_stats_;
  bool check_numerics_;
  bool lend_idle_threads_;
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_EXECUTOR_H_
