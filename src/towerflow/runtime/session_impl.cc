#include "towerflow/runtime/session_impl.h"

#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "towerflow/core/logging.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/runtime/partition.h"
#include "towerflow/runtime/pitfall_detector.h"

namespace tw {
namespace {

int DefaultThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

std::string Signature(const FeedList& feeds, const std::vector<Output>& fetches,
                      const std::vector<Node*>& targets) {
  std::string sig = "f:";
  for (const auto& [out, t] : feeds) sig += std::to_string(out.node->id()) + ":" + std::to_string(out.index) + ",";
  sig += "|o:";
  for (const auto& out : fetches) sig += std::to_string(out.node->id()) + ":" + std::to_string(out.index) + ",";
  sig += "|t:";
  for (const Node* n : targets) sig += std::to_string(n->id()) + ",";
  return sig;
}

}  // namespace

SessionImpl::SessionImpl(Graph& graph, SessionOptions options) : graph_(graph), options_(options) {
  EnsureKernelsRegistered();
  const int intra = options_.intra_op_threads > 0 ? options_.intra_op_threads : DefaultThreads();
  const int inter = options_.inter_op_threads > 0 ? options_.inter_op_threads : DefaultThreads();
  SessionOptions device_options = options_;  // the device fields, threads resolved
  device_options.intra_op_threads = intra;
  StatusOr<std::unique_ptr<DeviceSet>> devices = DeviceSet::Create(device_options);
  if (!devices.ok()) {
    // Bad options fail every Run; one CPU device keeps the session well formed.
    init_status_ = devices.status();
    devices = DeviceSet::Create(SessionOptions{.intra_op_threads = intra});
  }
  device_set_ = std::move(devices).ValueOrDie();
  if (options_.log_device_placement) {
    const std::string out = DeviceMapping();
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
  // The thread that calls Run is one of a step's `inter` threads.
  if (inter > 1) inter_op_pool_ = std::make_unique<ThreadPool>("tw_inter_op", inter - 1);
  blocking_pool_ = std::make_unique<ElasticThreadPool>("tw_blocking");
  // TF places the whole graph when the session is created.
  std::lock_guard<std::mutex> lock(mu_);
  PlaceNewNodes();
}

std::vector<DeviceAttributes> SessionImpl::ListDevices() const {
  const auto& devices = device_set_->devices();
  int cpus = 0;
  for (const auto& d : devices) cpus += d->device_type() == kDeviceCpu;
  std::vector<DeviceAttributes> out;
  int cpu = 0;
  for (const auto& d : devices) {
    DeviceAttributes a;
    a.name = d->name();
    a.short_name = d->short_name();
    a.device_type = d->device_type();
    a.physical_description = d->physical_description();
    // Virtual CPU devices (towers on the cores) say so: they are what the
    // placement lines name.
    if (a.physical_description.empty() && d->device_type() == kDeviceCpu && cpus > 1) {
      a.physical_description = StrCat("virtual CPU device ", cpu, " of ", cpus, " on the host's cores");
    }
    cpu += d->device_type() == kDeviceCpu;
    a.intra_op_threads = d->intra_op_threads();
    out.push_back(std::move(a));
  }
  return out;
}

std::string SessionImpl::DeviceMapping() const {
  // TF's DirectSession prints the physical devices behind the local names
  // ("no known devices" for a lone CPU).
  std::string mapping;
  for (const DeviceAttributes& d : ListDevices()) {
    if (!d.physical_description.empty()) mapping += d.name + " -> " + d.physical_description + "\n";
  }
  return mapping.empty() ? "Device mapping: no known devices.\n" : "Device mapping:\n" + mapping;
}

void SessionImpl::PlaceNewNodes() {
  if (placement_.num_nodes() >= graph_.num_nodes()) return;
  PlacerOptions placer_options;
  placer_options.allow_soft_placement = options_.allow_soft_placement;
  placer_options.log_device_placement = options_.log_device_placement;
  placer_options.log_verbosity = options_.log_device_placement_verbosity;
  // Per-node failures stay in the placement; a plan that needs such a node
  // returns its error.
  Placer(graph_, *device_set_, KernelRegistry::Global(), placer_options).Run(&placement_).IgnoreError();
  for (const SharedBatchFinding& f : FindSharedBatches(graph_, placement_)) {
    if (!warned_dequeues_.insert(f.dequeue->id()).second) continue;
    if (options_.strict_tower_inputs) {
      if (tower_inputs_status_.ok()) {
        tower_inputs_status_ = errors::InvalidArgument(f.Message(), " (SessionOptions.strict_tower_inputs)");
      }
    } else {
      TW_LOG(WARNING) << f.Message();
    }
  }
}

SessionImpl::~SessionImpl() {
  Close();
  // Close() cancelled blocked kernels; the pools join threads that may still
  // reference kernels.
  blocking_pool_.reset();
  inter_op_pool_.reset();
}

void SessionImpl::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  resources_.CloseAll();
}

bool SessionImpl::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

Status SessionImpl::CheckFeed(const Output& output, const Tensor& value) const {
  if (!output.valid()) return errors::InvalidArgument("a feed key is a null Output");
  if (output.index >= output.node->num_outputs()) {
    return errors::InvalidArgument("feed ", output.node->name(), ":", output.index,
                                   " names an output the node does not have");
  }
  if (!value.IsInitialized()) {
    return errors::InvalidArgument("the value fed to ", output.name(), " is an uninitialized tensor");
  }
  if (value.dtype() != output.dtype()) {
    return errors::InvalidArgument("cannot feed a ", DataTypeName(value.dtype()), " tensor to ",
                                   output.name(), " of ", output.node->DebugName(), ", which has dtype ",
                                   DataTypeName(output.dtype()));
  }
  if (!output.shape().IsCompatibleWith(PartialShape(value.shape()))) {
    return errors::InvalidArgument("cannot feed a value of shape ", value.shape().ToString(), " to ",
                                   output.name(), " of ", output.node->DebugName(),
                                   ", which has shape ", output.shape().ToString());
  }
  return Status::OK();
}

StatusOr<OpKernel*> SessionImpl::GetKernel(const Node* node, Device* device) {
  // REQUIRES: mu_ held.
  auto it = kernels_.find(node->id());
  if (it != kernels_.end()) return it->second.get();
  TW_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                      KernelRegistry::Global().CreateKernel(*node, device));
  OpKernel* raw = kernel.get();
  kernels_[node->id()] = std::move(kernel);
  return raw;
}

StatusOr<OpKernel*> SessionImpl::GetFusedKernel(const Node* consumer, const PlannedFusion& fusion, Device* device) {
  // REQUIRES: mu_ held.
  std::vector<int> absorbed;
  for (const Node* n : fusion.Absorbed()) absorbed.push_back(n->id());
  auto key = std::make_tuple(consumer->id(), fusion.def, std::move(absorbed));
  auto it = fused_kernels_.find(key);
  if (it != fused_kernels_.end()) return it->second.get();
  TW_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                      KernelRegistry::Global().CreateFusedKernel(*fusion.def, *fusion.producer, *consumer, device));
  OpKernel* raw = kernel.get();
  fused_kernels_[std::move(key)] = std::move(kernel);
  return raw;
}

namespace {

// A step that runs some participants of a CollectiveAllReduce group but not
// all of them would wait forever for the others: InvalidArgument instead,
// naming the group and the participants the step runs.
Status CheckCollectiveGroups(const ExecutorPlan& plan) {
  std::map<std::string, std::vector<const Node*>> groups;
  for (const ExecutorPlan::Item& item : plan.items) {
    if (item.node->op() != "CollectiveAllReduce") continue;
    auto name = item.node->attrs().Get<std::string>("shared_name");
    if (name.ok()) groups[*name].push_back(item.node);
  }
  for (const auto& [name, nodes] : groups) {
    auto wanted = nodes[0]->attrs().Get<int64_t>("num_devices");
    if (!wanted.ok() || *wanted == static_cast<int64_t>(nodes.size())) continue;
    std::string present;
    for (const Node* n : nodes) present += (present.empty() ? "" : ", ") + n->name();
    return errors::InvalidArgument("CollectiveAllReduce group '", name, "' has ", *wanted,
                                   " participants but this step runs ", nodes.size(), " of them (", present,
                                   "); fetch or target what depends on all of them, or none");
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::shared_ptr<const ExecutorPlan>> SessionImpl::BuildPlan(const FeedList& feeds,
                                                                 const std::vector<Output>& fetches,
                                                                 const std::vector<Node*>& targets) {
  std::map<Output, int> feed_index;
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (!feed_index.emplace(feeds[i].first, static_cast<int>(i)).second) {
      return errors::InvalidArgument(feeds[i].first.name(), " is fed more than once");
    }
  }
  // Prune: walk back from fetches and targets; a fed output cuts its edge.
  std::vector<char> needed(static_cast<size_t>(graph_.num_nodes()), 0);
  std::vector<const Node*> stack;
  auto visit = [&](const Node* n) {
    if (!needed[static_cast<size_t>(n->id())]) {
      needed[static_cast<size_t>(n->id())] = 1;
      stack.push_back(n);
    }
  };
  for (const Output& f : fetches) {
    if (!f.valid()) return errors::InvalidArgument("a fetch is a null Output (did graph building fail?)");
    if (f.index >= f.node->num_outputs()) {
      return errors::InvalidArgument("fetch ", f.node->name(), ":", f.index, " does not exist");
    }
    if (!feed_index.count(f)) visit(f.node);
  }
  for (const Node* t : targets) {
    if (t == nullptr) return errors::InvalidArgument("a target is null (did graph building fail?)");
    visit(t);
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Output& in : n->inputs()) {
      if (!feed_index.count(in)) visit(in.node);
    }
    for (const Node* c : n->control_inputs()) visit(c);
  }

  std::map<int, PlannedFusion> fusions;
  if (options_.fuse_kernels) {
    std::set<const Node*> fetched(targets.begin(), targets.end());
    for (const Output& f : fetches) fetched.insert(f.node);
    fusions = ChooseFusions(
        graph_, needed, [&](const Output& o) { return feed_index.count(o) > 0; },
        [&](const Node* n) { return fetched.count(n) > 0; },
        [&](const Node* n) -> Device* {
          const NodePlacement& placed = placement_.at(n->id());
          return placed.status.ok() ? placed.device : nullptr;
        },
        KernelRegistry::Global());
    // Absorbed nodes run inside their consumer's item.
    for (const auto& [consumer, fusion] : fusions) {
      for (const FusedEdge& e : fusion.edges) needed[static_cast<size_t>(e.producer->id())] = 0;
    }
  }

  auto plan = std::make_shared<ExecutorPlan>();
  std::vector<int> item_of(static_cast<size_t>(graph_.num_nodes()), -1);
  for (int id = 0; id < graph_.num_nodes(); ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node* n = graph_.node(id);
    const NodePlacement& placed = placement_.at(id);
    if (!placed.status.ok()) return placed.status;
    ExecutorPlan::Item item;
    item.node = n;
    item.device = placed.device;
    if (auto fused = fusions.find(id); fused != fusions.end()) {
      auto parts = std::make_shared<ExecutorPlan::Item::Fused>();
      parts->nodes = fused->second.Absorbed();
      parts->inputs = fused->second.Inputs(n);
      item.fused = std::move(parts);
      TW_ASSIGN_OR_RETURN(item.kernel, GetFusedKernel(n, fused->second, placed.device));
    } else {
      TW_ASSIGN_OR_RETURN(item.kernel, GetKernel(n, placed.device));
      item.kernel_def = KernelRegistry::Global().Find(*n, placed.device->device_type());
    }
    item.entry_base = plan->num_entries;
    plan->num_entries += n->num_outputs();
    item_of[static_cast<size_t>(id)] = static_cast<int>(plan->items.size());
    plan->items.push_back(std::move(item));
  }
  // Control edges from an absorbed node wait on its consumer's item.
  for (const auto& [consumer, fusion] : fusions) {
    for (const FusedEdge& e : fusion.edges) {
      item_of[static_cast<size_t>(e.producer->id())] = item_of[static_cast<size_t>(consumer)];
    }
  }
  TW_RETURN_IF_ERROR(CheckCollectiveGroups(*plan));
  // Nodes are added in topological order (inputs exist before consumers), so
  // producers already have items. Edges between devices get transfer items,
  // appended after the node items.
  PlanPartitioner partitioner(plan.get(), device_set_->client_device());
  const int num_node_items = static_cast<int>(plan->items.size());
  for (int self = 0; self < num_node_items; ++self) {
    // Connect appends transfer items: read the item's node and fusion by value.
    ExecutorPlan::Item node_item;
    node_item.node = plan->items[static_cast<size_t>(self)].node;
    node_item.fused = plan->items[static_cast<size_t>(self)].fused;
    const Node* n = node_item.node;
    std::vector<int> control_items;
    for (const Node* c : n->control_inputs()) control_items.push_back(item_of[static_cast<size_t>(c->id())]);
    std::vector<ExecutorPlan::Input> inputs(static_cast<size_t>(node_item.NumInputs()));
    for (int i = 0; i < node_item.NumInputs(); ++i) {
      const Output& in = node_item.InputSource(i);
      ExecutorPlan::Input& src = inputs[static_cast<size_t>(i)];
      src.is_ref = node_item.InputIsRef(i);
      auto f = feed_index.find(in);
      if (f != feed_index.end()) {
        // Feeds are host tensors: one going into device memory is copied there.
        if (src.is_ref) {
          src.feed = f->second;  // as before: the consumer reads the fed value
        } else {
          partitioner.ConnectFeed(f->second, in.node, in.index, self, i, &src);
        }
      } else {
        TW_RETURN_IF_ERROR(partitioner.Connect(item_of[static_cast<size_t>(in.node->id())], in.index, self, i,
                                               src.is_ref, control_items, &src));
      }
    }
    plan->items[static_cast<size_t>(self)].inputs = std::move(inputs);
    for (int c : control_items) {
      plan->items[static_cast<size_t>(c)].successors.push_back(self);
      ++plan->items[static_cast<size_t>(self)].initial_pending;
    }
  }
  // Fetches are host tensors: a value in device memory gets a transfer to the host.
  for (const Output& f : fetches) {
    ExecutorPlan::Input src;
    auto it = feed_index.find(f);
    if (it != feed_index.end()) {
      src.feed = it->second;
    } else {
      TW_ASSIGN_OR_RETURN(src.entry, partitioner.HostEntry(item_of[static_cast<size_t>(f.node->id())], f.index));
    }
    plan->fetches.push_back(src);
  }
  plan->num_transfers = partitioner.num_transfers();
  for (size_t i = 0; i < plan->items.size(); ++i) {
    if (plan->items[i].initial_pending == 0) plan->roots.push_back(static_cast<int>(i));
  }
  plan->costs = std::make_shared<ExecutorPlan::Costs>(plan->items.size());
  CountEntryUses(plan.get());
  return std::shared_ptr<const ExecutorPlan>(std::move(plan));
}

StatusOr<std::shared_ptr<const ExecutorPlan>> SessionImpl::GetPlan(const FeedList& feeds,
                                                               const std::vector<Output>& fetches,
                                                               const std::vector<Node*>& targets) {
  for (const Output& f : fetches) {
    if (!f.valid()) return errors::InvalidArgument("a fetch is a null Output (did graph building fail?)");
  }
  for (const Node* t : targets) {
    if (t == nullptr) return errors::InvalidArgument("a target is null (did graph building fail?)");
  }
  const std::string sig = Signature(feeds, fetches, targets);
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return errors::Cancelled("the session is closed");
  TW_RETURN_IF_ERROR(tower_inputs_status_);
  auto it = plans_.find(sig);
  if (it != plans_.end()) return it->second;
  // Nodes added since the last placement (a new plan may need them).
  PlaceNewNodes();
  TW_RETURN_IF_ERROR(tower_inputs_status_);
  TW_ASSIGN_OR_RETURN(auto plan, BuildPlan(feeds, fetches, targets));
  plans_[sig] = plan;
  return plan;
}

StatusOr<std::vector<Tensor>> SessionImpl::Run(const FeedList& feeds, const std::vector<Output>& fetches,
                                           const std::vector<Node*>& targets, StepStats* stats) {
  TW_RETURN_IF_ERROR(init_status_);
  for (const auto& [out, value] : feeds) TW_RETURN_IF_ERROR(CheckFeed(out, value));
  TW_ASSIGN_OR_RETURN(auto plan, GetPlan(feeds, fetches, targets));
  std::vector<Tensor> feed_values;
  feed_values.reserve(feeds.size());
  for (const auto& [out, value] : feeds) feed_values.push_back(value);
  int64_t step_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    step_id = next_step_id_++;
  }
  // With the intra-op threads left to the session (0), a kernel on a device
  // without a pool of its own (virtual CPU devices sharing the cores) may use
  // the inter-op threads that are idle: the tail of a towers step (the
  // averaging and the update after the last tower) then runs on every core.
  Executor executor(plan, inter_op_pool_.get(), blocking_pool_.get(), &resources_, options_.collect_step_stats,
                    options_.check_numerics, /*lend_idle_threads=*/options_.intra_op_threads == 0);
  return executor.Run(feed_values, step_id, stats);
}

}  // namespace tw
