// Graph builders for TF1's queues: FIFOQueue and RandomShuffleQueue, and the
// io::Queue handle whose methods build QueueEnqueue, QueueEnqueueMany,
// QueueDequeue, QueueDequeueMany, QueueDequeueUpTo, QueueClose and QueueSize.
//
// A queue op outputs a Ref(string) handle, as TF1's original queue ops do; the
// queue itself (a QueueResource, queue.h) lives in the session's ResourceMgr under
// its shared name (default: the node's name), created on first run. Node names
// follow TF's Python layer ("fifo_queue", "fifo_queue_DequeueMany", ...), so logs
// and errors read like TF's.
//
// Builders record errors in the scope and return null Outputs (a vector of
// null Outputs, one per component, for dequeues; nullptr for ops without
// outputs), see scope.h. Build-time checks: component count, dtypes and static
// shapes against the queue's. Not thread-safe (graph building).
//
// Encoding, because towerflow's op schemas have no list(type) arguments: an
// enqueue's components and a dequeue's outputs travel as one list argument per
// dtype, in DataType order ("components_float", "components_int32", ...; counts in
// attrs "N_float", ...); attr "component_types"/"Tcomponents" keeps the tuple
// order and the builders map back. Element shapes are attrs "shapes" (every
// dimension, flattened) and "shape_ranks" (one rank per component; empty: no
// shapes). Only these builders and the kernels know the encoding.
#ifndef TOWERFLOW_DATA_QUEUE_OPS_H_
#define TOWERFLOW_DATA_QUEUE_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/graph/scope.h"

namespace tw::io {

// A queue as graph builders see it: the queue node's handle and its component
// types and shapes. Copyable; the graph owns the node. A default Queue is null.
class Queue {
 public:
  Queue() = default;

  bool valid() const { return handle_.valid(); }
  // The Ref(string) handle output of the FIFOQueue / RandomShuffleQueue node.
  const Output& handle() const { return handle_; }
  Node* node() const { return handle_.node; }
  // The node name ("batch/fifo_queue"); also the resource name unless shared_name is set.
  std::string name() const;
  // "FIFOQueue" or "RandomShuffleQueue".
  std::string op() const;
  const std::vector<DataType>& dtypes() const { return dtypes_; }
  // Empty when the queue does not constrain element shapes.
  const std::vector<TensorShape>& shapes() const { return shapes_; }
  int num_components() const { return static_cast<int>(dtypes_.size()); }
  int64_t capacity() const { return capacity_; }
  int64_t min_after_dequeue() const { return min_after_dequeue_; }

  // Enqueues one element: one tensor per component.
  Node* Enqueue(const Scope& scope, const std::vector<Output>& components) const;
  // Enqueues the elements of a batch: each component's dimension 0 indexes them.
  Node* EnqueueMany(const Scope& scope, const std::vector<Output>& components) const;
  // One element, one Output per component.
  std::vector<Output> Dequeue(const Scope& scope) const;
  // n elements stacked along a new dimension 0; blocks until there are n. Needs
  // the queue's shapes (InvalidArgument at run time otherwise, as TF).
  std::vector<Output> DequeueMany(const Scope& scope, const Output& n) const;
  std::vector<Output> DequeueMany(const Scope& scope, int32_t n) const;
  // As DequeueMany, but a closed queue with 0 < k < n elements left gives k.
  std::vector<Output> DequeueUpTo(const Scope& scope, const Output& n) const;
  std::vector<Output> DequeueUpTo(const Scope& scope, int32_t n) const;
  // Closes the queue; with cancel_pending_enqueues, blocked enqueues fail too.
  Node* Close(const Scope& scope, bool cancel_pending_enqueues = false) const;
  // The number of elements, an int32 scalar.
  Output Size(const Scope& scope) const;

 private:
  friend struct QueueAccess;
  Node* BuildEnqueue(const Scope& scope, const std::string& op, const std::vector<Output>& components) const;
  std::vector<Output> BuildDequeue(const Scope& scope, const std::string& op, const Output* n) const;
  std::string BaseName() const;

  Output handle_;
  std::vector<DataType> dtypes_;
  std::vector<TensorShape> shapes_;
  int64_t capacity_ = -1;
  int64_t min_after_dequeue_ = 0;
};

struct FIFOQueueOptions {
  // One fully defined shape per component, or none (then only Dequeue works).
  std::vector<TensorShape> shapes = {};
  // A queue shared by every node (and session step) naming it; default: private.
  std::string shared_name = "";
  std::string container = "";
};

// tf.FIFOQueue(capacity, dtypes, shapes). A negative capacity is unbounded.
// Named "fifo_queue" unless the scope names it.
Queue FIFOQueue(const Scope& scope, int64_t capacity, const std::vector<DataType>& dtypes,
                const FIFOQueueOptions& options = {});

struct RandomShuffleQueueOptions {
  std::vector<TensorShape> shapes = {};
  // Op seed, combined with the graph seed as random_ops.h's GetSeeds does; with
  // neither the order is nondeterministic.
  int64_t seed = 0;
  // Draws from a fixed-size window (QueueResource::Spec::deterministic): with a
  // seed, the order depends on the enqueue order alone. towerflow's own attr.
  bool deterministic = false;
  std::string shared_name = "";
  std::string container = "";
};

// tf.RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes, seed):
// dequeues take uniformly random elements and, while the queue is open, leave at
// least min_after_dequeue behind. REQUIRES (else InvalidArgument in the scope):
// 0 <= min_after_dequeue < capacity. Named "random_shuffle_queue" by default.
Queue RandomShuffleQueue(const Scope& scope, int64_t capacity, int64_t min_after_dequeue,
                         const std::vector<DataType>& dtypes, const RandomShuffleQueueOptions& options = {});

namespace internal {
// What producers and batching need beyond the public builders.
struct QueueArgs {
  bool shuffle = false;
  int64_t capacity = -1;
  int64_t min_after_dequeue = 0;
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
  int64_t seed = 0;  // op seed
  bool deterministic = false;  // RandomShuffleQueueOptions::deterministic
  std::string shared_name, container;
  // The node gets exactly this name (already reserved as a name scope, as TF's
  // input_producer names its queue after its scope); empty: the default name.
  std::string exact_name;
  // The TF summary tag QueueFillStats reports; empty: "<queue>/fraction_...".
  std::string fill_summary;
};
Queue BuildQueue(const Scope& scope, const QueueArgs& args);
}  // namespace internal

}  // namespace tw::io

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_QUEUE_OPS_H_
