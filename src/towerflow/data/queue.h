// QueueResource: the storage and blocking semantics behind TF1's FIFOQueue and
// RandomShuffleQueue, kept as a session resource (ResourceMgr) and driven by the
// queue kernels (queue_kernels.cc).
//
// An element is a tuple of tensors, one per component; the queue holds a deque of
// tuples. Enqueue stores the input tensors as they are (sharing their buffers, as
// TF's PersistentTensor does); EnqueueMany splits its batch along dimension 0 into
// fresh host tensors; DequeueMany hands back element tuples that the kernel copies
// into one output tensor per component (GatherComponent, memcpy per element).
//
// Semantics follow TF 1.x (docs: tf1-semantics.md section 3.4):
// - Enqueue blocks while the queue is full; EnqueueMany enqueues element by element
//   as room frees. Enqueues are served in arrival order, as are dequeues.
// - Dequeue(n) blocks until n elements can be taken; a RandomShuffleQueue also keeps
//   min_after_dequeue elements behind while it is open. DequeueMany collects
//   elements as they arrive; if the queue closes first they are put back.
// - CloseQueue(false) waits behind the enqueues already pending (they still
//   complete), then closes; later enqueues fail with Aborted "<Kind> '<name>' is
//   closed."; closing a closed queue is Aborted "Queue '<name>' is already closed.".
//   CloseQueue(true) closes at once and fails pending enqueues with Cancelled
//   "Enqueue operation was cancelled".
// - On a closed queue dequeues drain what is left (min_after_dequeue no longer
//   applies), then fail with OutOfRange "<Kind> '<name>' is closed and has
//   insufficient elements (requested N, current size M)"; an allow_small_batch
//   dequeue returns the 0 < k < N elements left.
// - Close() (the session closing) fails every pending and later operation with
//   Cancelled ("Enqueue operation was cancelled" / "Dequeue operation was cancelled").
// Every wait is on one condition variable and ends on close or cancellation.
// Thread-safe: all state is guarded by one mutex, held only to move tuples.
#ifndef TOWERFLOW_DATA_QUEUE_H_
#define TOWERFLOW_DATA_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "towerflow/core/allocator.h"
#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/device/resource_mgr.h"

namespace tw {

class QueueResource final : public ResourceBase {
 public:
  enum class Kind { kFIFO, kRandomShuffle };
  using Tuple = std::vector<Tensor>;

  struct Spec {
    Kind kind = Kind::kFIFO;
    std::string name;  // the resource name, used in every message
    std::vector<DataType> dtypes;
    // Empty: element shapes are not constrained (and DequeueMany is refused).
    // Otherwise one fully defined shape per component.
    std::vector<TensorShape> shapes;
    int64_t capacity = -1;  // negative: unbounded
    int64_t min_after_dequeue = 0;  // RandomShuffleQueue only
    int64_t seed = 0, seed2 = 0;  // RandomShuffleQueue only; both 0: nondeterministic
  };

  // "FIFOQueue" or "RandomShuffleQueue": the op name, and how messages name the kind.
  static const char* KindName(Kind kind);
  // InvalidArgument for no components, a shape count that is neither 0 nor the
  // component count, a negative min_after_dequeue, or min_after_dequeue >= capacity.
  static Status Validate(const Spec& spec);
  // REQUIRES: Validate(spec).ok().
  explicit QueueResource(Spec spec);

  // The queue called `name` in `resources`, never creating one: NotFound if absent.
  static StatusOr<std::shared_ptr<QueueResource>> Find(ResourceMgr* resources, const std::string& name);
  // The queue a handle names: the value of a queue op's Ref(string) output, as a
  // kernel with a RefInput("handle", "string") reads it with ctx->input(i) (readers
  // dequeue file names this way). InvalidArgument unless a string scalar; NotFound.
  static StatusOr<std::shared_ptr<QueueResource>> FromHandle(ResourceMgr* resources, const Tensor& handle);

  // A queue shared through shared_name must be asked for with the same op, types,
  // shapes and capacity; InvalidArgument naming what differs otherwise.
  Status MatchesSpec(const Spec& spec) const;

  // InvalidArgument naming the component, dtypes and shapes when `tuple` does not
  // fit; then blocks until stored. Errors as in the file comment.
  Status Enqueue(Tuple tuple);
  // `batch` holds one tensor per component whose dimension 0 indexes elements.
  Status EnqueueMany(const Tuple& batch);
  // One element; see the file comment for blocking and errors.
  Status Dequeue(Tuple* tuple);
  // n >= 1 elements (fewer when allow_small_batch and the queue closed), in
  // dequeue order. REQUIRES: n >= 1.
  Status DequeueMany(int64_t n, bool allow_small_batch, std::vector<Tuple>* elements);
  Status CloseQueue(bool cancel_pending_enqueues);
  // The session closes: every pending and later operation fails with Cancelled.
  void Close() override;

  int64_t Size() const;
  bool IsClosed() const;
  const Spec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  Kind kind() const { return spec_.kind; }
  int num_components() const { return static_cast<int>(spec_.dtypes.size()); }
  bool has_shapes() const { return !spec_.shapes.empty(); }
  int64_t capacity() const { return spec_.capacity; }
  int64_t min_after_dequeue() const { return spec_.min_after_dequeue; }
  std::string DebugString() const override;

  // The shape of component c of a batch of n elements: [n] + element shape.
  // REQUIRES: has_shapes().
  TensorShape BatchShape(int c, int64_t n) const;
  // Copies component c of every element into consecutive rows of `out`, which
  // has shape BatchShape(c, elements.size()): memcpy for numbers, string copies
  // for strings.
  static void GatherComponent(const std::vector<Tuple>& elements, int c, Tensor* out);

 private:
  Status ValidateTuple(const Tuple& tuple) const;
  Status ValidateManyTuple(const Tuple& batch) const;
  // Stores `elements` in order as room frees. Shared by Enqueue and EnqueueMany.
  Status EnqueueElements(std::vector<Tuple> elements);
  // Removes one element: the oldest (FIFO) or a uniformly random one. REQUIRES: mu_ held.
  Tuple TakeOneLocked();
  // Puts back a partial DequeueMany so that a later dequeue sees the same order.
  void RestoreLocked(std::vector<Tuple>* taken);
  void LeaveLine(std::deque<uint64_t>* line, uint64_t ticket);
  std::string ClosedMessage() const;

  const Spec spec_;
  const size_t capacity_;  // spec_.capacity, or SIZE_MAX when unbounded

  mutable std::mutex mu_;
  std::condition_variable cv_;        // any change: elements, lines, closing
  std::deque<Tuple> elements_;        // guarded by mu_
  bool closed_ = false;               // guarded by mu_
  bool cancelled_ = false;            // guarded by mu_; the session closed
  uint64_t next_ticket_ = 0;          // guarded by mu_
  std::deque<uint64_t> enqueue_line_;  // guarded by mu_; the front may make progress
  std::deque<uint64_t> dequeue_line_;  // guarded by mu_
  // Bumped by CloseQueue(true): enqueues that started under an older epoch fail.
  uint64_t enqueue_epoch_ = 0;        // guarded by mu_
  std::mt19937_64 rng_;               // guarded by mu_; RandomShuffleQueue's picks
};

}  // namespace tw

#endif  // TOWERFLOW_DATA_QUEUE_H_
