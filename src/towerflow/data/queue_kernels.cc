// CPU kernels of the queue ops. FIFOQueue / RandomShuffleQueue own a string
// scalar holding the queue's resource name and output a reference to it (TF1's
// Ref(string) handle); every other queue kernel reads that name from its ref
// input "handle" and finds the QueueResource in the session's ResourceMgr (cached
// per kernel, since a kernel belongs to one session). Blocking kernels block on
// the queue's condition variable inside Compute: the executor runs each kernel
// synchronously on a thread of its own step.
#include <memory>
#include <mutex>

#include "towerflow/data/queue_internal.h"

namespace tw {
namespace {

class QueueOp : public OpKernel {
 public:
  explicit QueueOp(OpKernelConstruction* c) : OpKernel(c) {
    auto spec = queue_internal::SpecFromNode(c->node());
    TW_OP_REQUIRES_OK(c, spec.status());
    spec_ = std::move(spec).value();
    TW_OP_REQUIRES_OK(c, QueueResource::Validate(spec_));
    handle_ = Tensor::String(spec_.name);
  }

  void Compute(OpKernelContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!queue_) {
        auto found = ctx->resource_mgr()->LookupOrCreate<QueueResource>(
            spec_.name, [this]() -> StatusOr<std::shared_ptr<QueueResource>> {
              return std::make_shared<QueueResource>(spec_);
            });
        TW_OP_REQUIRES_OK(ctx, found.status());
        TW_OP_REQUIRES_OK(ctx, (*found)->MatchesSpec(spec_));
        queue_ = *found;
      }
    }
    // handle_ never changes after construction; the mutex is what refs carry.
    ctx->set_output_ref(0, &handle_mu_, &handle_);
  }
  bool IsExpensive() const override { return false; }

 private:
  QueueResource::Spec spec_;
  std::mutex handle_mu_;
  Tensor handle_;
  std::mutex mu_;
  std::shared_ptr<QueueResource> queue_;  // guarded by mu_; keeps the queue alive with the kernel
};

// Base of the kernels that act on the queue behind ref input 0.
class QueueAccessOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

 protected:
  StatusOr<std::shared_ptr<QueueResource>> GetQueue(OpKernelContext* ctx) {
    const Tensor& handle = ctx->input(0);
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_ && handle.dtype() == kString && handle.rank() == 0 && handle.scalar<std::string>() == key_) {
      return queue_;
    }
    auto found = QueueResource::FromHandle(ctx->resource_mgr(), handle);
    if (!found.ok()) return found.status();
    queue_ = *found;
    key_ = queue_->name();
    return queue_;
  }

  // The component types the node was built for must be the queue's.
  static Status CheckTypes(const QueueResource& q, const std::vector<DataType>& types) {
    if (types == q.spec().dtypes) return Status::OK();
    std::string want, got;
    for (DataType t : q.spec().dtypes) want += (want.empty() ? "" : ", ") + std::string(DataTypeName(t));
    for (DataType t : types) got += (got.empty() ? "" : ", ") + std::string(DataTypeName(t));
    return errors::InvalidArgument(QueueResource::KindName(q.kind()), " '", q.name(), "' has component types [",
                                   want, "] but the op expects [", got, "]");
  }

 private:
  std::mutex mu_;
  std::string key_;                       // guarded by mu_
  std::shared_ptr<QueueResource> queue_;  // guarded by mu_
};

class QueueEnqueueOp : public QueueAccessOp {
 public:
  explicit QueueEnqueueOp(OpKernelConstruction* c)
      : QueueAccessOp(c), many_(c->node().op() == "QueueEnqueueMany") {
    TW_OP_REQUIRES_OK(c, c->GetAttr("Tcomponents", &types_));
    positions_ = queue_internal::GroupedPositions(types_);
  }

  void Compute(OpKernelContext* ctx) override {
    auto queue = GetQueue(ctx);
    TW_OP_REQUIRES_OK(ctx, queue.status());
    QueueResource& q = **queue;
    TW_OP_REQUIRES_OK(ctx, CheckTypes(q, types_));
    QueueResource::Tuple tuple;
    tuple.reserve(types_.size());
    for (int p : positions_) tuple.push_back(ctx->input(1 + p));
    TW_OP_REQUIRES_OK(ctx, many_ ? q.EnqueueMany(tuple) : q.Enqueue(std::move(tuple)));
  }
  // Waits while the queue is full.
  bool MayBlock() const override { return true; }

 private:
  const bool many_;
  std::vector<DataType> types_;
  std::vector<int> positions_;
};

class QueueDequeueOp : public QueueAccessOp {
 public:
  enum class Mode { kOne, kMany, kUpTo };
  explicit QueueDequeueOp(OpKernelConstruction* c) : QueueAccessOp(c) {
    const std::string& op = c->node().op();
    mode_ = op == "QueueDequeue" ? Mode::kOne : op == "QueueDequeueMany" ? Mode::kMany : Mode::kUpTo;
    TW_OP_REQUIRES_OK(c, c->GetAttr("component_types", &types_));
    positions_ = queue_internal::GroupedPositions(types_);
  }

  void Compute(OpKernelContext* ctx) override {
    auto queue = GetQueue(ctx);
    TW_OP_REQUIRES_OK(ctx, queue.status());
    QueueResource& q = **queue;
    TW_OP_REQUIRES_OK(ctx, CheckTypes(q, types_));
    // Without waiting when the executor asks (see OpKernel::MayBlock).
    bool would_wait = false;
    bool* try_only = ctx->may_wait() ? nullptr : &would_wait;
    if (mode_ == Mode::kOne) {
      QueueResource::Tuple tuple;
      TW_OP_REQUIRES_OK(ctx, q.Dequeue(&tuple, try_only));
      if (would_wait) return ctx->SetWouldWait();
      for (size_t i = 0; i < tuple.size(); ++i) ctx->set_output(positions_[i], std::move(tuple[i]));
      return;
    }
    const Tensor& n_tensor = ctx->input(1);
    TW_OP_REQUIRES(ctx, n_tensor.NumElements() == 1,
                   errors::InvalidArgument("n must be a scalar, got shape ", n_tensor.shape().ToString()));
    const int64_t n = n_tensor.scalar<int32_t>();
    const char* what = mode_ == Mode::kMany ? "DequeueMany" : "DequeueUpTo";
    TW_OP_REQUIRES(ctx, n >= 0, errors::InvalidArgument(what, " requested ", n, " < 0 elements"));
    TW_OP_REQUIRES(ctx, q.has_shapes(),
                   errors::InvalidArgument(QueueResource::KindName(q.kind()), "'s ", what,
                                           " requires the components to have specified shapes."));
    QueueResource::Tuple batch;
    if (n > 0) {
      TW_OP_REQUIRES_OK(ctx, q.DequeueBatch(n, mode_ == Mode::kUpTo, &batch, try_only));
      if (would_wait) return ctx->SetWouldWait();
      for (size_t i = 0; i < batch.size(); ++i) ctx->set_output(positions_[i], std::move(batch[i]));
      return;
    }
    for (size_t i = 0; i < types_.size(); ++i) {
      Tensor* out = nullptr;
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(positions_[i], q.BatchShape(static_cast<int>(i), 0), &out));
    }
  }
  // Waits until enough elements are there; tells under the queue's lock
  // whether it would.
  bool MayBlock() const override { return true; }
  bool CanTryWithoutWaiting() const override { return true; }

 private:
  Mode mode_ = Mode::kOne;
  std::vector<DataType> types_;
  std::vector<int> positions_;
};

class QueueCloseOp : public QueueAccessOp {
 public:
  explicit QueueCloseOp(OpKernelConstruction* c) : QueueAccessOp(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("cancel_pending_enqueues", &cancel_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto queue = GetQueue(ctx);
    TW_OP_REQUIRES_OK(ctx, queue.status());
    TW_OP_REQUIRES_OK(ctx, (*queue)->CloseQueue(cancel_));
  }
  // A close without cancel waits behind pending enqueues.
  bool MayBlock() const override { return !cancel_; }

 private:
  bool cancel_ = false;
};

class QueueSizeOp : public QueueAccessOp {
 public:
  using QueueAccessOp::QueueAccessOp;
  void Compute(OpKernelContext* ctx) override {
    auto queue = GetQueue(ctx);
    TW_OP_REQUIRES_OK(ctx, queue.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    out->data<int32_t>()[0] = static_cast<int32_t>((*queue)->Size());
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

namespace queue_internal {

void RegisterQueueKernels(KernelRegistry& r) {
  r.RegisterUntyped<QueueOp>("FIFOQueue", kDeviceCpu);
  r.RegisterUntyped<QueueOp>("RandomShuffleQueue", kDeviceCpu);
  r.RegisterUntyped<QueueEnqueueOp>("QueueEnqueue", kDeviceCpu);
  r.RegisterUntyped<QueueEnqueueOp>("QueueEnqueueMany", kDeviceCpu);
  r.RegisterUntyped<QueueDequeueOp>("QueueDequeue", kDeviceCpu);
  r.RegisterUntyped<QueueDequeueOp>("QueueDequeueMany", kDeviceCpu);
  r.RegisterUntyped<QueueDequeueOp>("QueueDequeueUpTo", kDeviceCpu);
  r.RegisterUntyped<QueueCloseOp>("QueueClose", kDeviceCpu);
  r.RegisterUntyped<QueueSizeOp>("QueueSize", kDeviceCpu);
}

}  // namespace queue_internal
}  // namespace tw
