#include "towerflow/runtime/executor.h"

#include "towerflow/core/denormal.h"
#include "towerflow/core/spin_wait.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/runtime/check_numerics.h"
#include "towerflow/runtime/step_arena.h"
#include "towerflow/runtime/step_timings.h"
#include "towerflow/runtime/transfers.h"

namespace tw {
namespace {

const std::vector<ThreadPool*> kNoLaunchers;

// The mutable state of one step.
class StepState {
 public:
  StepState(const ExecutorPlan& plan, const std::vector<Tensor>& feeds, ThreadPool* pool,
            ElasticThreadPool* blocking_pool, ResourceMgr* resources, int64_t step_id, bool collect_stats,
            bool check_numerics, bool lend_idle_threads, const std::vector<ThreadPool*>* launchers,
            std::vector<std::unique_ptr<PendingCopy>>* deferred)
      : plan_(plan),
        launchers_(launchers != nullptr ? *launchers : kNoLaunchers),
        feeds_(feeds),
        pool_(pool),
        blocking_pool_(blocking_pool),
        resources_(resources),
        step_id_(step_id),
        collect_stats_(collect_stats),
        check_numerics_(check_numerics),
        idle_helpers_(lend_idle_threads ? pool : nullptr),
        entries_(static_cast<size_t>(plan.num_entries)),
        pending_(plan.items.size()),
        uses_(plan.entry_uses.size()),
        remaining_(static_cast<int64_t>(plan.items.size()) - plan.num_resolved - plan.num_absorbed),
        arena_(plan.arena != nullptr ? plan.arena->BeginStep() : nullptr),
        deferred_(deferred) {
    if (deferred_ != nullptr) deferred_entries_.assign(static_cast<size_t>(plan.num_entries), 0);
    for (size_t i = 0; i < plan.items.size(); ++i) {
      pending_[i].store(plan.items[i].initial_pending, std::memory_order_relaxed);
    }
    for (size_t e = 0; e < plan.entry_uses.size(); ++e) uses_[e].store(plan.entry_uses[e], std::memory_order_relaxed);
  }

  // The step's values go first, then the arena learns how the step ended
  // (its buffers still alive now are the ones that escaped it).
  ~StepState() {
    if (arena_ == nullptr) return;
    entries_.clear();
    bool ok;
    {
      std::lock_guard<std::mutex> lock(status_mu_);
      ok = status_.ok();
    }
    arena_->End(ok);
  }

  Status Run() {
    if (remaining_.load(std::memory_order_relaxed) == 0) return Status::OK();  // nothing left to run
    // Cheap roots (constants, variables, resource handles) and one expensive
    // root run here; the other expensive roots go to the pool so that
    // independent branches start at once.
    std::vector<int> here;
    int kept_expensive = -1;
    std::vector<std::vector<int>> to_launchers;
    for (int root : plan_.roots) {
      if (RouteToLauncher(root, -1, &to_launchers)) continue;
      if (pool_ == nullptr || !IsExpensive(root)) {
        here.push_back(root);
      } else if (kept_expensive < 0) {
        kept_expensive = root;
      } else {
        pool_->Schedule([this, root] { Process({root}, Thread::kInterOp); });
      }
    }
    ScheduleOnLaunchers(&to_launchers);
    // A stack: the expensive root runs after the cheap ones, which may feed it.
    if (kept_expensive >= 0) here.insert(here.begin(), kept_expensive);
    Process(std::move(here), Thread::kCaller);
    // The caller is one of the step's threads (the session's inter-op pool has
    // one fewer): until the step ends it runs queued work, then spins briefly
    // (the last nodes are usually microseconds away), and only then sleeps.
    while (!finished_.load(std::memory_order_acquire)) {
      if (pool_ != nullptr && pool_->TryRunOne()) continue;
      const bool woke = SpinUntil(
          [this] {
            return finished_.load(std::memory_order_acquire) || (pool_ != nullptr && pool_->HasQueuedWork());
          },
          kDefaultSpin);
      if (!woke) break;
    }
    std::unique_lock<std::mutex> lock(done_mu_);
    done_cv_.wait(lock, [this] { return done_; });
    std::lock_guard<std::mutex> status_lock(status_mu_);
    return status_;
  }

  // Resolves a value input: feeds, node outputs, and variable references
  // (read under the variable's lock; uninitialized is FailedPrecondition).
  // `producer` names the value when there is no consumer (transfers).
  Status Resolve(const ExecutorPlan::Input& in, const Output* source, TensorValue* out,
                 const Node* producer = nullptr) const {
    if (in.feed >= 0) {
      out->value = feeds_[static_cast<size_t>(in.feed)];
      return Status::OK();
    }
    const TensorValue& e =
        in.constant >= 0 ? plan_.constants[static_cast<size_t>(in.constant)] : entries_[static_cast<size_t>(in.entry)];
    if (!e.is_ref()) {
      out->value = e.value;
      return Status::OK();
    }
    std::lock_guard<std::mutex> lock(*e.ref_mu);
    if (in.is_ref) {
      // A ref consumer (Assign, IsVariableInitialized, Apply*) takes the variable
      // itself, initialized or not: initializing it is what Assign is for.
      out->value = *e.ref;
      out->ref = e.ref;
      out->ref_mu = e.ref_mu;
      return Status::OK();
    }
    if (!e.ref->IsInitialized()) {
      // A variable the plan resolved is named by its own node (its readers
      // may read it through a `read` Identity the plan dropped).
      const Output src = in.constant >= 0 ? Output(const_cast<Node*>(plan_.constant_nodes[static_cast<size_t>(in.constant)]), 0)
                         : source       ? *source
                                        : Output();
      return errors::FailedPrecondition(
          "Attempting to use uninitialized value ",
          src.valid() ? src.node->name() : producer ? producer->name() : std::string("<fetch>"));
    }
    out->value = *e.ref;
    return Status::OK();
  }

  // The fetched values; `copied[i]`: fetch i is a host tensor of its own,
  // still to be filled by a deferred copy.
  std::vector<Tensor> Fetches(Status* status, std::vector<char>* copied) const {
    std::vector<Tensor> out;
    for (const auto& f : plan_.fetches) {
      TensorValue v;
      Status s = Resolve(f, nullptr, &v);
      if (!s.ok()) {
        *status = s;
        return {};
      }
      out.push_back(std::move(v.value));
      copied->push_back(f.entry >= 0 && !deferred_entries_.empty() && deferred_entries_[static_cast<size_t>(f.entry)]);
    }
    return out;
  }

  int64_t kernel_ns() const { return timings_.kernel_ns(); }
  std::vector<StepStats::NodeTiming> TakeTimings() { return timings_.Take(); }

 private:
  // Expensive: worth a hand-off to another thread. Declared by the kernel,
  // unless this plan measured it below kCheapNs.
  bool IsExpensive(int id) const {
    const OpKernel* k = plan_.items[static_cast<size_t>(id)].kernel;
    if (k == nullptr || !k->IsExpensive()) return false;
    return plan_.costs == nullptr || !plan_.costs->MeasuredCheap(static_cast<size_t>(id));
  }

  // Whether a successor of item `id` waits for its peers (a collective).
  bool FeedsPeers(int id) const {
    for (int succ : plan_.items[static_cast<size_t>(id)].successors) {
      const OpKernel* k = plan_.items[static_cast<size_t>(succ)].kernel;
      if (k != nullptr && k->WaitsForPeers()) return true;
    }
    return false;
  }

  // Which kind of thread runs Process: the thread that called Run (idle until
  // the step ends anyway), an inter-op pool thread (shared by every step: must
  // never wait on a queue), a blocking-pool thread (one per waiting kernel),
  // or a GPU's launcher thread (ExecutorOptions::launchers: it runs that
  // GPU's items and nothing that may wait).
  enum class Thread { kCaller, kInterOp, kBlocking, kLauncher };

  // An item pinned to a launcher other than `mine` (-1: not a launcher
  // thread) joins that launcher's batch in `batches`: true when it did.
  bool RouteToLauncher(int id, int mine, std::vector<std::vector<int>>* batches) const {
    const int l = plan_.items[static_cast<size_t>(id)].launcher;
    if (l < 0 || l == mine || static_cast<size_t>(l) >= launchers_.size() || launchers_[static_cast<size_t>(l)] == nullptr) {
      return false;
    }
    if (batches->size() <= static_cast<size_t>(l)) batches->resize(static_cast<size_t>(l) + 1);
    (*batches)[static_cast<size_t>(l)].push_back(id);
    return true;
  }

  // Hands each batch to its launcher thread, in one task (one wake-up).
  void ScheduleOnLaunchers(std::vector<std::vector<int>>* batches) {
    for (size_t l = 0; l < batches->size(); ++l) {
      std::vector<int>& batch = (*batches)[l];
      if (batch.empty()) continue;
      const int launcher = static_cast<int>(l);
      launchers_[l]->Schedule(
          [this, launcher, b = std::move(batch)]() mutable { Process(std::move(b), Thread::kLauncher, launcher); });
      batch.clear();
    }
  }

  // Runs `first` and then, depth first, the successors that become ready on this
  // thread. A kernel that may block runs here unless this is an inter-op thread
  // and it would wait (or cannot tell); then it goes to the blocking pool, so
  // waiting never starves other steps. Running it in place when possible saves
  // two thread hand-offs per record in input pipelines, and per tower and step
  // in training, where the wait is usually none.
  void Process(std::vector<int> stack, Thread thread, int launcher = -1) {
    ScopedFlushDenormal flush_denormal;  // as TF's compute threads: see denormal.h
    std::vector<int> newly_ready, waits, feeds_peers, off_launcher;
    std::vector<std::vector<int>> to_launchers;
    // Expensive nodes waiting in `stack`: at most one, so that a second expensive
    // branch (another tower's MatMul) goes to the pool instead of queueing here.
    int expensive_in_stack = 0;
    for (int id : stack) expensive_in_stack += IsExpensive(id) ? 1 : 0;
    while (!stack.empty()) {
      const int id = stack.back();
      stack.pop_back();
      const ExecutorPlan::Item& item = plan_.items[static_cast<size_t>(id)];
      if (expensive_in_stack > 0 && IsExpensive(id)) --expensive_in_stack;
      bool ran = false;
      if (item.kernel != nullptr && item.kernel->MayBlock() && !aborted_.load(std::memory_order_acquire)) {
        // First without waiting, where the kernel can tell that it need not
        // (see OpKernel::MayBlock): then nothing moves to other threads. (A
        // blocking-pool thread got it because it would wait: it just waits.)
        ran = thread != Thread::kBlocking && item.kernel->CanTryWithoutWaiting() &&
              RunNode(id, item, /*may_wait=*/false);
        if (!ran && arena_ != nullptr) arena_->RestartItem(id);
        if (!ran && thread == Thread::kInterOp) {
          // An inter-op thread never waits: the kernel goes to a thread of its own.
          blocking_pool_->Schedule([this, id] { Process({id}, Thread::kBlocking); });
          continue;
        }
        // About to wait here: hand the other ready nodes of this thread to the
        // pool first so that they do not wait behind the queue. Without a
        // pool, a kernel waiting for its peers in this step hands them to the
        // blocking pool: one of them may be the peer it waits for.
        const bool peers = item.kernel->WaitsForPeers();
        while (!ran && (pool_ != nullptr || peers) && !stack.empty()) {
          const int other = stack.back();
          stack.pop_back();
          if (pool_ != nullptr) {
            pool_->Schedule([this, other] { Process({other}, Thread::kInterOp); });
          } else {
            blocking_pool_->Schedule([this, other] { Process({other}, Thread::kBlocking); });
          }
        }
        if (!ran && (pool_ != nullptr || peers)) expensive_in_stack = 0;
      }
      if (ran) {
        ReleaseInputs(item);
      } else if (!aborted_.load(std::memory_order_acquire)) {
        if (item.is_transfer()) {
          RunTransfer(item);
        } else {
          RunNode(id, item, /*may_wait=*/true);
        }
        ReleaseInputs(item);
      }
      newly_ready.clear();
      for (int succ : item.successors) {
        // One incoming edge (most nodes of a chain): this is its only count
        // down, so no other thread can touch it: ready without a locked op.
        if (plan_.items[static_cast<size_t>(succ)].initial_pending == 1 ||
            pending_[static_cast<size_t>(succ)].fetch_sub(1, std::memory_order_acq_rel) == 1) {
          newly_ready.push_back(succ);
        }
      }
      // Items pinned to another GPU go to its launcher. On a launcher thread,
      // this GPU's items run here in order (its stream's order) and the others
      // go to the inter-op pool, so the launcher never waits on host work.
      if (!launchers_.empty()) {
        size_t kept = 0;
        for (int succ : newly_ready) {
          if (RouteToLauncher(succ, launcher, &to_launchers)) continue;
          if (thread == Thread::kLauncher && plan_.items[static_cast<size_t>(succ)].launcher != launcher &&
              pool_ != nullptr) {
            off_launcher.push_back(succ);
            continue;
          }
          if (thread == Thread::kLauncher) {
            stack.push_back(succ);
            continue;
          }
          newly_ready[kept++] = succ;
        }
        newly_ready.resize(kept);
        ScheduleOnLaunchers(&to_launchers);
        if (!off_launcher.empty()) {
          pool_->Schedule([this, b = std::move(off_launcher)]() mutable { Process(std::move(b), Thread::kInterOp); });
          off_launcher.clear();
        }
      }
      // A blocking-pool thread ran a kernel that may wait (a tower's dequeue,
      // handed over by an inter-op thread): what it made ready goes back to the
      // inter-op pool, so that a step computes on as many threads as the pool
      // has cores for (the tower's nodes ran on this extra thread: three busy
      // threads on two cores for two towers).
      // The cheap ones go together, each expensive one apart.
      if (thread == Thread::kBlocking && pool_ != nullptr) {
        std::vector<int> cheap;
        for (int succ : newly_ready) {
          if (IsExpensive(succ)) {
            pool_->Schedule([this, succ] { Process({succ}, Thread::kInterOp); });
          } else {
            cheap.push_back(succ);
          }
        }
        if (!cheap.empty()) pool_->Schedule([this, cheap] { Process(cheap, Thread::kInterOp); });
        newly_ready.clear();
      }
      // Cheap nodes run here; of the expensive ones, one stays on this thread and
      // the others go to the pool so that independent branches run in parallel.
      int kept_expensive = -1;
      waits.clear();
      for (int succ : newly_ready) {
        // A collective that waits for its peers (other towers, other processes)
        // starts at once on a thread of its own while this thread has other
        // work: pushed under this thread's
        // depth-first work it would start only once that work is done, and a
        // gradient bucket reduced across processes would not overlap the rest
        // of the backward pass (measured: the CNN's first bucket, ready 30 ms
        // into a 95 ms backward pass, started after it).
        // When nothing else is left on this thread it runs here, without a
        // hand-off (the last bucket of a step).
        if (const OpKernel* k = plan_.items[static_cast<size_t>(succ)].kernel;
            k != nullptr && k->WaitsForPeers() && (!stack.empty() || newly_ready.size() > 1)) {
          blocking_pool_->Schedule([this, succ] { Process({succ}, Thread::kBlocking); });
          continue;
        }
        // A copy that waits for a GPU goes under everything else ready here:
        // this thread first queues the device work that is ready (a fetched
        // loss would otherwise hold the whole backward pass until the GPU
        // had finished the forward one), then waits.
        if (plan_.items[static_cast<size_t>(succ)].waits_for_device()) {
          waits.push_back(succ);
          continue;
        }
        // Transfers are cheap (a shared buffer or one copy, no kernel): inline.
        if (pool_ == nullptr || !IsExpensive(succ)) {
          // A node that feeds a collective runs next, not under the depth-first
          // work pushed after it: the collective then starts as early as it can.
          if (FeedsPeers(succ)) {
            feeds_peers.push_back(succ);
            continue;
          }
          stack.push_back(succ);
        } else if (kept_expensive < 0 && expensive_in_stack == 0) {
          kept_expensive = succ;
        } else {
          pool_->Schedule([this, succ] { Process({succ}, Thread::kInterOp); });
        }
      }
      // Pushed last, so it runs after the cheap nodes that may feed it.
      if (kept_expensive >= 0) {
        stack.insert(stack.begin(), kept_expensive);
        ++expensive_in_stack;
      }
      stack.insert(stack.begin(), waits.begin(), waits.end());
      stack.insert(stack.end(), feeds_peers.begin(), feeds_peers.end());
      feeds_peers.clear();
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(done_mu_);
        done_ = true;
        finished_.store(true, std::memory_order_release);
        done_cv_.notify_all();
      }
    }
  }

  // Runs item's kernel; true when it ran (its outputs stored, or the step
  // failed). With may_wait false the kernel may decline instead (false: it
  // would have waited, and nothing changed: its inputs stay in place for the
  // thread that runs it again).
  bool RunNode(int id, const ExecutorPlan::Item& item, bool may_wait) {
    const Node* node = item.node;
    std::vector<TensorValue> inputs(item.inputs.size());
    for (size_t i = 0; i < item.inputs.size(); ++i) {
      if (may_wait && TakeIfLastReader(item.inputs[i], &inputs[i])) continue;
      Status s = Resolve(item.inputs[i], &item.InputSource(static_cast<int>(i)), &inputs[i]);
      if (!s.ok()) {
        Fail(item, s);
        return true;
      }
    }
    OpKernelContext::Params params;
    // A fused item's context is its consumer's (whose outputs it makes); its
    // kernel reads the producer's attrs itself, and Fail names both nodes.
    params.node = node;
    params.device = item.device;
    params.resources = resources_;
    params.inputs = &inputs;
    params.step_id = step_id_;
    params.cancellation = &cancellation_;
    params.idle_helpers = idle_helpers_;
    if (item.kernel_def != nullptr && !item.kernel_def->host_memory_outputs.empty()) {
      params.host_memory_outputs = &item.kernel_def->host_memory_outputs;
    }
    params.may_wait = may_wait;
    if ((item.fused != nullptr && item.fused->group) || item.region != nullptr) params.num_outputs = item.NumOutputs();
    if (arena_ != nullptr) params.allocator = arena_->ItemAllocator(id);
    std::vector<Allocator*> lent;
    if (!item.output_sinks.empty()) {
      lent.assign(static_cast<size_t>(item.NumOutputs()), nullptr);
      for (const ExecutorPlan::Item::OutputSink& sink : item.output_sinks) {
        lent[static_cast<size_t>(sink.output)] =
            plan_.items[static_cast<size_t>(sink.consumer)].kernel->InputAllocator(sink.input);
      }
      params.output_allocators = &lent;
    }
    OpKernelContext ctx(params);
    const bool sample = item.kernel->IsExpensive() && plan_.costs != nullptr && plan_.costs->Sample(static_cast<size_t>(id));
    const bool timed = collect_stats_ || sample;
    auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    item.kernel->Compute(&ctx);
    if (!may_wait && ctx.would_wait()) return false;  // (a kernel allowed to wait has no say)
    const auto end = timed ? std::chrono::steady_clock::now() : start;
    if (sample) plan_.costs->Record(static_cast<size_t>(id), std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    if (collect_stats_) timings_.AddKernel(item, start, end);
    if (!ctx.status().ok()) {
      Fail(item, ctx.status());
      return true;
    }
    for (int o = 0; o < ctx.num_outputs(); ++o) {
      TensorValue& out = ctx.output(o);
      if (!out.is_ref() && !out.value.IsInitialized()) {
        Fail(item, errors::Internal("kernel did not set output ", o));
        return true;
      }
      if (check_numerics_ && !out.is_ref()) {
        if (Status finite = CheckOutputNumerics(item, o, out.value); !finite.ok()) {
          Fail(item, finite);
          return true;
        }
      }
      const int entry = item.OutputEntry(o);
      if (arena_ != nullptr && arena_->recording() && !out.is_ref()) arena_->NoteEntry(entry, out.value);
      entries_[static_cast<size_t>(entry)] = std::move(out);
    }
    return true;
  }

  // The Recv half of a cross-device edge: the producer's value, copied into
  // the destination device's memory.
  void RunTransfer(const ExecutorPlan::Item& item) {
    auto start = collect_stats_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    // One value, or a step's fetches from one device (copied with one wait).
    std::vector<Tensor> values(item.inputs.size()), copies;
    Status s;
    for (size_t i = 0; i < item.inputs.size() && s.ok(); ++i) {
      TensorValue value;
      s = Resolve(item.inputs[i], nullptr, &value, item.node);
      values[i] = std::move(value.value);
    }
    // A copy that only fetches read, out of a device's own memory, is queued
    // and not waited for when the caller defers its fetches.
    const bool deferred = deferred_ != nullptr && item.fetch_copy && item.waits_for_device();
    std::unique_ptr<PendingCopy> pending;
    if (s.ok()) s = CopyValues(values, item.transfer_from, item.device, &copies, deferred ? &pending : nullptr);
    if (pending != nullptr) {
      std::lock_guard<std::mutex> lock(deferred_mu_);
      deferred_->push_back(std::move(pending));
      for (size_t i = 0; i < copies.size(); ++i) deferred_entries_[static_cast<size_t>(item.entry_base) + i] = 1;
    }
    if (collect_stats_) timings_.AddTransfer(item, start, std::chrono::steady_clock::now());
    if (!s.ok()) {
      return Fail(item.node, s.WithContext("transferring output " + std::to_string(item.transfer_output) +
                                           " from " + item.transfer_from->name() + " to " + item.device->name()));
    }
    for (size_t i = 0; i < copies.size(); ++i) {
      const int entry = item.entry_base + static_cast<int>(i);
      if (arena_ != nullptr && arena_->recording()) arena_->NoteEntry(entry, copies[i]);
      entries_[static_cast<size_t>(entry)].value = std::move(copies[i]);
    }
  }

  // When this reader is the last of a plain value's readers (every other one
  // has run), it takes the value out of the entry instead of sharing it: the
  // kernel may then hold the buffer's only reference and write its output
  // there (OpKernelContext::forward_input_or_allocate_output).
  bool TakeIfLastReader(const ExecutorPlan::Input& in, TensorValue* out) {
    if (in.entry < 0 || in.is_ref || uses_.empty()) return false;
    if (uses_[static_cast<size_t>(in.entry)].load(std::memory_order_acquire) != 1) return false;
    TensorValue& e = entries_[static_cast<size_t>(in.entry)];
    if (e.is_ref()) return false;
    out->value = std::move(e.value);
    e = TensorValue();
    return true;
  }

  // `item` has run: its inputs' last reader drops the step's reference to the
  // value. Every reader has resolved its input before counting down, so no
  // one reads a released entry.
  void ReleaseInputs(const ExecutorPlan::Item& item) {
    if (uses_.empty()) return;
    for (const ExecutorPlan::Input& in : item.inputs) {
      if (in.entry < 0) continue;
      // A value read once is released by its reader without a locked op.
      if (plan_.entry_uses[static_cast<size_t>(in.entry)] == 1 ||
          uses_[static_cast<size_t>(in.entry)].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        entries_[static_cast<size_t>(in.entry)] = TensorValue();
      }
    }
  }

  // A fused item's failure names all of its nodes.
  void Fail(const ExecutorPlan::Item& item, const Status& s) {
    if (item.region != nullptr) return Fail(static_cast<const Node*>(nullptr), s);  // it names its member
    if (item.fused == nullptr) return Fail(item.node, s);
    std::string with;
    for (const Node* n : item.fused->nodes) with += (with.empty() ? "" : ", ") + n->DebugName();
    Fail(item.node, s.WithContext("fused with " + with));
  }

  void Fail(const Node* node, const Status& s) {
    {
      std::lock_guard<std::mutex> lock(status_mu_);
      if (status_.ok()) status_ = node != nullptr ? s.WithContext("node " + node->DebugName()) : s;
      aborted_.store(true, std::memory_order_release);
    }
    // Wakes kernels waiting on nodes of this step that will now never run.
    cancellation_.StartCancel();
  }

  const ExecutorPlan& plan_;
  const std::vector<ThreadPool*>& launchers_;  // ExecutorOptions::launchers
  const std::vector<Tensor>& feeds_;
  ThreadPool* pool_;
  ElasticThreadPool* blocking_pool_;
  ResourceMgr* resources_;
  int64_t step_id_;
  bool collect_stats_;
  bool check_numerics_;
  ThreadPool* idle_helpers_;  // OpKernelContext::Params::idle_helpers
  std::vector<TensorValue> entries_;  // each written once, by its producer, before successors run
  std::vector<std::atomic<int>> pending_;
  std::vector<std::atomic<int>> uses_;  // readers of each entry yet to finish (plan.entry_uses)
  std::atomic<int64_t> remaining_;
  std::atomic<bool> aborted_{false};
  CancellationManager cancellation_;
  StepTimings timings_;  // when collect_stats_
  std::mutex status_mu_;
  Status status_;  // guarded by status_mu_
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;  // guarded by done_mu_
  std::atomic<bool> finished_{false};  // done_, readable without done_mu_ (spinning)
  StepArena* arena_;  // null: the devices' allocators; ends in the destructor
  // Executor::Run's `deferred`: the fetch copies queued and not waited for,
  // and the entries they fill (each written once, before the step ends).
  std::vector<std::unique_ptr<PendingCopy>>* deferred_;
  std::mutex deferred_mu_;
  std::vector<char> deferred_entries_;
};

}  // namespace

Executor::Executor(std::shared_ptr<const ExecutorPlan> plan, const ExecutorOptions& options)
    : plan_(std::move(plan)), options_(options) {}

StatusOr<std::vector<Tensor>> Executor::Run(const std::vector<Tensor>& feeds, int64_t step_id, StepStats* stats,
                                            std::vector<std::unique_ptr<PendingCopy>>* deferred) const {
  std::vector<Tensor> out;
  std::vector<char> copied;
  {
    StepState step(*plan_, feeds, options_.inter_op_pool, options_.blocking_pool, options_.resources, step_id,
                   options_.collect_stats || stats != nullptr, options_.check_numerics, options_.lend_idle_threads,
                   options_.launchers, deferred);
    TW_RETURN_IF_ERROR(step.Run());
    Status s;
    out = step.Fetches(&s, &copied);
    TW_RETURN_IF_ERROR(s);
    if (stats) {
      stats->kernel_ns = step.kernel_ns();
      stats->nodes = step.TakeTimings();
    }
  }
  // The step's entries are gone: a fetched buffer that is still shared belongs
  // to a variable (updated in place by later steps), a constant or a feed. Copy
  // it so that what the caller holds never changes under it, as TF's fetches
  // (copied out to the client) never do.
  // (A deferred copy's tensors are the copy's own, shared with it only.)
  for (size_t i = 0; i < out.size(); ++i) {
    Tensor& t = out[i];
    if (!copied[i] && t.buffer() && t.buffer().use_count() > 1) t = t.DeepCopy();
  }
  return out;
}

}  // namespace tw
