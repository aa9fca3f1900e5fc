// Replicate: data-parallel training over towers, the structure of TF's
// cifar10_multi_gpu_train and of MirroredStrategy / tf_cnn_benchmarks'
// "replicated" mode. One tower (model replica) per device, each under its own
// name scope ("tower_0", or the seed's "GPU_0") and device scope; each tower
// takes its own batch from a shared source (one dequeue per tower: the seed's
// lesson), computes a loss and its gradients; the gradients are averaged per
// variable; one op applies them, after every tower's gradients are computed (a
// barrier: variables change in place, so no update may overtake a read), which
// makes a step of N towers the step one tower takes on the N batches together.
//
// Variables are placed one of two ways:
// - kSingleDevice (TF1's CPU-pinned parameters): one set, on
//   `variable_device` ("/device:CPU:0" by default), shared by every tower
//   through variable-scope reuse; gradients are averaged on each variable's
//   device and applied once.
// - kMirrored: one copy per tower, "tower_<i>/<name>" on tower i's device,
//   initialised from tower 0's initial values; gradients are all-reduced
//   (all_reduce.h: averaged on one device, round-robin over the variables, then
//   broadcast) and every copy gets the same update, so the copies stay equal.
//
// The tower function builds one replica: it must create its variables with
// GetVariable (so reuse finds them) and return a scalar loss. It may be called
// once more than there are towers: in kSingleDevice mode, when the variable
// device differs from tower 0's, a first call under name scope
// "replicate_variables" creates the variables on the variable device (its
// other nodes are never run; see replicate.cc for why). It must therefore have
// no effect other than building graph nodes. Graph building is single-threaded;
// errors are recorded in the scope (scope.h) and the returned ReplicaStep then
// has null members.
#ifndef TOWERFLOW_TRAIN_REPLICATE_H_
#define TOWERFLOW_TRAIN_REPLICATE_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <functional>
#include <string>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/scope.h"
#include "towerflow/train/all_reduce.h"
#include "towerflow/train/optimizer.h"

namespace tw {

// One batch: one Output per component (the same alias as data/batching.h's).
using Batch = std::vector<Output>;

// "gpu:0,gpu:1" -> {"/device:GPU:0", "/device:GPU:1"}. Each comma-separated
// entry is parsed by DeviceSpec (core/device_spec.h) and must name one local
// CPU or GPU: "cpu:N", "/gpu:N", "/GPU:N", "/device:GPU:N", or the fully
// qualified "/job:localhost/replica:0/task:0/device:CPU:N". InvalidArgument
// naming the entry and the accepted forms otherwise (partial specs such as
// "/gpu:*", other jobs, "/device:gpu:0", which TF does not capitalize).
StatusOr<std::string> CanonicalDevice(const std::string& device);
StatusOr<std::vector<std::string>> ParseDevices(const std::string& devices);
// As ParseDevices, for building graphs: a bad entry is kept as written, and
// Replicate records the InvalidArgument in its scope. "" gives no devices.
std::vector<std::string> Devices(const std::string& devices);

}  // namespace tw

namespace tw::train {

enum class VariablePlacement { kSingleDevice, kMirrored };

struct ReplicateOptions {
  // Towers are "<prefix>_<i>": "tower" (cifar10) or "GPU" (the seed).
  std::string name_scope_prefix = "tower";
  VariablePlacement variable_placement = VariablePlacement::kSingleDevice;
  // kSingleDevice: where the variables live ("" = tower 0's device). Also where
  // the global step and the mean loss go in both modes ("" = tower 0's device).
  std::string variable_device = "/device:CPU:0";
  // Create (or reuse) "global_step" and increment it with every update.
  bool global_step = false;
  // kMirrored: how the gradients are averaged (all_reduce.h): a
  // reduce-broadcast per variable (kReduceBroadcast; kAuto on CPU towers), or
  // one fused collective per tower (kCollective; kAuto on CUDA GPU towers: NCCL
  // reduces every tower's gradients in place, small ones in buckets; on CPU
  // towers every tower reduces a slice of all the gradients at once).
  AllReduceAlgorithm all_reduce = AllReduceAlgorithm::kAuto;
  // Each tower dequeues its batch after the previous tower's (tower order)
  // instead of all at once: tower i always gets the i-th batch of the step, so
  // with a deterministic source (ShuffleBatchOptions::deterministic, one
  // enqueuing thread) every tower's batches are the same in every run. Costs
  // the towers' dequeues their overlap.
  bool ordered_batches = false;
  // Training across processes: called once with the mean over this process's
  // towers of every variable's gradient (a null Output where no tower's loss
  // reaches the variable), mirrored variables first (one per variable, not per
  // copy) then the shared ones, in the order of ReplicaStep::tower_variables;
  // returns their means over every process, in the same order (dist/'s
  // CrossProcessMean, which buckets them into ProcessAllReduce ops). Every
  // copy of a mirrored variable then takes the same update. Null: one process.
  std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)> cross_process_mean = nullptr;
};

// Gives a tower its batch; called once per tower with the tower's scope, so a
// dequeue built there belongs to that tower. data/batching.h's BatchSource and
// ShuffleBatchSource convert to it.
using BatchSourceFn = std::function<tw::Batch(const Scope& tower)>;
// Builds one replica from its batch; returns its scalar loss.
using TowerFn = std::function<Output(const Scope& tower, const tw::Batch& batch)>;

struct ReplicaStep {
  Output loss;                       // mean of the tower losses
  std::vector<Output> tower_losses;  // one per tower
  Node* train_op = nullptr;          // one update of every variable (and the global step)
  std::vector<tw::Batch> tower_batches;
  // Canonical devices and name scopes of the towers ("/device:CPU:1", "tower_1").
  std::vector<std::string> devices;
  std::vector<std::string> tower_scopes;
  // The variables each tower's gradients were taken for, in the same order
  // for every tower: every trainable variable of the graph (kSingleDevice), or
  // tower i's copies followed by the trainable variables not mirrored (kMirrored).
  std::vector<std::vector<Variable>> tower_variables;
  // What train_op applies: averaged gradients with their variables.
  GradsAndVars grads_and_vars;
  Variable global_step;  // null unless options.global_step
};

// Builds the towers, the gradient averaging and the update op. Errors recorded
// in `root` (InvalidArgument unless said): no devices; a device string that
// does not parse; an empty name_scope_prefix; a null source or tower function;
// a tower function returning a null or non-scalar loss (naming the tower); in
// kMirrored mode, a trainable variable created outside the tower's variable
// scope; plus whatever the tower function, the optimizer and the builders
// record.
ReplicaStep Replicate(const Scope& root, const std::vector<std::string>& devices, const BatchSourceFn& source,
                      Optimizer& optimizer, const TowerFn& tower_fn, const ReplicateOptions& options = {});

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_REPLICATE_H_
