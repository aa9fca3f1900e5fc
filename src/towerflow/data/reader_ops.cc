// The reader op family: ReaderRead and ReaderReadUpTo (here; TF's, on a
// Ref(string) reader handle) and the readers themselves (TFRecordReader in
// tfrecord_reader_op.cc). Both take file names from a queue of string scalars
// (queue.h) whenever their reader needs the next file.
#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/data/queue.h"
#include "towerflow/data/register.h"
#include "towerflow/data/tfrecord_reader_op.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {
namespace {

// The resource named by the string scalar behind ref input `i`, cached per
// kernel (a kernel belongs to one session) as long as the name stays the same.
template <typename T>
class ResourceCache {
 public:
  StatusOr<std::shared_ptr<T>> Get(OpKernelContext* ctx, int i, const char* what) {
    const Tensor& handle = ctx->input(i);
    if (handle.dtype() != kString || handle.NumElements() != 1) {
      return errors::InvalidArgument("a ", what, " handle must be a string scalar, got ", handle.DebugString());
    }
    const std::string& key = handle.data<std::string>()[0];
    std::lock_guard<std::mutex> lock(mu_);
    if (resource_ && key == key_) return resource_;
    auto found = ctx->resource_mgr()->LookupOrCreate<T>(key, [&]() -> StatusOr<std::shared_ptr<T>> {
      return errors::NotFound(what, " '", key, "' does not exist in this session");
    });
    if (!found.ok()) return found.status();
    resource_ = *found;
    key_ = key;
    return resource_;
  }

 private:
  std::mutex mu_;
  std::string key_;              // guarded by mu_
  std::shared_ptr<T> resource_;  // guarded by mu_
};

// What ReaderRead and ReaderReadUpTo share: the reader and the filename queue
// behind their handles, and the queue's next file name.
class ReaderKernelBase : public OpKernel {
 public:
  using OpKernel::OpKernel;
  // Waits on the filename queue when the reader needs its next file.
  bool MayBlock() const override { return true; }

 protected:
  // The reader, and in *next_file a function taking the queue's next file name.
  StatusOr<std::shared_ptr<ReaderResource>> Prepare(OpKernelContext* ctx, ReaderResource::NextWork* next_file) {
    auto reader = readers_.Get(ctx, 0, "Reader");
    TW_RETURN_IF_ERROR(reader.status());
    auto queue = queues_.Get(ctx, 1, "Queue");
    TW_RETURN_IF_ERROR(queue.status());
    const QueueResource& q = **queue;
    if (q.spec().dtypes != std::vector<DataType>{kString}) {
      return errors::InvalidArgument(ctx->node().op(), " takes file names from a queue of strings, but ",
                                     QueueResource::KindName(q.kind()), " '", q.name(), "' holds ",
                                     q.num_components(), " component(s)",
                                     q.num_components() > 0 ? " starting with " : "",
                                     q.num_components() > 0 ? DataTypeName(q.spec().dtypes[0]) : "");
    }
    *next_file = [queue = *queue](std::string* file) -> Status {
      QueueResource::Tuple tuple;
      TW_RETURN_IF_ERROR(queue->Dequeue(&tuple));
      if (tuple.size() != 1 || tuple[0].dtype() != kString || tuple[0].NumElements() != 1) {
        return errors::InvalidArgument("Expected to dequeue a one-element string tensor (a file name), got ",
                                       tuple.empty() ? std::string("nothing") : tuple[0].DebugString());
      }
      *file = tuple[0].data<std::string>()[0];
      return Status::OK();
    };
    return *reader;
  }

 private:
  ResourceCache<ReaderResource> readers_;
  ResourceCache<QueueResource> queues_;
};

class ReaderReadOp : public ReaderKernelBase {
 public:
  using ReaderKernelBase::ReaderKernelBase;

  void Compute(OpKernelContext* ctx) override {
    ReaderResource::NextWork next_file;
    auto reader = Prepare(ctx, &next_file);
    TW_OP_REQUIRES_OK(ctx, reader.status());
    std::string key, value;
    TW_OP_REQUIRES_OK(ctx, (*reader)->Read(next_file, &key, &value));
    ctx->set_output(0, Tensor::Scalar<std::string>(std::move(key)));
    ctx->set_output(1, Tensor::Scalar<std::string>(std::move(value)));
  }
};

class ReaderReadUpToOp : public ReaderKernelBase {
 public:
  using ReaderKernelBase::ReaderKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& count = ctx->input(2);
    TW_OP_REQUIRES(ctx, count.dtype() == kInt64 && count.NumElements() == 1,
                   errors::InvalidArgument("num_records must be an int64 scalar, got ", count.DebugString()));
    const int64_t n = count.data<int64_t>()[0];
    TW_OP_REQUIRES(ctx, n >= 1, errors::InvalidArgument("num_records must be at least 1, got ", n));
    ReaderResource::NextWork next_file;
    auto reader = Prepare(ctx, &next_file);
    TW_OP_REQUIRES_OK(ctx, reader.status());
    std::vector<std::string> keys, values;
    TW_OP_REQUIRES_OK(ctx, (*reader)->ReadUpTo(next_file, n, &keys, &values));
    const int64_t got = static_cast<int64_t>(keys.size());
    Tensor k(kString, TensorShape{got}), v(kString, TensorShape{got});
    for (int64_t i = 0; i < got; ++i) {
      k.data<std::string>()[i] = std::move(keys[static_cast<size_t>(i)]);
      v.data<std::string>()[i] = std::move(values[static_cast<size_t>(i)]);
    }
    ctx->set_output(0, std::move(k));
    ctx->set_output(1, std::move(v));
  }
};

}  // namespace

void RegisterReaderOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(OpDefBuilder("ReaderRead")
                   .RefInput("reader_handle", "string")
                   .RefInput("queue_handle", "string")
                   .Output("key", "string")
                   .Output("value", "string")
                   .Stateful()
                   .Shape([](InferenceContext* c) {
                     c->set_output(0, PartialShape(TensorShape()));
                     c->set_output(1, PartialShape(TensorShape()));
                     return Status::OK();
                   })
                   .Doc("The next record of a reader: (key, value); takes file names from a queue as needed.")
                   .Build()).Check();
  kernels.RegisterUntyped<ReaderReadOp>("ReaderRead", kDeviceCpu);
  grads.RegisterNoGradient("ReaderRead");
  ops.Register(OpDefBuilder("ReaderReadUpTo")
                   .RefInput("reader_handle", "string")
                   .RefInput("queue_handle", "string")
                   .Input("num_records", "int64")
                   .Output("keys", "string")
                   .Output("values", "string")
                   .Stateful()
                   .Shape([](InferenceContext* c) {
                     c->set_output(0, PartialShape({-1}));
                     c->set_output(1, PartialShape({-1}));
                     return Status::OK();
                   })
                   .Doc("Up to num_records records of a reader: (keys, values) vectors.")
                   .Build()).Check();
  kernels.RegisterUntyped<ReaderReadUpToOp>("ReaderReadUpTo", kDeviceCpu);
  grads.RegisterNoGradient("ReaderReadUpTo");
  RegisterTFRecordReaderOp(ops, kernels, grads);
}

}  // namespace tw
