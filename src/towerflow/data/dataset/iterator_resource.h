// IteratorResource: what an Iterator node stands for in a session's
// ResourceMgr: a dataset and the current pass over it. The datasets of graph
// iterators are found through a process-wide table (RegisterDataset) keyed by
// an id the Iterator node carries; the graph owns the dataset (Graph object
// "dataset:<id>"), the table only points to it. Thread-safe: GetNext calls
// are serialized; Close (session close) cancels a GetNext that waits.
#ifndef TOWERFLOW_DATA_DATASET_ITERATOR_RESOURCE_H_
#define TOWERFLOW_DATA_DATASET_ITERATOR_RESOURCE_H_

#include <memory>
#include <mutex>
#include <string>

#include "towerflow/data/dataset.h"
#include "towerflow/device/device.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/device/resource_mgr.h"
#include "towerflow/graph/graph.h"

namespace tw::data {

// Keeps `dataset` alive in `graph` and returns the id that finds it.
std::string RegisterDataset(Graph& graph, const Dataset& dataset);
// FailedPrecondition when the graph holding it is gone.
StatusOr<Dataset> FindDataset(const std::string& id);

class IteratorResource final : public ResourceBase {
 public:
  // `initializable`: no pass starts before Reset (the initializer); else the
  // first GetNext or Save starts one.
  IteratorResource(std::string name, Dataset dataset, bool initializable = false);  // out of line: DeviceStage is incomplete here
  ~IteratorResource() override;
  std::string DebugString() const override { return "Iterator " + name_ + " over " + dataset_.DebugString(); }
  void Close() override;

  // The next element; a one-shot start on the first call.
  Status GetNext(Element* element);
  // The same, in `device`'s memory: a PrefetchToDevice dataset's elements,
  // copied there ahead of the caller by a thread of the resource's own (up
  // to the dataset's buffer).
  Status GetNextOnDevice(Device* device, Element* element);
  // Starts a new pass (drops the current one).
  Status Reset();
  Status Save(IteratorState* state);
  Status Restore(const IteratorState& state);
  std::string AutotuneSummary();
  std::map<std::string, double> Gauges();
  const Dataset& dataset() const { return dataset_; }

 private:
  Status StartLocked();
  // Stops and drops the device stage (REQUIRES: mu_ held).
  void StopDeviceStageLocked();

  // A pass, or FailedPrecondition for an initializable iterator whose
  // initializer has not run (REQUIRES: mu_ held).
  Status EnsureStartedLocked();

  const std::string name_;
  const Dataset dataset_;
  const bool initializable_;
  std::mutex mu_;  // serializes passes and GetNext
  std::shared_ptr<Iterator> iterator_;  // guarded by mu_ and cancel_mu_ (writes hold both)
  // PrefetchToDevice: iterator_'s elements copied to device_ ahead of GetNext.
  // Declared in the order they are torn down in reverse: the stage's thread
  // reads through stage_input_, and device_ctx_ wakes it.
  struct DeviceStage;
  std::unique_ptr<DeviceStage> stage_;  // guarded by mu_
  bool fresh_ = false;                  // guarded by mu_: no GetNext yet on iterator_
  std::mutex cancel_mu_;
  bool closed_ = false;                 // guarded by cancel_mu_
  std::shared_ptr<PipelineContext> stage_ctx_;  // guarded by cancel_mu_: stage_'s, for Close
};

// The resource of an Iterator node (created, with its dataset, if absent).
StatusOr<std::shared_ptr<IteratorResource>> IteratorResourceOf(ResourceMgr* resources, const Node& iterator_node);

void RegisterIteratorKernels(KernelRegistry& kernels);

}  // namespace tw::data

#endif  // TOWERFLOW_DATA_DATASET_ITERATOR_RESOURCE_H_
