#include "towerflow/train/replicate.h"

#include <cctype>
#include <memory>
#include <set>

#include "towerflow/core/device_spec.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/train/all_reduce.h"
#include "towerflow/train/internal/variable_readers.h"

namespace tw {
namespace {

// Device types a tower may name (device/device.h's kDeviceCpu and kDeviceGpu;
// train/ may not include device/).
constexpr char kDeviceTypeCpu[] = "CPU";
constexpr char kDeviceTypeGpu[] = "GPU";

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

}  // namespace

StatusOr<std::string> CanonicalDevice(const std::string& device) {
  auto bad = [&](const std::string& why) {
    return errors::InvalidArgument("bad device '", device, "': ", why,
                                   "; expected cpu:N or gpu:N (also /gpu:N, /device:GPU:N, "
                                   "/job:localhost/replica:0/task:0/device:GPU:N)");
  };
  const std::string d = Trim(device);
  if (d.empty()) return bad("empty");
  StatusOr<DeviceSpec> spec = DeviceSpec::Parse(d);
  if (!spec.ok()) {
    // DeviceSpec's message names the string and lists the forms it reads.
    return errors::InvalidArgument("bad device '", device, "': ", spec.status().message());
  }
  if (spec->has_job() && spec->job() != "localhost") return bad("only the local job 'localhost' exists");
  if ((spec->has_replica() && spec->replica() != 0) || (spec->has_task() && spec->task() != 0)) {
    return bad("only replica 0, task 0 exist");
  }
  if (!spec->has_type() || !spec->has_id()) return bad("a tower needs one device: a type and an index");
  if (spec->type() != kDeviceTypeCpu && spec->type() != kDeviceTypeGpu) {
    return bad(StrCat("no device type '", spec->type(), "' (types are CPU and GPU)"));
  }
  return spec->ShortString();
}

StatusOr<std::vector<std::string>> ParseDevices(const std::string& devices) {
  std::vector<std::string> out;
  if (Trim(devices).empty()) return out;
  for (const std::string& entry : Split(devices, ',')) {
    TW_ASSIGN_OR_RETURN(std::string canonical, CanonicalDevice(entry));
    out.push_back(std::move(canonical));
  }
  return out;
}

std::vector<std::string> Devices(const std::string& devices) {
  std::vector<std::string> out;
  if (Trim(devices).empty()) return out;
  for (const std::string& entry : Split(devices, ',')) {
    auto canonical = CanonicalDevice(entry);
    out.push_back(canonical.ok() ? *canonical : entry);
  }
  return out;
}

}  // namespace tw

namespace tw::train {
namespace {

const std::string& DeviceOf(const Variable& v) { return v.ref.node->requested_device(); }

// mean = (sum of the present gradients) / n_towers: a tower whose loss does not
// reach the variable contributes a zero gradient, as the mean loss says.
Output AverageOnDevice(const Scope& scope, const std::vector<Output>& grads, int n_towers) {
  if (grads.size() == 1 && n_towers == 1) return grads[0];
  Output sum = grads.size() == 1 ? grads[0] : AddN(scope, grads);
  if (!sum.valid()) return Output();
  return Div(scope.WithOpName("truediv"), sum, ScalarLike(scope, n_towers, sum.dtype()));
}

// Checks the tower function's loss; records the error naming the tower.
bool CheckLoss(const Scope& root, const std::string& tower, const Output& loss) {
  if (!loss.valid()) {
    if (root.ok()) {
      root.UpdateStatus(errors::InvalidArgument(tower, ": the tower function returned a null loss"));
    }
    return false;
  }
  const PartialShape& shape = loss.shape();
  if (shape.known_rank() && shape.rank() != 0) {
    root.UpdateStatus(errors::InvalidArgument(tower, ": the tower function returned loss '", loss.name(),
                                              "' of shape ", shape.ToString(),
                                              "; it must be a scalar (reduce it with Mean)"));
    return false;
  }
  if (!IsFloating(loss.dtype())) {
    root.UpdateStatus(errors::InvalidArgument(tower, ": the loss '", loss.name(), "' is ",
                                              DataTypeName(loss.dtype()), "; it must be float or double"));
    return false;
  }
  return true;
}

std::set<std::string> Names(const std::vector<Variable>& vars) {
  std::set<std::string> out;
  for (const Variable& v : vars) out.insert(v.name);
  return out;
}

// Builds one tower: its batch from the source (or `given`), then the replica.
// False when building failed (the error is in the scope).
bool BuildTower(const Scope& root, const Scope& tower, const BatchSourceFn& source, const TowerFn& tower_fn,
                ReplicaStep* step, std::vector<Scope>* scopes, tw::Batch* given = nullptr) {
  tw::Batch batch = given != nullptr ? *given : source(tower);
  Output loss = tower_fn(tower, batch);
  scopes->push_back(tower);
  step->tower_scopes.push_back(tower.name_scope());
  step->tower_batches.push_back(batch);
  step->tower_losses.push_back(loss);
  return CheckLoss(root, tower.name_scope(), loss) && root.ok();
}

// kMirrored: before tower i is built, its copies of the variables tower 0
// created, named "<tower i's variable scope>/<rest>" on tower i's device. The
// initial value is tower 0's variable right after its initializer (a data
// dependency on that Assign), so the copies start equal even when initialised
// in a separate run. Returns the trainable copies in tower 0's order.
std::vector<Variable> CreateMirrors(const Scope& root, const Scope& tower0, const Scope& tower,
                                    const std::string& device, const std::vector<Variable>& created,
                                    const std::set<std::string>& trainable) {
  std::vector<Variable> copies;
  const std::string prefix0 = tower0.variable_scope() + "/";
  for (const Variable& v0 : created) {
    if (v0.name.rfind(prefix0, 0) != 0) continue;  // shared (checked by the caller)
    const std::string name = tower.variable_scope() + "/" + v0.name.substr(prefix0.size());
    const bool is_trainable = trainable.count(v0.name) > 0;
    Variable copy;
    if (const Variable* found = FindVariable(root.graph(), name)) {
      copy = *found;  // built before, by an earlier Replicate with reuse
    } else {
      const Output initialized(v0.initializer, 0);
      Initializer init = [initialized](const Scope& s, const TensorShape&, DataType) {
        return Identity(s, initialized);
      };
      const PartialShape& shape = v0.ref.shape();
      copy = CreateVariable(root.WithDevice(device), name,
                            shape.IsFullyDefined() ? shape.ToTensorShape() : TensorShape{},
                            {.dtype = v0.ref.dtype(), .initializer = init, .trainable = is_trainable});
    }
    if (!copy.valid()) return {};
    if (is_trainable) copies.push_back(copy);
  }
  return copies;
}

// With `ordered`, `source` such that each tower's batch is taken after the
// previous tower's (a control dependency on its dequeue): in a step, tower i
// always gets the i-th batch the source gives.
BatchSourceFn OrderedSource(const BatchSourceFn& source, bool ordered) {
  if (!ordered || !source) return source;
  auto previous = std::make_shared<std::vector<Output>>();
  return [source, previous](const Scope& tower) {
    tw::Batch batch = source(previous->empty() ? tower : tower.WithControlDependencies(*previous));
    previous->clear();
    for (const Output& c : batch) {
      if (c.valid()) {
        previous->push_back(c);
        break;  // one output of the dequeue node orders it
      }
    }
    return batch;
  };
}

// The towers' gradients of mirrored variable k (group = its copies, one per
// tower): empty when no tower's loss reaches it, else one per tower, zeros for a
// tower whose loss does not.
std::vector<Output> MirrorGradients(const Scope& root, const std::vector<GradsAndVars>& tower_grads,
                                    const std::vector<Variable>& group, size_t k) {
  bool any = false;
  for (const GradsAndVars& g : tower_grads) any |= g[k].first.valid();
  std::vector<Output> grads;
  for (size_t i = 0; i < tower_grads.size() && any; ++i) {
    const Output& g = tower_grads[i][k].first;
    grads.push_back(g.valid() ? g : ZerosLike(root.WithDevice(DeviceOf(group[i])), group[i].value));
  }
  return grads;
}

}  // namespace

ReplicaStep Replicate(const Scope& root, const std::vector<std::string>& devices, const BatchSourceFn& given_source,
                      Optimizer& optimizer, const TowerFn& tower_fn, const ReplicateOptions& options) {
  const BatchSourceFn source = OrderedSource(given_source, options.ordered_batches);
  ReplicaStep step;
  if (!root.ok()) return step;  // nothing useful can be built; the errors are there
  auto fail = [&](Status s) {
    root.UpdateStatus(s);
    return ReplicaStep{};
  };
  if (devices.empty()) return fail(errors::InvalidArgument("Replicate needs at least one device, got none"));
  for (const std::string& d : devices) {
    auto canonical = CanonicalDevice(d);
    if (!canonical.ok()) {
      root.UpdateStatus(canonical.status().WithContext("Replicate"));
      continue;
    }
    step.devices.push_back(*canonical);
  }
  if (options.name_scope_prefix.empty()) {
    root.UpdateStatus(
        errors::InvalidArgument("Replicate: name_scope_prefix is empty; use \"tower\" or \"GPU\""));
  }
  if (!source) root.UpdateStatus(errors::InvalidArgument("Replicate: the batch source is null"));
  if (!tower_fn) root.UpdateStatus(errors::InvalidArgument("Replicate: the tower function is null"));
  std::string param_device = step.devices.empty() ? "" : step.devices[0];
  if (!options.variable_device.empty()) {
    auto canonical = CanonicalDevice(options.variable_device);
    if (canonical.ok()) {
      param_device = *canonical;
    } else {
      root.UpdateStatus(canonical.status().WithContext("Replicate: variable_device"));
    }
  }
  if (!root.ok()) return ReplicaStep{};

  const int n = static_cast<int>(step.devices.size());
  const bool mirrored = options.variable_placement == VariablePlacement::kMirrored;
  auto tower_name = [&](int i) { return options.name_scope_prefix + "_" + std::to_string(i); };
  Graph& graph = root.graph();
  std::vector<Scope> scopes;  // the towers' scopes, for their gradients

  // ---- the towers ----
  // kMirrored: mirror_groups[k][i] is tower i's copy of tower 0's k-th trainable variable.
  std::vector<std::vector<Variable>> mirror_groups;
  if (mirrored) {
    const std::set<std::string> before = Names(GlobalVariables(graph));
    Scope tower0 = root.WithVariableScope(tower_name(0)).WithDevice(step.devices[0]);
    if (!BuildTower(root, tower0, source, tower_fn, &step, &scopes)) return ReplicaStep{};
    std::vector<Variable> created;
    for (const Variable& v : GlobalVariables(graph)) {
      if (before.count(v.name) == 0) created.push_back(v);
    }
    const std::set<std::string> trainable = Names(TrainableVariables(graph));
    const std::string prefix0 = tower0.variable_scope() + "/";
    for (const Variable& v : created) {
      if (v.name.rfind(prefix0, 0) != 0 && trainable.count(v.name) > 0) {
        return fail(errors::InvalidArgument(
            "Replicate (mirrored): the tower function created trainable variable '", v.name,
            "' outside the variable scope '", tower0.variable_scope(),
            "' of tower 0; create variables with GetVariable so that each tower gets its own copy"));
      }
      if (v.name.rfind(prefix0, 0) == 0 && trainable.count(v.name) > 0) mirror_groups.push_back({v});
    }
    for (int i = 1; i < n; ++i) {
      Scope tower = root.WithVariableScope(tower_name(i), Reuse::kReuse).WithDevice(step.devices[i]);
      std::vector<Variable> copies = CreateMirrors(root, tower0, tower, step.devices[i], created, trainable);
      if (!root.ok()) return ReplicaStep{};
      if (copies.size() != mirror_groups.size()) {
        return fail(errors::Internal("Replicate: ", copies.size(), " copies of ", mirror_groups.size(),
                                     " variables for ", tower.name_scope()));
      }
      for (size_t k = 0; k < mirror_groups.size(); ++k) mirror_groups[k].push_back(copies[k]);
      if (!BuildTower(root, tower, source, tower_fn, &step, &scopes)) return ReplicaStep{};
    }
  } else {
    // Variables are created by the first tower function call. When they must
    // live elsewhere than tower 0's device, that call is a throwaway replica on
    // the variable device (fed placeholders shaped like tower 0's batch): Scope
    // has no separate device for variables (TF uses a device function or a
    // custom getter), and a node's device cannot change once built. The
    // replica's other nodes are never fetched, so they never run.
    const bool separate = param_device != step.devices[0];
    std::vector<Scope> towers;
    for (int i = 0; i < n; ++i) {
      Scope t = root.NewSubScope(tower_name(i)).WithDevice(step.devices[i]);
      towers.push_back(i > 0 || separate ? t.WithReuseVariables() : t);
    }
    tw::Batch batch0 = source(towers[0]);
    if (separate) {
      Scope vs = root.NewSubScope("replicate_variables").WithDevice(param_device);
      tw::Batch like;
      for (const Output& c : batch0) {
        like.push_back(c.valid() ? Placeholder(vs, c.dtype(), c.shape()) : Output());
      }
      tower_fn(vs, like);
      if (!root.ok()) return ReplicaStep{};
    }
    if (!BuildTower(root, towers[0], source, tower_fn, &step, &scopes, &batch0)) return ReplicaStep{};
    for (int i = 1; i < n; ++i) {
      if (!BuildTower(root, towers[static_cast<size_t>(i)], source, tower_fn, &step, &scopes))
        return ReplicaStep{};
    }
  }

  // ---- gradients per tower ----
  // The variables each tower differentiates: kMirrored, its own copies then the
  // shared trainable variables; kSingleDevice, every trainable variable (those
  // the loss does not reach get a null gradient, as in TF).
  std::set<std::string> mirrored_names;
  for (const auto& group : mirror_groups) {
    for (const Variable& v : group) mirrored_names.insert(v.name);
  }
  std::vector<Variable> shared;
  for (const Variable& v : TrainableVariables(graph)) {
    if (mirrored_names.count(v.name) == 0) shared.push_back(v);
  }
  std::vector<GradsAndVars> tower_grads;
  for (int i = 0; i < n; ++i) {
    std::vector<Variable> vars;
    for (const auto& group : mirror_groups) vars.push_back(group[static_cast<size_t>(i)]);
    vars.insert(vars.end(), shared.begin(), shared.end());
    step.tower_variables.push_back(vars);
    auto grads = optimizer.ComputeGradients(scopes[static_cast<size_t>(i)],
                                            step.tower_losses[static_cast<size_t>(i)], vars);
    if (!grads.ok()) return fail(grads.status().WithContext(step.tower_scopes[static_cast<size_t>(i)]));
    tower_grads.push_back(std::move(grads).value());
  }

  // ---- averaging ----
  // Shared variables: the mean on the variable's device, applied once.
  // Mirrored copies: the graph all-reduce, each copy updated with the result.
  const size_t n_mirrored = mirror_groups.size();
  const bool collective =
      ResolveAllReduceAlgorithm(options.all_reduce, step.devices) == AllReduceAlgorithm::kCollective;
  const bool across_processes = static_cast<bool>(options.cross_process_mean);
  // Across processes: each variable's in-process mean (mirrored groups first),
  // handed to options.cross_process_mean at once below.
  std::vector<Output> local_means;
  if (n_mirrored > 0 && across_processes) {
    // The mean of group k on tower k % n's device, then across processes; every
    // copy is updated with the one result.
    Scope ar = root.NewSubScope("all_reduce");
    for (size_t k = 0; k < n_mirrored; ++k) {
      const std::vector<Output> grads = MirrorGradients(root, tower_grads, mirror_groups[k], k);
      const bool any = !grads.empty();
      const Variable& home = mirror_groups[k][k % static_cast<size_t>(n)];
      const std::string& name0 = mirror_groups[k][0].name;
      local_means.push_back(any ? AverageOnDevice(ar.NewSubScope(name0.substr(name0.find('/') + 1))
                                                      .WithDevice(DeviceOf(home)),
                                                  grads, n)
                                : Output());
    }
  } else if (n_mirrored > 0 && collective) {
    // One meeting per tower for all the variables that have a gradient: the
    // update waits for every gradient anyway (the barrier below).
    std::vector<std::vector<Output>> grads(static_cast<size_t>(n));
    std::vector<size_t> reduced_vars;
    for (size_t k = 0; k < n_mirrored; ++k) {
      bool any = false;
      for (int i = 0; i < n; ++i) any |= tower_grads[static_cast<size_t>(i)][k].first.valid();
      if (!any) continue;
      reduced_vars.push_back(k);
      for (int i = 0; i < n; ++i) {
        const Output& g = tower_grads[static_cast<size_t>(i)][k].first;
        const Variable& v = mirror_groups[k][static_cast<size_t>(i)];
        grads[static_cast<size_t>(i)].push_back(g.valid() ? g : ZerosLike(root.WithDevice(DeviceOf(v)), v.value));
      }
    }
    std::vector<std::vector<Output>> reduced(static_cast<size_t>(n));
    if (!reduced_vars.empty()) {
      reduced = AllReduceMany(root, grads,
                              {.reduction = Reduction::kMean, .algorithm = AllReduceAlgorithm::kCollective});
    }
    size_t next = 0;
    for (size_t k = 0; k < n_mirrored; ++k) {
      const bool has = next < reduced_vars.size() && reduced_vars[next] == k;
      for (int i = 0; i < n; ++i) {
        step.grads_and_vars.emplace_back(has ? reduced[static_cast<size_t>(i)][next] : Output(),
                                         mirror_groups[k][static_cast<size_t>(i)]);
      }
      if (has) ++next;
    }
  } else if (n_mirrored > 0) {
    Scope ar = root.NewSubScope("all_reduce");
    for (size_t k = 0; k < n_mirrored; ++k) {
      const std::vector<Output> grads = MirrorGradients(root, tower_grads, mirror_groups[k], k);
      const bool any = !grads.empty();
      // tower 0's name without its "tower_0/" prefix names the reduction.
      const std::string& name0 = mirror_groups[k][0].name;
      const std::string logical = name0.substr(name0.find('/') + 1);
      std::vector<Output> reduced =
          any ? AllReduce(ar.NewSubScope(logical), grads,
                          {.reduction = Reduction::kMean,
                           .algorithm = AllReduceAlgorithm::kReduceBroadcast,
                           .reduce_on = static_cast<int>(k % static_cast<size_t>(n)),
                           .name = ""})
              : std::vector<Output>(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        step.grads_and_vars.emplace_back(reduced[static_cast<size_t>(i)],
                                         mirror_groups[k][static_cast<size_t>(i)]);
      }
    }
  }
  Scope avg = root.NewSubScope("average_gradients");
  for (size_t k = 0; k < shared.size(); ++k) {
    const Variable& v = shared[k];
    std::vector<Output> grads;
    for (int i = 0; i < n; ++i) {
      const Output& g = tower_grads[static_cast<size_t>(i)][n_mirrored + k].first;
      if (g.valid()) grads.push_back(g);
    }
    Output mean =
        grads.empty() ? Output() : AverageOnDevice(avg.NewSubScope(v.name).WithDevice(DeviceOf(v)), grads, n);
    if (across_processes) {
      local_means.push_back(mean);
    } else {
      step.grads_and_vars.emplace_back(mean, v);
    }
  }
  if (!root.ok()) return ReplicaStep{};
  if (across_processes) {
    std::vector<Output> global = options.cross_process_mean(root, local_means);
    if (!root.ok()) return ReplicaStep{};
    if (global.size() != local_means.size()) {
      return fail(errors::InvalidArgument("Replicate: cross_process_mean returned ", global.size(), " gradients for ",
                                          local_means.size()));
    }
    for (size_t k = 0; k < n_mirrored; ++k) {
      for (int i = 0; i < n; ++i) step.grads_and_vars.emplace_back(global[k], mirror_groups[k][static_cast<size_t>(i)]);
    }
    for (size_t k = 0; k < shared.size(); ++k) step.grads_and_vars.emplace_back(global[n_mirrored + k], shared[k]);
  }

  // ---- the update, the global step and the mean loss ----
  // Variables are updated in place and a read on the variable's own device
  // shares its buffer, so an update must not start while a tower may still read
  // the old value: backprop reads W for dX = dY W^T, which no gradient of W
  // itself waits for. One barrier after every read any tower makes on the way
  // to its gradients (internal/variable_readers.h; TF's cifar10 calls averaging
  // "a synchronization point") makes the step exactly "gradients at the
  // current values, then the update", as one tower on the concatenated batch
  // computes; the gradients reach the updates as data.
  std::vector<Output> all_grads;
  std::vector<Variable> read_vars;
  for (const GradsAndVars& grads : tower_grads) {
    for (const auto& [g, v] : grads) {
      if (g.valid()) all_grads.push_back(g);
      read_vars.push_back(v);
    }
  }
  std::vector<Output> reads;
  for (Node* r : internal::VariableReaders(root.graph(), read_vars, all_grads)) reads.push_back(Output(r));
  Node* barrier =
      NoOp(root.WithDevice(param_device).WithOpName("gradients_done").WithControlDependencies(reads));
  if (options.global_step) step.global_step = GetOrCreateGlobalStep(root.WithDevice(param_device));
  step.train_op =
      optimizer.ApplyGradients(root.WithControlDependencies({Output(barrier)}), step.grads_and_vars,
                               options.global_step ? &step.global_step : nullptr);
  if (n == 1) {
    step.loss = step.tower_losses[0];
  } else {
    Scope ls = root.NewSubScope("loss").WithDevice(param_device);
    Output sum = AddN(ls, step.tower_losses);
    step.loss = sum.valid() ? Div(ls.WithOpName("mean"), sum, ScalarLike(ls, n, sum.dtype())) : Output();
  }
  if (!root.ok() || step.train_op == nullptr) return ReplicaStep{};
  return step;
}

}  // namespace tw::train
