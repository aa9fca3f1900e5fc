#include "towerflow/data/queue.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "towerflow/core/seeded_engine.h"

namespace tw {
namespace {

std::string ShapeListString(const std::vector<TensorShape>& shapes) {
  std::string out = "[";
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? ", " : "") + shapes[i].ToString();
  return out + "]";
}

std::string TypeListString(const std::vector<DataType>& types) {
  std::string out = "[";
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + std::string(DataTypeName(types[i]));
  return out + "]";
}

// Copies `count` elements of `dtype` from src[src_offset...] to dst[dst_offset...].
void CopyRange(const Tensor& src, int64_t src_offset, Tensor* dst, int64_t dst_offset, int64_t count) {
  if (count == 0) return;
  if (src.dtype() == kString) {
    const std::string* s = src.data<std::string>() + src_offset;
    std::string* d = dst->data<std::string>() + dst_offset;
    std::copy(s, s + count, d);
    return;
  }
  const size_t width = DataTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst->raw_data()) + static_cast<size_t>(dst_offset) * width,
              static_cast<const char*>(src.raw_data()) + static_cast<size_t>(src_offset) * width,
              static_cast<size_t>(count) * width);
}

}  // namespace

const char* QueueResource::KindName(Kind kind) {
  return kind == Kind::kFIFO ? "FIFOQueue" : "RandomShuffleQueue";
}

Status QueueResource::Validate(const Spec& spec) {
  // Shape functions validate before the node (and so the name) exists.
  const std::string what = std::string(KindName(spec.kind)) + (spec.name.empty() ? "" : " '" + spec.name + "'");
  if (spec.dtypes.empty()) return errors::InvalidArgument(what, " needs at least one component type");
  if (!spec.shapes.empty() && spec.shapes.size() != spec.dtypes.size()) {
    return errors::InvalidArgument(what, " has ", spec.dtypes.size(), " component types but ",
                                   spec.shapes.size(), " shapes (give none or one per component)");
  }
  for (DataType t : spec.dtypes) {
    if (t == DataType::kInvalid) return errors::InvalidArgument(what, " has an invalid component type");
  }
  if (spec.kind == Kind::kRandomShuffle) {
    if (spec.min_after_dequeue < 0) {
      return errors::InvalidArgument(what, ": min_after_dequeue ", spec.min_after_dequeue, " must be >= 0");
    }
    if (spec.capacity >= 0 && spec.min_after_dequeue >= spec.capacity) {
      return errors::InvalidArgument(what, ": min_after_dequeue ", spec.min_after_dequeue,
                                     " must be smaller than capacity ", spec.capacity);
    }
  }
  return Status::OK();
}

// Rows storage needs a fixed size per component: every shape given, no strings.
static bool UsesRows(const QueueResource::Spec& spec) {
  if (spec.shapes.empty()) return false;
  return std::none_of(spec.dtypes.begin(), spec.dtypes.end(), [](DataType t) { return t == kString; });
}

QueueResource::QueueResource(Spec spec)
    : spec_(std::move(spec)),
      capacity_(spec_.capacity < 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(spec_.capacity)),
      rows_(UsesRows(spec_)),
      rng_(SeededEngine(spec_.seed, spec_.seed2)) {
  if (rows_) {
    for (size_t c = 0; c < spec_.dtypes.size(); ++c) {
      row_bytes_.push_back(static_cast<size_t>(spec_.shapes[c].num_elements()) * DataTypeSize(spec_.dtypes[c]));
    }
    slabs_.resize(spec_.dtypes.size());
  }
}

StatusOr<std::shared_ptr<QueueResource>> QueueResource::Find(ResourceMgr* resources, const std::string& name) {
  return resources->LookupOrCreate<QueueResource>(name, [&name]() -> StatusOr<std::shared_ptr<QueueResource>> {
    return errors::NotFound("Queue '", name, "' does not exist in this session (its queue op has not run)");
  });
}

StatusOr<std::shared_ptr<QueueResource>> QueueResource::FromHandle(ResourceMgr* resources, const Tensor& handle) {
  if (handle.dtype() != kString || handle.rank() != 0) {
    return errors::InvalidArgument("a queue handle must be a string scalar, got ", handle.DebugString());
  }
  return Find(resources, handle.scalar<std::string>());
}

Status QueueResource::MatchesSpec(const Spec& spec) const {
  const std::string shared = "Shared queue '" + spec_.name + "'";
  if (spec.kind != spec_.kind) {
    return errors::InvalidArgument(shared, " has type '", KindName(spec_.kind), "' but was requested as ",
                                   KindName(spec.kind));
  }
  if (spec.capacity != spec_.capacity) {
    return errors::InvalidArgument(shared, " has capacity ", spec_.capacity, " but requested capacity was ",
                                   spec.capacity);
  }
  if (spec.min_after_dequeue != spec_.min_after_dequeue) {
    return errors::InvalidArgument(shared, " has min_after_dequeue ", spec_.min_after_dequeue,
                                   " but requested min_after_dequeue was ", spec.min_after_dequeue);
  }
  if (spec.dtypes != spec_.dtypes) {
    return errors::InvalidArgument(shared, " has component types ", TypeListString(spec_.dtypes),
                                   " but requested component types were ", TypeListString(spec.dtypes));
  }
  if (spec.shapes != spec_.shapes) {
    return errors::InvalidArgument(shared, " has component shapes ", ShapeListString(spec_.shapes),
                                   " but requested component shapes were ", ShapeListString(spec.shapes));
  }
  return Status::OK();
}

// Component count and dtypes, shared by Enqueue and EnqueueMany validation.
static Status CheckComponentTypes(const std::vector<DataType>& want, const std::vector<Tensor>& tuple, const char* kind,
                                  const std::string& name) {
  if (tuple.size() != want.size()) {
    return errors::InvalidArgument("Wrong number of components in tuple for ", kind, " '", name,
                                   "'. Expected ", want.size(), ", got ", tuple.size());
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (tuple[i].dtype() != want[i]) {
      return errors::InvalidArgument("Type mismatch in tuple component ", i, " of ", kind, " '", name,
                                     "'. Expected ", DataTypeName(want[i]), ", got ",
                                     DataTypeName(tuple[i].dtype()));
    }
  }
  return Status::OK();
}

Status QueueResource::ValidateTuple(const Tuple& tuple) const {
  TW_RETURN_IF_ERROR(CheckComponentTypes(spec_.dtypes, tuple, KindName(kind()), name()));
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (has_shapes() && tuple[i].shape() != spec_.shapes[i]) {
      return errors::InvalidArgument("Shape mismatch in tuple component ", i, " of ", KindName(kind()), " '",
                                     name(), "'. Expected ", spec_.shapes[i].ToString(), ", got ",
                                     tuple[i].shape().ToString());
    }
  }
  return Status::OK();
}

Status QueueResource::ValidateManyTuple(const Tuple& batch) const {
  TW_RETURN_IF_ERROR(CheckComponentTypes(spec_.dtypes, batch, KindName(kind()), name()));
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].rank() < 1) {
      return errors::InvalidArgument("EnqueueMany to ", KindName(kind()), " '", name(), "': component ", i,
                                     " is a scalar ", batch[i].shape().ToString(),
                                     "; it needs a dimension 0 to split into elements");
    }
  }
  const int64_t n = batch[0].dim(0);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (has_shapes()) {
      const TensorShape expected = BatchShape(static_cast<int>(i), n);
      if (batch[i].shape() != expected) {
        return errors::InvalidArgument("Shape mismatch in tuple component ", i, " of ", KindName(kind()), " '",
                                       name(), "'. Expected ", expected.ToString(), ", got ",
                                       batch[i].shape().ToString());
      }
    } else if (batch[i].dim(0) != n) {
      return errors::InvalidArgument("All input tensors must have the same size in the 0th dimension. "
                                     "Component ", i, " has ", batch[i].dim(0), ", and should have ", n);
    }
  }
  return Status::OK();
}

TensorShape QueueResource::BatchShape(int c, int64_t n) const {
  TensorShape shape = spec_.shapes[static_cast<size_t>(c)];
  shape.InsertDim(0, n);
  return shape;
}

uint32_t QueueResource::NewSlotLocked() {
  if (free_slots_.empty()) {
    if (rows_) {
      for (size_t c = 0; c < slabs_.size(); ++c) {
        slabs_[c].push_back(std::make_unique<char[]>(std::max<size_t>(1, kSlabRows * row_bytes_[c])));
      }
      // Pushed high to low, so that slots are taken low first.
      for (uint32_t i = kSlabRows; i > 0; --i) free_slots_.push_back(num_slots_ + i - 1);
      num_slots_ += kSlabRows;
    } else {
      tuples_.emplace_back();
      free_slots_.push_back(num_slots_++);
    }
  }
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void QueueResource::FreeSlotLocked(uint32_t slot) {
  if (!rows_) tuples_[slot] = Tuple();
  free_slots_.push_back(slot);
}

StatusOr<QueueResource::Tuple> QueueResource::ElementLocked(uint32_t slot) {
  if (!rows_) return std::move(tuples_[slot]);
  Tuple tuple;
  for (size_t c = 0; c < row_bytes_.size(); ++c) {
    TW_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), spec_.dtypes[c], spec_.shapes[c]));
    if (row_bytes_[c] > 0) std::memcpy(t.raw_data(), RowLocked(static_cast<int>(c), slot), row_bytes_[c]);
    tuple.push_back(std::move(t));
  }
  return tuple;
}

std::string QueueResource::ClosedMessage() const {
  return std::string(KindName(kind())) + " '" + name() + "' is closed.";
}

void QueueResource::LeaveLine(Line* line, Waiter* me) {
  const bool was_front = line->front() == me;
  if (was_front) {
    line->pop_front();  // the usual case: the one served leaves
  } else {
    line->erase(std::find(line->begin(), line->end(), me));  // a cancelled waiter
  }
  if (!was_front) return;
  // The next in line may now make progress.
  if (line == &dequeue_line_) dequeue_wake_at_ = 0;  // the next front sets its own
  WakeFront(*line);
}

void QueueResource::WakeEveryoneLocked() {
  for (Waiter* w : enqueue_line_) w->cv.notify_one();
  for (Waiter* w : dequeue_line_) w->cv.notify_one();
}

void QueueResource::NotifyDequeuersLocked() {
  if (!dequeue_line_.empty() && elements_.size() >= dequeue_wake_at_) WakeFront(dequeue_line_);
}

Status QueueResource::Enqueue(Tuple tuple) {
  TW_RETURN_IF_ERROR(ValidateTuple(tuple));
  return EnqueueElements(1, [&](size_t, uint32_t slot) {
    if (!rows_) {
      tuples_[slot] = std::move(tuple);
      return;
    }
    for (size_t c = 0; c < tuple.size(); ++c) {
      if (row_bytes_[c] > 0) std::memcpy(RowLocked(static_cast<int>(c), slot), tuple[c].raw_data(), row_bytes_[c]);
    }
  });
}

Status QueueResource::EnqueueMany(const Tuple& batch) {
  TW_RETURN_IF_ERROR(ValidateManyTuple(batch));
  const int64_t n = batch[0].dim(0);
  if (rows_) {
    // Each element's rows straight from the batch, as room frees.
    return EnqueueElements(static_cast<size_t>(n), [&](size_t i, uint32_t slot) {
      for (size_t c = 0; c < batch.size(); ++c) {
        if (row_bytes_[c] == 0) continue;
        std::memcpy(RowLocked(static_cast<int>(c), slot),
                    static_cast<const char*>(batch[c].raw_data()) + i * row_bytes_[c], row_bytes_[c]);
      }
    });
  }
  // Split outside the lock: one fresh host tensor per element and component.
  std::vector<Tuple> elements(static_cast<size_t>(n));
  for (size_t c = 0; c < batch.size(); ++c) {
    TensorShape element_shape = batch[c].shape();
    element_shape.RemoveDim(0);
    const int64_t per = element_shape.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      TW_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), batch[c].dtype(), element_shape));
      CopyRange(batch[c], i * per, &t, 0, per);
      elements[static_cast<size_t>(i)].push_back(std::move(t));
    }
  }
  return EnqueueElements(elements.size(), [&](size_t i, uint32_t slot) { tuples_[slot] = std::move(elements[i]); });
}

Status QueueResource::EnqueueElements(size_t count, const std::function<void(size_t i, uint32_t slot)>& store) {
  std::unique_lock<std::mutex> lock(mu_);
  if (cancelled_) return errors::Cancelled("Enqueue operation was cancelled");
  // TF completes an empty EnqueueMany at once, closed queue or not.
  if (count == 0) return Status::OK();
  if (closed_) return errors::Aborted(ClosedMessage());
  const uint64_t epoch = enqueue_epoch_;
  Waiter me;
  enqueue_line_.push_back(&me);
  size_t next = 0;
  Status status;
  for (;;) {
    if (cancelled_ || epoch != enqueue_epoch_) {
      status = errors::Cancelled("Enqueue operation was cancelled");
      break;
    }
    if (enqueue_line_.front() == &me) {
      // A CloseQueue(false) ahead of us in line has closed the queue.
      if (closed_) {
        status = errors::Aborted(ClosedMessage());
        break;
      }
      const size_t before = next;
      while (next < count && elements_.size() < capacity_) {
        const uint32_t slot = NewSlotLocked();
        store(next++, slot);
        elements_.push_back(slot);
      }
      if (next != before) NotifyDequeuersLocked();
      if (next == count) break;
    }
    me.cv.wait(lock);
  }
  LeaveLine(&enqueue_line_, &me);
  return status;
}

uint32_t QueueResource::TakeOneLocked() {
  uint32_t out;
  if (kind() == Kind::kFIFO) {
    out = elements_.front();
    elements_.pop_front();
  } else if (spec_.deterministic) {
    // A uniform pick among the oldest min_after_dequeue + 1 (the window), its
    // place taken by the oldest: the window then holds the others and the next
    // arrival, whatever else has arrived.
    const size_t window = std::min(elements_.size(), static_cast<size_t>(spec_.min_after_dequeue) + 1);
    const size_t i = static_cast<size_t>(rng_() % window);
    out = elements_[i];
    elements_[i] = elements_.front();
    elements_.pop_front();
  } else {
    // A uniform pick, moved to the back so that removal is O(1).
    const size_t i = static_cast<size_t>(rng_() % elements_.size());
    std::swap(elements_[i], elements_.back());
    out = elements_.back();
    elements_.pop_back();
  }
  return out;
}

void QueueResource::RestoreLocked(std::vector<uint32_t>* taken) {
  // FIFO: back to the front in the original order; a deterministic shuffle
  // too (into its window). Otherwise order is irrelevant.
  if (kind() == Kind::kFIFO || spec_.deterministic) {
    for (auto it = taken->rbegin(); it != taken->rend(); ++it) elements_.push_front(*it);
  } else {
    for (uint32_t slot : *taken) elements_.push_back(slot);
  }
  taken->clear();
}

Status QueueResource::Dequeue(Tuple* tuple, bool* would_wait) {
  std::vector<Tuple> elements;
  TW_RETURN_IF_ERROR(DequeueMany(1, false, &elements, would_wait));
  if (would_wait != nullptr && *would_wait) return Status::OK();
  *tuple = std::move(elements.front());
  return Status::OK();
}

Status QueueResource::DequeueMany(int64_t n, bool allow_small_batch, std::vector<Tuple>* elements,
                                  bool* would_wait) {
  elements->clear();
  std::vector<uint32_t> slots;
  std::unique_lock<std::mutex> lock(mu_);
  TW_RETURN_IF_ERROR(TakeSlots(n, allow_small_batch, lock, &slots, would_wait));
  Status status;
  for (uint32_t slot : slots) {
    if (status.ok()) {
      StatusOr<Tuple> element = ElementLocked(slot);
      if (element.ok()) {
        elements->push_back(std::move(element).value());
      } else {
        status = element.status();
      }
    }
    FreeSlotLocked(slot);
  }
  if (!status.ok()) elements->clear();
  return status;
}

Status QueueResource::DequeueBatch(int64_t n, bool allow_small_batch, Tuple* batch, bool* would_wait) {
  batch->clear();
  std::vector<uint32_t> slots;
  std::unique_lock<std::mutex> lock(mu_);
  TW_RETURN_IF_ERROR(TakeSlots(n, allow_small_batch, lock, &slots, would_wait));
  if (would_wait != nullptr && *would_wait) return Status::OK();
  const int64_t k = static_cast<int64_t>(slots.size());
  // Rows are copied without the lock: the taken slots are this dequeue's
  // until freed, and slabs never move, so enqueues and other dequeues (a
  // tower's beside this one) go on meanwhile. Tuples are read under it.
  std::vector<const char*> rows;
  if (rows_) {
    rows.reserve(static_cast<size_t>(k) * row_bytes_.size());
    for (int c = 0; c < num_components(); ++c) {
      for (uint32_t slot : slots) rows.push_back(RowLocked(c, slot));
    }
    lock.unlock();
  }
  Status status;
  for (int c = 0; c < num_components() && status.ok(); ++c) {
    StatusOr<Tensor> out = Tensor::Allocate(CpuAllocator(), spec_.dtypes[static_cast<size_t>(c)], BatchShape(c, k));
    if (!out.ok()) {
      status = out.status();
      break;
    }
    if (rows_) {
      const size_t bytes = row_bytes_[static_cast<size_t>(c)];
      char* dst = static_cast<char*>(out->raw_data());
      const char* const* src = rows.data() + static_cast<size_t>(c) * static_cast<size_t>(k);
      for (int64_t i = 0; i < k && bytes > 0; ++i) std::memcpy(dst + static_cast<size_t>(i) * bytes, src[i], bytes);
    } else {
      const int64_t per = spec_.shapes[static_cast<size_t>(c)].num_elements();
      for (int64_t i = 0; i < k; ++i) {
        CopyRange(tuples_[slots[static_cast<size_t>(i)]][static_cast<size_t>(c)], 0, &out.value(), i * per, per);
      }
    }
    batch->push_back(std::move(out).value());
  }
  if (!lock.owns_lock()) lock.lock();
  for (uint32_t slot : slots) FreeSlotLocked(slot);
  if (!status.ok()) batch->clear();
  return status;
}

Status QueueResource::TakeSlots(int64_t n, bool allow_small_batch, std::unique_lock<std::mutex>& lock,
                                std::vector<uint32_t>* slots, bool* would_wait) {
  const size_t want = static_cast<size_t>(n);
  if (would_wait != nullptr) {
    // At once only when first in line and then never waiting: a closed queue
    // (it serves or fails at once), or all `want` elements there beyond what
    // a shuffle queue keeps.
    const size_t keep = static_cast<size_t>(spec_.min_after_dequeue);
    *would_wait = !cancelled_ && (!dequeue_line_.empty() || (!closed_ && elements_.size() < keep + want));
    if (*would_wait) return Status::OK();
  }
  if (cancelled_) return errors::Cancelled("Dequeue operation was cancelled");
  Waiter me;
  dequeue_line_.push_back(&me);
  Status status;
  for (;;) {
    if (cancelled_) {
      RestoreLocked(slots);
      status = errors::Cancelled("Dequeue operation was cancelled");
      break;
    }
    if (dequeue_line_.front() == &me) {
      const size_t remaining = want - slots->size();
      if (closed_ && elements_.size() < remaining) {
        // Not enough will ever come: give back what was taken, then either take
        // what is left (dequeue_up_to) or fail.
        RestoreLocked(slots);
        if (allow_small_batch && !elements_.empty()) {
          while (!elements_.empty()) slots->push_back(TakeOneLocked());
          WakeFront(enqueue_line_);
          break;
        }
        status = errors::OutOfRange(KindName(kind()), " '", name(),
                                    "' is closed and has insufficient elements (requested ", n,
                                    ", current size ", elements_.size(), ")");
        break;
      }
      // While open, a shuffle queue keeps min_after_dequeue elements to mix with.
      const size_t keep = closed_ ? 0 : static_cast<size_t>(spec_.min_after_dequeue);
      size_t available = elements_.size() > keep ? elements_.size() - keep : 0;
      if (available > 0 && remaining > 0) {
        for (available = std::min(available, remaining); available > 0; --available) {
          slots->push_back(TakeOneLocked());
        }
        WakeFront(enqueue_line_);  // room for a blocked enqueue
      }
      if (slots->size() == want) break;
      // Wake when all that is still needed can be taken at once, or when the
      // queue is full (the enqueuers wait for this dequeue to make room).
      dequeue_wake_at_ = std::min(keep + (want - slots->size()), capacity_);
    }
    me.cv.wait(lock);
  }
  LeaveLine(&dequeue_line_, &me);
  return status;
}

Status QueueResource::CloseQueue(bool cancel_pending_enqueues) {
  std::unique_lock<std::mutex> lock(mu_);
  if (cancel_pending_enqueues) {
    closed_ = true;
    ++enqueue_epoch_;
    WakeEveryoneLocked();
    return Status::OK();
  }
  if (cancelled_) return errors::Cancelled("Enqueue operation was cancelled");
  // A close without cancel is served in the enqueue line, behind the enqueues
  // already waiting (TF runs it as an enqueue attempt): those still complete.
  const uint64_t epoch = enqueue_epoch_;
  Waiter me;
  enqueue_line_.push_back(&me);
  Status status;
  for (;;) {
    if (cancelled_ || epoch != enqueue_epoch_) {
      status = errors::Cancelled("Enqueue operation was cancelled");
      break;
    }
    if (enqueue_line_.front() == &me) {
      if (closed_) {
        status = errors::Aborted("Queue '", name(), "' is already closed.");
      } else {
        closed_ = true;
        WakeFront(dequeue_line_);  // a waiting dequeue may now fail or take a short batch
      }
      break;
    }
    me.cv.wait(lock);
  }
  LeaveLine(&enqueue_line_, &me);
  return status;
}

void QueueResource::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  closed_ = true;
  WakeEveryoneLocked();
}

int64_t QueueResource::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(elements_.size());
}

int64_t QueueResource::StorageSlots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_slots_;
}

bool QueueResource::IsClosed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

std::string QueueResource::DebugString() const {
  return StrCat(KindName(kind()), " '", name(), "' ", TypeListString(spec_.dtypes), " size ", Size(),
                " capacity ", spec_.capacity);
}

}  // namespace tw
