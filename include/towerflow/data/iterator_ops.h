// A dataset as ops of a graph (TF's make_one_shot_iterator /
// make_initializable_iterator): an Iterator op whose resource, in the
// session's ResourceMgr, walks the dataset, and IteratorGetNext ops that each
// take the next element when run. Build one GetNext per tower (GetNext(scope)
// or the BatchSourceFn form Replicate takes), so that every tower trains on
// its own elements; one GetNext shared by towers is the seed's pitfall,
// detected as for a shared dequeue.
//
//   tw::data::GraphIterator it = tw::data::MakeIterator(root, dataset);
//   auto step = tw::train::Replicate(root, devices, it, optimizer, tower_fn);
//   // each session.Run(step.train_op) takes one element per tower
//
// The iterator starts at the dataset's beginning on the first GetNext (one
// shot); running initializer() restarts it (an initializable iterator, one
// epoch per initialization). After the last element GetNext fails with
// OutOfRange "End of sequence", as in TF; errors of the pipeline (a corrupt
// record, a failing Map) fail the run naming the dataset and the element.
// Closing the session stops the pipeline's threads: a GetNext waiting for
// data returns Cancelled. The dataset lives as long as the graph. GetNext
// runs on the CPU (/device:CPU:0 unless the scope says otherwise); towers on
// GPUs receive the batch through the session's transfers.
//
// SaveIterator / RestoreIterator read and set the position of a session's
// iterator (Iterator::Save), for checkpoints: a restored run continues its
// epoch. Graph building is single-threaded; errors are recorded in the scope.
#ifndef TOWERFLOW_DATA_ITERATOR_OPS_H_
#define TOWERFLOW_DATA_ITERATOR_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <map>
#include <string>
#include <vector>

#include "towerflow/data/dataset.h"
#include "towerflow/graph/scope.h"
#include "towerflow/runtime/session.h"

namespace tw::data {

struct IteratorOptions {
  // Iterators (in one session) naming the same shared_name share one
  // position; default: the Iterator node's name.
  std::string shared_name = "";
  // false (a one-shot iterator): the first GetNext starts a pass. true
  // (tf.data's make_initializable_iterator): a GetNext or Save before the
  // initializer has run is FailedPrecondition, as in TensorFlow.
  bool initializable = false;
};

class GraphIterator {
 public:
  GraphIterator() = default;
  bool valid() const { return handle_.valid(); }
  // The Iterator node's handle (a string ref).
  const Output& handle() const { return handle_; }
  // Restarts the iterator at the dataset's beginning (MakeIterator op).
  Node* initializer() const { return initializer_; }
  const ElementSpec& element_spec() const { return spec_; }
  // A new IteratorGetNext in `scope`: one Output per component. On the
  // device a PrefetchToDevice dataset names, whatever the scope's device.
  std::vector<Output> GetNext(const Scope& scope) const;
  // That device ("/device:GPU:0"), or "" (the scope's).
  const std::string& device() const { return device_; }
  // Replicate's BatchSourceFn.
  std::vector<Output> operator()(const Scope& scope) const { return GetNext(scope); }

 private:
  friend GraphIterator MakeIterator(const Scope&, const Dataset&, const IteratorOptions&);
  Output handle_;
  Node* initializer_ = nullptr;
  ElementSpec spec_;
  std::string device_;
};

// Builds the Iterator node ("Iterator" unless the scope names it) and its
// initializer ("<name>/MakeIterator"). The dataset's error, if it has one,
// is recorded in the scope.
GraphIterator MakeIterator(const Scope& scope, const Dataset& dataset, const IteratorOptions& options = {});

// The position of `iterator` in `session` (its state before the first
// GetNext when none ran); Restore sets it, before the session's first GetNext
// on it. NotFound / FailedPrecondition naming the iterator otherwise.
Status SaveIterator(Session& session, const GraphIterator& iterator, IteratorState* state);
Status RestoreIterator(Session& session, const GraphIterator& iterator, const IteratorState& state);
// The autotune choices of the session's iterator (Iterator::AutotuneSummary).
std::string IteratorAutotuneSummary(Session& session, const GraphIterator& iterator);
// Its gauges (Iterator::Gauges); empty before its first GetNext.
std::map<std::string, double> IteratorGauges(Session& session, const GraphIterator& iterator);

}  // namespace tw::data

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_ITERATOR_OPS_H_
