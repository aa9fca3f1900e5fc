#include "towerflow/runtime/session_impl.h"

#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "towerflow/core/logging.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/runtime/plan_builder.h"
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
  if (options_.gpu_launcher_threads) {
    for (const auto& d : device_set_->devices()) {
      if (d->device_type() != kDeviceGpu) continue;
      if (launchers_.size() <= static_cast<size_t>(d->index())) launchers_.resize(static_cast<size_t>(d->index()) + 1);
      launcher_threads_.push_back(std::make_unique<ThreadPool>(StrCat("tw_gpu", d->index()), 1));
      launchers_[static_cast<size_t>(d->index())] = launcher_threads_.back().get();
    }
  }
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
  launcher_threads_.clear();
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

StatusOr<OpKernel*> SessionImpl::Kernel(const Node* node, Device* device) {
  // REQUIRES: mu_ held.
  auto it = kernels_.find(node->id());
  if (it != kernels_.end()) return it->second.get();
  TW_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                      KernelRegistry::Global().CreateKernel(*node, device));
  OpKernel* raw = kernel.get();
  kernels_[node->id()] = std::move(kernel);
  return raw;
}

StatusOr<OpKernel*> SessionImpl::FusedKernel(const Node* consumer, const PlannedFusion& fusion, Device* device) {
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

StatusOr<OpKernel*> SessionImpl::GroupKernel(const PlannedGroup& group) {
  // REQUIRES: mu_ held.
  std::vector<int> ids;
  for (const Node* m : group.members) ids.push_back(m->id());
  auto key = std::make_pair(group.def, std::move(ids));
  auto it = group_kernels_.find(key);
  if (it != group_kernels_.end()) return it->second.get();
  StatusOr<std::unique_ptr<OpKernel>> kernel = group.def->factory(group.members, group.device);
  if (!kernel.ok()) {
    return kernel.status().WithContext("creating the grouped kernel of " + group.members[0]->DebugName() + " and " +
                                       std::to_string(group.members.size() - 1) + " more");
  }
  OpKernel* raw = kernel->get();
  group_kernels_[std::move(key)] = std::move(kernel).value();
  return raw;
}

StatusOr<std::shared_ptr<const ExecutorPlan>> SessionImpl::BuildPlan(const FeedList& feeds,
                                                                     const std::vector<Output>& fetches,
                                                                     const std::vector<Node*>& targets) {
  // REQUIRES: mu_ held.
  std::vector<Output> fed;
  fed.reserve(feeds.size());
  for (const auto& [out, value] : feeds) fed.push_back(out);
  PlanOptions plan_options;
  plan_options.fuse_kernels = options_.fuse_kernels;
  plan_options.gpu_launchers = !launchers_.empty();
  plan_options.resources = &resources_;
  switch (options_.step_arena) {
    case SessionOptions::ArenaMode::kAuto: plan_options.arena = PlanOptions::Arena::kDeviceMemory; break;
    case SessionOptions::ArenaMode::kOn: plan_options.arena = PlanOptions::Arena::kAll; break;
    case SessionOptions::ArenaMode::kOff: plan_options.arena = PlanOptions::Arena::kOff; break;
  }
  using Graphs = StepGraphOptions::Devices;
  switch (options_.cuda_graphs) {
    case SessionOptions::StepGraphMode::kAuto: plan_options.step_graphs.devices = Graphs::kCapturingDevices; break;
    case SessionOptions::StepGraphMode::kOn: plan_options.step_graphs.devices = Graphs::kAllGpus; break;
    case SessionOptions::StepGraphMode::kOff: plan_options.step_graphs.devices = Graphs::kNone; break;
  }
  // Check-numerics reads every kernel's outputs, which a replay does not make apart.
  if (options_.check_numerics) plan_options.step_graphs.devices = Graphs::kNone;
  // A CUDA capture records whatever any thread queues on the GPU's stream: a
  // step's other GPU kernels must wait for it, which only launcher threads
  // make safe (another thread could hold a cuDNN handle the capture needs
  // while its allocation waits for the capture to end). Fake GPUs record
  // nothing from other threads.
  if (launchers_.empty() && plan_options.step_graphs.devices != Graphs::kNone) {
    plan_options.step_graphs.devices =
        plan_options.step_graphs.devices == Graphs::kAllGpus ? Graphs::kFakeGpusOnly : Graphs::kNone;
  }
  return PlanBuilder(graph_, placement_, device_set_->client_device(), this, plan_options).Build(fed, fetches, targets);
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
                                           const std::vector<Node*>& targets, StepStats* stats,
                                           std::vector<std::unique_ptr<PendingCopy>>* deferred) {
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
  ExecutorOptions run_options;
  run_options.inter_op_pool = inter_op_pool_.get();
  run_options.blocking_pool = blocking_pool_.get();
  run_options.resources = &resources_;
  run_options.collect_stats = options_.collect_step_stats;
  run_options.check_numerics = options_.check_numerics;
  run_options.lend_idle_threads = options_.intra_op_threads == 0;
  run_options.launchers = &launchers_;
  Executor executor(plan, run_options);
  return executor.Run(feed_values, step_id, stats, deferred);
}

}  // namespace tw
