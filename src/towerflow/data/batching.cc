#include "towerflow/data/batching.h"

#include <limits>

#include "towerflow/data/queue_runner.h"
#include "towerflow/data/register.h"

namespace tw::train {
namespace {

std::string ShapesString(const std::vector<Output>& tensors) {
  std::string out = "[";
  for (size_t i = 0; i < tensors.size(); ++i) out += (i ? ", " : "") + tensors[i].shape().ToString();
  return out + "]";
}

}  // namespace

BatchSource::BatchSource(const Scope& scope, const std::vector<Output>& tensors, const BatchOptions& options)
    : BatchSource(scope, tensors, [&] {
        Args a;
        a.scope_name = "batch";
        a.queue.capacity = options.capacity;
        a.queue.shapes = options.shapes;
        a.queue.shared_name = options.shared_name;
        a.batch_size = options.batch_size;
        a.num_threads = options.num_threads;
        a.enqueue_many = options.enqueue_many;
        a.allow_smaller_final_batch = options.allow_smaller_final_batch;
        return a;
      }()) {}

ShuffleBatchSource::ShuffleBatchSource(const Scope& scope, const std::vector<Output>& tensors,
                                       const ShuffleBatchOptions& options)
    : BatchSource(scope, tensors, [&] {
        Args a;
        a.scope_name = "shuffle_batch";
        a.queue.shuffle = true;
        a.queue.capacity = options.capacity;
        a.queue.min_after_dequeue = options.min_after_dequeue;
        a.queue.seed = options.seed;
        a.queue.shapes = options.shapes;
        a.queue.shared_name = options.shared_name;
        a.batch_size = options.batch_size;
        a.num_threads = options.num_threads;
        a.enqueue_many = options.enqueue_many;
        a.allow_smaller_final_batch = options.allow_smaller_final_batch;
        return a;
      }()) {}

BatchSource::BatchSource(const Scope& scope, const std::vector<Output>& tensors, Args args)
    : num_tensors_(tensors.size()) {
  EnsureDataRegistered();
  Build(scope, tensors, std::move(args));
}

void BatchSource::Build(const Scope& scope, const std::vector<Output>& tensors, Args args) {
  const std::string fn = args.scope_name;
  if (tensors.empty()) {
    return scope.UpdateStatus(errors::InvalidArgument("Expected at least one tensor in ", fn, "()."));
  }
  for (const Output& t : tensors) {
    if (t.valid()) continue;
    // The builder of that tensor recorded why.
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument(fn, ": an input tensor is null"));
    return;
  }
  if (args.batch_size < 1 || args.batch_size > std::numeric_limits<int32_t>::max()) {
    return scope.UpdateStatus(errors::InvalidArgument(fn, ": batch_size must be in [1, 2^31), got ", args.batch_size));
  }
  if (args.num_threads < 1) {
    return scope.UpdateStatus(errors::InvalidArgument(fn, ": num_threads must be >= 1, got ", args.num_threads));
  }
  if (args.queue.shuffle && args.queue.capacity <= args.queue.min_after_dequeue) {
    return scope.UpdateStatus(errors::InvalidArgument("capacity ", args.queue.capacity,
                                                      " must be bigger than min_after_dequeue ",
                                                      args.queue.min_after_dequeue, "."));
  }
  if (args.queue.shapes.empty()) {
    for (const Output& t : tensors) {
      const PartialShape& s = t.shape();
      if (args.enqueue_many && s.known_rank() && s.rank() >= 1) {
        PartialShape element(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end()));
        if (element.IsFullyDefined()) {
          args.queue.shapes.push_back(element.ToTensorShape());
          continue;
        }
      } else if (!args.enqueue_many && s.IsFullyDefined()) {
        args.queue.shapes.push_back(s.ToTensorShape());
        continue;
      }
      return scope.UpdateStatus(errors::InvalidArgument(fn, ": All shapes must be fully specified: ",
                                                        ShapesString(tensors),
                                                        args.enqueue_many ? " (after dimension 0)" : ""));
    }
  } else if (args.queue.shapes.size() != tensors.size()) {
    return scope.UpdateStatus(errors::InvalidArgument(fn, ": ", args.queue.shapes.size(), " shapes for ",
                                                      tensors.size(), " tensors"));
  }
  for (const Output& t : tensors) args.queue.dtypes.push_back(t.dtype());

  Scope s = scope.NewSubScope(fn);
  const int64_t cap = args.queue.capacity, min = args.queue.min_after_dequeue;
  args.queue.fill_summary = args.queue.shuffle
                                ? StrCat(s.name_scope(), "/fraction_over_", min, "_of_", cap - min, "_full")
                                : StrCat(s.name_scope(), "/fraction_of_", cap, "_full");
  io::Queue queue = io::internal::BuildQueue(s, args.queue);
  if (!queue.valid()) return;
  Node* enqueue = args.enqueue_many ? queue.EnqueueMany(s, tensors) : queue.Enqueue(s, tensors);
  // num_threads threads run the same enqueue op, as TF's batch does.
  QueueRunner runner(s, queue, std::vector<Node*>(static_cast<size_t>(args.num_threads), enqueue));
  if (!runner.valid()) return;
  AddQueueRunner(s.graph(), runner);
  scope_ = s;
  queue_ = queue;
  batch_size_ = args.batch_size;
  allow_smaller_final_batch_ = args.allow_smaller_final_batch;
}

tw::Batch BatchSource::Next(const Scope& scope) const {
  if (!valid()) {
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument("Next() on a batch source whose building failed"));
    return tw::Batch(num_tensors_);
  }
  const auto n = static_cast<int32_t>(batch_size_);
  return allow_smaller_final_batch_ ? queue_.DequeueUpTo(scope, n) : queue_.DequeueMany(scope, n);
}

tw::Batch Batch(const Scope& scope, const std::vector<Output>& tensors, const BatchOptions& options) {
  BatchSource source(scope, tensors, options);
  return source.valid() ? source.Next(source.scope()) : tw::Batch(tensors.size());
}

tw::Batch ShuffleBatch(const Scope& scope, const std::vector<Output>& tensors, const ShuffleBatchOptions& options) {
  ShuffleBatchSource source(scope, tensors, options);
  return source.valid() ? source.Next(source.scope()) : tw::Batch(tensors.size());
}

}  // namespace tw::train
