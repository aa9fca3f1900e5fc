// QueueResource: the storage and blocking semantics behind TF1's FIFOQueue and
// RandomShuffleQueue, kept as a session resource (ResourceMgr) and driven by the
// queue kernels (queue_kernels.cc).
//
// An element is a tuple of tensors, one per component. The queue holds a deque
// of slots, and each slot holds one element in one of two ways:
// - rows (every component has a fully defined shape and a numeric dtype: every
//   queue that batches): each component's value is a fixed-size row in slabs of
//   64 rows, allocated as the queue first grows and reused as elements leave.
//   Enqueue copies the tensors' bytes in; EnqueueMany copies each element's
//   rows straight from the batch (no tensor per element); DequeueBatch copies
//   the rows into one output tensor per component. Memory stays at the most
//   elements the queue has held at once (at most its capacity), rounded up to
//   a slab.
// - tuples (string components, or shapes not given): the tensors themselves;
//   Enqueue stores them as they are (sharing their buffers, as TF's
//   PersistentTensor does) and EnqueueMany splits its batch into fresh host
//   tensors.
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
// Enqueues wait on one condition variable, dequeues on another (a dequeue is
// woken once it can take all it still needs); every wait ends on close or
// cancellation.
// Thread-safe: all state is guarded by one mutex, held only to move tuples
// and slots (a dequeue copies the rows of the slots it took without it).
#ifndef TOWERFLOW_DATA_QUEUE_H_
#define TOWERFLOW_DATA_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
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
    // RandomShuffleQueue only. Each element is drawn from the oldest
    // min_after_dequeue + 1 elements (a shuffle buffer of fixed size, as
    // tf.data's shuffle) instead of from all the queue holds, which depends on
    // how far the enqueuers have got: with a seed, the order then depends on
    // the order of the enqueues alone, not on the threads' timing.
    bool deterministic = false;
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
  // One element; see the file comment for blocking and errors. The dequeues
  // take an optional `would_wait`: given, a dequeue that would have to wait
  // (others are ahead in line, or the elements it needs are not all there and
  // the queue is open) takes nothing, sets *would_wait and returns OK; one
  // that completes (or fails) at once sets it false.
  Status Dequeue(Tuple* tuple, bool* would_wait = nullptr);
  // n >= 1 elements (fewer when allow_small_batch and the queue closed), in
  // dequeue order. REQUIRES: n >= 1.
  Status DequeueMany(int64_t n, bool allow_small_batch, std::vector<Tuple>* elements, bool* would_wait = nullptr);
  // The same elements stacked: one tensor per component, of shape
  // BatchShape(c, k) for the k elements taken, rows in dequeue order (what
  // QueueDequeueMany / QueueDequeueUpTo output). REQUIRES: n >= 1, has_shapes().
  Status DequeueBatch(int64_t n, bool allow_small_batch, Tuple* batch, bool* would_wait = nullptr);
  Status CloseQueue(bool cancel_pending_enqueues);
  // The session closes: every pending and later operation fails with Cancelled.
  void Close() override;

  int64_t Size() const;
  bool IsClosed() const;
  // Elements the storage can hold without growing: with rows storage the most
  // the queue has held at once (with the elements of dequeues in progress),
  // rounded up to a slab of 64; with tuple storage, the same without rounding.
  int64_t StorageSlots() const;
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

 private:
  static constexpr uint32_t kSlabRows = 64;

  Status ValidateTuple(const Tuple& tuple) const;
  Status ValidateManyTuple(const Tuple& batch) const;
  // Stores `count` elements in order as room frees, calling store(i, slot)
  // with mu_ held to fill a fresh slot with element i. Shared by Enqueue and
  // EnqueueMany.
  Status EnqueueElements(size_t count, const std::function<void(size_t i, uint32_t slot)>& store);
  // Waits for and takes n slots (fewer: allow_small_batch on a closed queue) in
  // dequeue order; returns with `lock` held, the slots out of the queue but not
  // yet free. Shared by the dequeues; `would_wait` as theirs (nothing taken).
  Status TakeSlots(int64_t n, bool allow_small_batch, std::unique_lock<std::mutex>& lock,
                   std::vector<uint32_t>* slots, bool* would_wait);
  // Removes one element: the oldest (FIFO) or a uniformly random one. REQUIRES: mu_ held.
  uint32_t TakeOneLocked();
  // Puts back a partial dequeue so that a later dequeue sees the same order.
  void RestoreLocked(std::vector<uint32_t>* taken);
  // A free slot, growing the storage by a slab when none is left; its return
  // to the free list. REQUIRES: mu_ held.
  uint32_t NewSlotLocked();
  void FreeSlotLocked(uint32_t slot);
  // Component c's row of `slot` (rows_ storage). REQUIRES: mu_ held.
  char* RowLocked(int c, uint32_t slot) {
    return slabs_[static_cast<size_t>(c)][slot / kSlabRows].get() + (slot % kSlabRows) * row_bytes_[static_cast<size_t>(c)];
  }
  // Element `slot` as a tuple of tensors: the stored tuple (moved out), or
  // fresh host tensors holding its rows. REQUIRES: mu_ held.
  StatusOr<Tuple> ElementLocked(uint32_t slot);
  // One thread waiting in a line, on a condition variable of its own: only
  // the front of a line can make progress, so a change wakes the front alone
  // (six queue runner threads blocked on a full queue used to wake together
  // at every dequeue and contend for mu_ to find that one of them could go;
  // that thundering herd cost the seed's input pipeline two thirds of its
  // records/s on two cores).
  struct Waiter {
    std::condition_variable cv;
  };
  using Line = std::deque<Waiter*>;
  void LeaveLine(Line* line, Waiter* me);
  // Wakes the front of `line` / every waiter of both lines (cancellation,
  // closing with cancel_pending_enqueues). REQUIRES: mu_ held.
  static void WakeFront(const Line& line) {
    if (!line.empty()) line.front()->cv.notify_one();
  }
  void WakeEveryoneLocked();
  // Wakes the front dequeuer when it can make the progress it waits for
  // (dequeue_wake_at_). REQUIRES: mu_ held.
  void NotifyDequeuersLocked();
  std::string ClosedMessage() const;

  const Spec spec_;
  const size_t capacity_;  // spec_.capacity, or SIZE_MAX when unbounded

  // Rows storage (see the file comment) and each component's row size in bytes.
  const bool rows_;
  std::vector<size_t> row_bytes_;

  mutable std::mutex mu_;
  // Enqueuers (and closes in the enqueue line) wait in enqueue_line_: for
  // room, their turn, closing. Dequeuers wait in dequeue_line_: for elements,
  // their turn, closing. An enqueue wakes the front dequeuer only once it can
  // take all it still needs (or the queue is full: it must take to make
  // room), not at every element: a DequeueMany(100) fed one element at a time
  // used to wake 100 times.
  size_t dequeue_wake_at_ = 0;        // guarded by mu_; the queue size the front dequeuer waits for (0: any)
  std::deque<uint32_t> elements_;     // guarded by mu_; the queued elements' slots, in queue order
  // Rows storage: [component][slab] of kSlabRows rows each. Tuples storage: by slot.
  std::vector<std::vector<std::unique_ptr<char[]>>> slabs_;  // guarded by mu_
  std::deque<Tuple> tuples_;                                 // guarded by mu_
  std::vector<uint32_t> free_slots_;                         // guarded by mu_
  uint32_t num_slots_ = 0;                                   // guarded by mu_
  bool closed_ = false;               // guarded by mu_
  bool cancelled_ = false;            // guarded by mu_; the session closed
  Line enqueue_line_;                 // guarded by mu_; the front may make progress
  Line dequeue_line_;                 // guarded by mu_
  // Bumped by CloseQueue(true): enqueues that started under an older epoch fail.
  uint64_t enqueue_epoch_ = 0;        // guarded by mu_
  std::mt19937_64 rng_;               // guarded by mu_; RandomShuffleQueue's picks
};

}  // namespace tw

#endif  // TOWERFLOW_DATA_QUEUE_H_
