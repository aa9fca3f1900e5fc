// ExecutorPlan: the immutable program of one step, built once per run
// signature (feeds, fetches, targets) by PlanBuilder (plan_builder.h) and run
// by the Executor (executor.h) as often as the session is asked to.
//
// A plan lists the items a step runs: one per node the fetches and targets
// need (with its kernel, or one fused kernel for a producer-consumer group,
// fusion.h), and one per cross-device transfer (partition.h). Each item knows
// where its inputs come from (an entry of the step's table of values, or a
// feed) and which items wait for it. Everything here is fixed when the plan is
// built except the measured costs (Costs), which the plan's steps update.
#ifndef TOWERFLOW_RUNTIME_PLAN_H_
#define TOWERFLOW_RUNTIME_PLAN_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "towerflow/device/op_kernel.h"

namespace tw {

struct KernelDef;
class ArenaPool;  // step_arena.h
class StepGraphKernel;  // step_graph.h

struct ExecutorPlan {
  struct Input {
    int entry = -1;  // index of a producer output in the step's entry table, or
    int feed = -1;   // index into the step's feeds
    int constant = -1;  // index into the plan's constants
    bool is_ref = false;  // the consumer takes the variable itself
  };
  struct Item {
    const Node* node = nullptr;
    OpKernel* kernel = nullptr;  // null for a transfer
    // The kernel's registration: which of its inputs and outputs live in host
    // memory on a device without host memory. Null for a transfer.
    const KernelDef* kernel_def = nullptr;
    Device* device = nullptr;    // where the kernel runs: its allocator and intra-op pool
    // The launcher thread that runs this item (executor.h's
    // ExecutorOptions::launchers: the index of its GPU), -1: any thread.
    // Kernels and copies into a GPU's memory are its GPU's; kernels that may
    // block are no launcher's.
    int launcher = -1;
    int entry_base = 0;  // entries [entry_base, entry_base + num_outputs)
    std::vector<Input> inputs;
    std::vector<int> successors;  // one per edge, so pending counts match
    int initial_pending = 0;
    // A transfer (partition.h: the Send/Recv pair of a cross-device edge) copies
    // output `transfer_output` of `node`, produced on `transfer_from`, from
    // inputs[0] into its one entry on `device`. A step's fetches from one
    // device are one transfer: inputs[i] into entry entry_base + i, with one
    // wait for the device (`node`/`transfer_output` name the first).
    Device* transfer_from = nullptr;
    int transfer_output = 0;
    bool is_transfer() const { return transfer_from != nullptr; }
    // A transfer whose values only the step's fetches read: a step run with
    // deferred fetches (Executor::Run) queues its copy and does not wait.
    bool fetch_copy = false;
    // Run when the plan was built (a kernel whose outputs are fixed, read
    // directly by every consumer, plan_resolve.h): its outputs are the plan's
    // `constants`, and steps never run it (no successors, not a root).
    bool resolved = false;
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
    // An update group (update_groups.h) is a Fused item too: `nodes` are its
    // members, `inputs` every member's inputs in turn, and its outputs every
    // member's outputs in turn; `node` is the first member.
    struct Fused {
      std::vector<const Node*> nodes;
      std::vector<std::pair<const Node*, int>> inputs;
      bool group = false;
    };
    std::shared_ptr<const Fused> fused;
    // A step graph (step_graph.h) runs the kernels of one GPU's `members`
    // (items of this plan, now `absorbed`: steps never run them) as one item:
    // its inputs are what the members read from outside it (`sources` names
    // each, for errors), and its output o is written to entry outputs[o],
    // where the members' readers outside it find their values as before.
    struct Region {
      std::vector<int> members;  // in an order their edges allow
      std::vector<int> outputs;  // entries
      std::vector<std::pair<const Node*, int>> output_sources;  // the node output each one is
      std::vector<Output> sources;
    };
    std::shared_ptr<const Region> region;
    bool absorbed = false;
    // Outputs of this node item read by a kernel that lends its inputs'
    // allocators (OpKernel::LendsInputBuffers) on the same device: output
    // `output` is input `input` of item `consumer`, whose kernel's
    // InputAllocator(input) it is allocated from (AddOutputSinks).
    struct OutputSink {
      int output = 0;
      int consumer = 0;
      int input = 0;
    };
    std::vector<OutputSink> output_sinks;
    // The entry that output `o` is written to.
    int OutputEntry(int o) const {
      return region != nullptr ? region->outputs[static_cast<size_t>(o)] : entry_base + o;
    }
    // A node item's inputs: how many, the graph output input `i` reads, and
    // whether the kernel takes it by reference.
    int NumInputs() const;
    // A node item's outputs: its node's, or every member's of a group.
    int NumOutputs() const;
    // The node and output index that output `o` of this item is.
    std::pair<const Node*, int> OutputSource(int o) const;
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

    // A hand-off (queue, futex wake, a cache-cold thread) costs several
    // microseconds on common machines; kernels cheaper than this run inline.
    static constexpr int64_t kCheapNs = 10'000;
    static constexpr uint32_t kWarmupSamples = 4;
    static constexpr uint32_t kSampleEvery = 64;

    // Item `i` was measured below kCheapNs.
    bool MeasuredCheap(size_t i) const {
      const int64_t t = ns[i].load(std::memory_order_relaxed);
      return t >= 0 && t < kCheapNs;
    }
    // Whether this run of item `i` is timed: its first runs, then one in
    // kSampleEvery (costs drift with load). A load and a store, not an atomic
    // increment (a locked instruction on every kernel of every step): steps
    // racing on one plan may lose a count, which only shifts the next sample.
    bool Sample(size_t i) const {
      const uint32_t n = runs[i].load(std::memory_order_relaxed);
      runs[i].store(n + 1, std::memory_order_relaxed);
      return n < kWarmupSamples || n % kSampleEvery == 0;
    }
    void Record(size_t i, int64_t t) const {
      const int64_t old = ns[i].load(std::memory_order_relaxed);
      ns[i].store(old < 0 ? t : (old * 7 + t) / 8, std::memory_order_relaxed);
    }
  };
  std::shared_ptr<Costs> costs;  // one entry per item; null: declared costs only
  // Where the steps' buffers come from once their sizes repeat (step_arena.h);
  // null: from the devices' allocators. Mutable like `costs`.
  std::shared_ptr<ArenaPool> arena;
  int num_entries = 0;
  // Per entry, how many item inputs read it (CountEntryUses): a step drops its
  // reference to an entry's value when the last of them has run, so that the
  // buffer goes back to the allocator (and is reused, warm in cache, by the
  // kernels after it) instead of living to the end of the step, as TF's
  // executor does. Fetched entries are kept. Empty: every entry lives to the
  // end of the step.
  std::vector<int> entry_uses;
  int num_transfers = 0;  // transfer items among `items`
  int num_resolved = 0;   // resolved items among `items`
  int num_absorbed = 0;   // items run by a step graph's item
  // The plan's step graphs (the kernels of its region items), for stats.
  std::vector<std::shared_ptr<StepGraphKernel>> step_graphs;
  // The outputs of resolved items (Const values, variable references), read
  // by Input::constant: never released, never written.
  std::vector<TensorValue> constants;
  std::vector<const Node*> constant_nodes;  // the node each constant is an output of
  std::vector<int> roots;           // items with no pending inputs
  std::vector<Input> fetches;       // where each fetched value comes from
};

// Fills plan->entry_uses from the items' inputs and the fetches. Call once
// the plan's items, transfers and fetches are final.
void CountEntryUses(ExecutorPlan* plan);

// Fills each node item's output_sinks: its outputs that a lending kernel
// (OpKernel::LendsInputBuffers) reads as a value on the same device. Items
// run by a step graph, resolved items and transfers lend and borrow nothing.
// Call once the plan's items are final.
void AddOutputSinks(ExecutorPlan* plan);

// Whether output `o` of a node item is in host memory (its device's memory is
// host memory, or its kernel keeps that output on the host:
// KernelDef::host_memory_outputs), and whether input `i` must be.
bool OutputInHostMemory(const ExecutorPlan::Item& item, int o);
bool InputInHostMemory(const ExecutorPlan::Item& item, int i);

// What a plan runs per step, for logs and tests: its items by kind.
struct PlanCounts {
  int items = 0;      // everything a step runs
  int kernels = 0;    // node items (each fused item counts once)
  int resolved = 0;   // items run when the plan was built, not counted above
  int step_graphs = 0;  // kernels above that run a step graph
  int captured = 0;  // node items run by a step graph, not counted above
  int fused = 0;      // node items that run a fused kernel
  int transfers = 0;  // cross-device and cross-memory copies
  int device_waits = 0;  // transfers that wait for a device (GPU to host)
  int roots = 0;
  // "12 items: 10 kernels (1 fused, 1 step graph of 30), 2 transfers (1 wait
  // for a device), 3 roots; 4 resolved"
  std::string ToString() const;
};
PlanCounts CountItems(const ExecutorPlan& plan);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_PLAN_H_
