// Which kernels of a plan a step graph (step_graph.h) runs, and the plan's
// rewiring around it: the last pass of the plan builder (plan_builder.h).
//
// Per GPU the options select, the region is the largest set of the GPU's
// kernel items that
//   - can be recorded (OpKernel::Capturable; none that may block);
//   - read host memory only from the plan's constants or each other (a
//     recorded launch keeps the host values it was recorded with), and
//     variables by reference only from the plan's constants;
//   - is convex in the step's DAG: no path leaves the region and comes
//     back (an item outside would have to run in the middle of one launch).
//     Items are dropped in topological order from the first one reachable
//     from the region through an item outside it.
// A region of fewer than kMinMembers kernels stays as it is. Otherwise one
// item replaces it: its kernel a StepGraphKernel, its inputs what the members
// read from outside, its outputs the members' entries read outside (or
// fetched), its edges the members' edges that cross the region's border.
// The members stay in the plan, absorbed (never run by steps). Pure rewiring:
// the step computes what it did.
#ifndef TOWERFLOW_RUNTIME_STEP_GRAPH_REGIONS_H_
#define TOWERFLOW_RUNTIME_STEP_GRAPH_REGIONS_H_

#include "towerflow/runtime/plan.h"

namespace tw {

struct StepGraphOptions {
  // kCapturingDevices: GPUs that record their work (Device::CanCaptureWork,
  // CUDA); kAllGpus: every GPU-type device (fake GPUs replay by re-running);
  // kFakeGpusOnly: GPU-type devices that do not record (without launcher
  // threads, where a CUDA capture could take in another thread's work).
  enum class Devices { kNone, kCapturingDevices, kAllGpus, kFakeGpusOnly };
  Devices devices = Devices::kCapturingDevices;
  static constexpr int kMinMembers = 2;
};

// Rewrites `plan` (its items wired, its roots not yet listed) with one step
// graph per selected GPU. Call before the plan's roots, entry uses and arena.
void AddStepGraphs(ExecutorPlan* plan, const StepGraphOptions& options);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_STEP_GRAPH_REGIONS_H_
