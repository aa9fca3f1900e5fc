// The reader op family: ReaderRead (here; TF's ReaderRead on a Ref(string)
// reader handle) and the readers themselves (TFRecordReader in
// tfrecord_reader_op.cc). ReaderRead takes file names from a queue of string
// scalars (queue.h) whenever its reader needs the next file.
#include <memory>
#include <mutex>

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

class ReaderReadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    auto reader = readers_.Get(ctx, 0, "Reader");
    TW_OP_REQUIRES_OK(ctx, reader.status());
    auto queue = queues_.Get(ctx, 1, "Queue");
    TW_OP_REQUIRES_OK(ctx, queue.status());
    const QueueResource& q = **queue;
    TW_OP_REQUIRES(ctx, q.spec().dtypes == std::vector<DataType>{kString},
                   errors::InvalidArgument("ReaderRead takes file names from a queue of strings, but ",
                                           QueueResource::KindName(q.kind()), " '", q.name(), "' holds ",
                                           q.num_components(), " component(s)",
                                           q.num_components() > 0 ? " starting with " : "",
                                           q.num_components() > 0 ? DataTypeName(q.spec().dtypes[0]) : ""));
    auto next_file = [&queue](std::string* file) -> Status {
      QueueResource::Tuple tuple;
      TW_RETURN_IF_ERROR((*queue)->Dequeue(&tuple));
      if (tuple.size() != 1 || tuple[0].dtype() != kString || tuple[0].NumElements() != 1) {
        return errors::InvalidArgument("Expected to dequeue a one-element string tensor (a file name), got ",
                                       tuple.empty() ? std::string("nothing") : tuple[0].DebugString());
      }
      *file = tuple[0].data<std::string>()[0];
      return Status::OK();
    };
    std::string key, value;
    TW_OP_REQUIRES_OK(ctx, (*reader)->Read(next_file, &key, &value));
    ctx->set_output(0, Tensor::Scalar<std::string>(std::move(key)));
    ctx->set_output(1, Tensor::Scalar<std::string>(std::move(value)));
  }
  // Waits on the filename queue when the reader needs its next file.
  bool MayBlock() const override { return true; }

 private:
  ResourceCache<ReaderResource> readers_;
  ResourceCache<QueueResource> queues_;
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
  RegisterTFRecordReaderOp(ops, kernels, grads);
}

}  // namespace tw
