// Batching (TF1's tf.train.batch and tf.train.shuffle_batch): a queue filled by a
// QueueRunner of num_threads copies of one enqueue op, and dequeues of batch_size
// elements from it.
//
// The join forms (TF's batch_join / shuffle_batch_join) take several lists of
// tensors, one enqueue op and one runner thread per list, num_threads aside: with
// a reader per list, several files are read and decoded at once, where num_threads
// copies of one enqueue share one reader (and its decompression) under its lock.
//
// BatchSource / ShuffleBatchSource build the queue and its runner once and hand
// out a fresh dequeue on every Next(scope) call: the right way to feed several
// towers is one Next per tower, so that each tower trains on its own batch (the
// seed's pitfall was one dequeue shared by every tower). Batch / ShuffleBatch are
// the one-dequeue forms, as in TF.
//
// As in TF: element shapes must be fully defined (from the tensors' static shapes
// or `shapes`); with allow_smaller_final_batch the dequeue is a DequeueUpTo (the
// batch dimension is unknown) and the last, smaller batch is delivered; without it
// the leftover elements are dropped when the input ends. num_threads > 1 makes the
// order nondeterministic. Errors are recorded in the scope; the outputs are then
// null (one per input tensor). Not thread-safe (graph building).
#ifndef TOWERFLOW_DATA_BATCHING_H_
#define TOWERFLOW_DATA_BATCHING_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "towerflow/data/queue_ops.h"

namespace tw {

// One batch: one Output per input tensor, in order.
using Batch = std::vector<Output>;

}  // namespace tw

namespace tw::train {

struct BatchOptions {
  int64_t batch_size = 0;  // required, >= 1
  int num_threads = 1;
  int64_t capacity = 32;
  // The tensors are batches already: their dimension 0 indexes elements.
  bool enqueue_many = false;
  // Element shapes; default: the tensors' static shapes.
  std::vector<TensorShape> shapes = {};
  bool allow_smaller_final_batch = false;
  std::string shared_name = "";
};

struct ShuffleBatchOptions {
  int64_t batch_size = 0;  // required, >= 1
  // Required: capacity > min_after_dequeue. TF's advice: min_after_dequeue +
  // (num_threads + a small margin) * batch_size.
  int64_t capacity = 0;
  int64_t min_after_dequeue = 0;
  int num_threads = 1;
  int64_t seed = 0;  // op seed, as in random_ops.h
  // The queue draws from a fixed-size window (RandomShuffleQueueOptions): with
  // a seed and one enqueuing thread, the batches are the same in every run.
  bool deterministic = false;
  bool enqueue_many = false;
  std::vector<TensorShape> shapes = {};
  bool allow_smaller_final_batch = false;
  std::string shared_name = "";
};

// A queue of elements and its runner, built once in name scope "batch"
// (FIFOQueue) or "shuffle_batch" (RandomShuffleQueue).
class BatchSource {
 public:
  BatchSource() = default;
  BatchSource(const Scope& scope, const std::vector<Output>& tensors, const BatchOptions& options);
  // batch_join, in name scope "batch_join". The lists must agree in length and
  // dtypes (InvalidArgument "Expected types to be consistent: ..." otherwise) and
  // in the shapes they define; options.num_threads is not used.
  static BatchSource Join(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                          const BatchOptions& options);

  bool valid() const { return queue_.valid(); }
  // A new dequeue of batch_size elements, built in `scope` (a tower's scope).
  tw::Batch Next(const Scope& scope) const;
  tw::Batch operator()(const Scope& scope) const { return Next(scope); }
  const io::Queue& queue() const { return queue_; }
  int64_t batch_size() const { return batch_size_; }
  // The name scope the queue was built in ("shuffle_batch"). REQUIRES: valid().
  const Scope& scope() const { return *scope_; }

 protected:
  // What both kinds share once their options are mapped. Not an aggregate, so
  // that braced options never match it.
  struct Args {
    Args() = default;
    std::string scope_name;
    io::internal::QueueArgs queue;
    int64_t batch_size = 0;
    int num_threads = 1;
    bool enqueue_many = false;
    bool allow_smaller_final_batch = false;
  };
  static Args MakeArgs(const BatchOptions& options, bool join);
  static Args MakeArgs(const ShuffleBatchOptions& options, bool join);
  // The fields both options share (batching.cc).
  template <typename Options>
  static Args CommonArgs(const Options& options);
  // A join (scope name "..._join"): one enqueue per list. Otherwise one list,
  // num_threads copies of its enqueue.
  BatchSource(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists, Args args);

 private:
  void Build(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists, Args args);

  std::optional<Scope> scope_;
  io::Queue queue_;
  int64_t batch_size_ = 0;
  size_t num_tensors_ = 0;
  bool allow_smaller_final_batch_ = false;
};

class ShuffleBatchSource : public BatchSource {
 public:
  ShuffleBatchSource() = default;
  // InvalidArgument "capacity <c> must be bigger than min_after_dequeue <m>."
  // when capacity <= min_after_dequeue.
  ShuffleBatchSource(const Scope& scope, const std::vector<Output>& tensors, const ShuffleBatchOptions& options);
  // shuffle_batch_join, in name scope "shuffle_batch_join" (as BatchSource::Join).
  static ShuffleBatchSource Join(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                                 const ShuffleBatchOptions& options);

 private:
  ShuffleBatchSource(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists, Args args)
      : BatchSource(scope, tensor_lists, std::move(args)) {}
};

// tf.train.batch / tf.train.shuffle_batch: the source and one dequeue, all in the
// same name scope.
tw::Batch Batch(const Scope& scope, const std::vector<Output>& tensors, const BatchOptions& options);
tw::Batch ShuffleBatch(const Scope& scope, const std::vector<Output>& tensors, const ShuffleBatchOptions& options);
// tf.train.batch_join / tf.train.shuffle_batch_join.
tw::Batch BatchJoin(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                    const BatchOptions& options);
tw::Batch ShuffleBatchJoin(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                           const ShuffleBatchOptions& options);

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_BATCHING_H_
