#include "towerflow/data/batching.h"

#include <limits>
#include <optional>

#include "towerflow/data/queue_runner.h"
#include "towerflow/data/register.h"

namespace tw::train {
namespace {

std::string ShapesString(const std::vector<Output>& tensors) {
  std::string out = "[";
  for (size_t i = 0; i < tensors.size(); ++i) out += (i ? ", " : "") + tensors[i].shape().ToString();
  return out + "]";
}

std::string DtypesString(const std::vector<Output>& tensors) {
  std::string out = "[";
  for (size_t i = 0; i < tensors.size(); ++i) out += StrCat(i ? ", " : "", DataTypeName(tensors[i].dtype()));
  return out + "]";
}

// An element's shape from its tensor's static shape (dimension 0 dropped for
// enqueue_many); nullopt unless fully defined.
std::optional<TensorShape> ElementShape(const PartialShape& s, bool enqueue_many) {
  if (!enqueue_many) return s.IsFullyDefined() ? std::optional(s.ToTensorShape()) : std::nullopt;
  if (!s.known_rank() || s.rank() < 1) return std::nullopt;
  PartialShape element(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end()));
  return element.IsFullyDefined() ? std::optional(element.ToTensorShape()) : std::nullopt;
}

}  // namespace

template <typename Options>
BatchSource::Args BatchSource::CommonArgs(const Options& options) {
  BatchSource::Args a;
  a.queue.capacity = options.capacity;
  a.queue.shapes = options.shapes;
  a.queue.shared_name = options.shared_name;
  a.batch_size = options.batch_size;
  a.num_threads = options.num_threads;
  a.enqueue_many = options.enqueue_many;
  a.allow_smaller_final_batch = options.allow_smaller_final_batch;
  return a;
}

BatchSource::Args BatchSource::MakeArgs(const BatchOptions& options, bool join) {
  Args a = CommonArgs(options);
  a.scope_name = join ? "batch_join" : "batch";
  return a;
}

BatchSource::Args BatchSource::MakeArgs(const ShuffleBatchOptions& options, bool join) {
  Args a = CommonArgs(options);
  a.scope_name = join ? "shuffle_batch_join" : "shuffle_batch";
  a.queue.shuffle = true;
  a.queue.min_after_dequeue = options.min_after_dequeue;
  a.queue.seed = options.seed;
  a.queue.deterministic = options.deterministic;
  return a;
}

BatchSource::BatchSource(const Scope& scope, const std::vector<Output>& tensors, const BatchOptions& options)
    : BatchSource(scope, {tensors}, MakeArgs(options, false)) {}

BatchSource BatchSource::Join(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                              const BatchOptions& options) {
  return BatchSource(scope, tensor_lists, MakeArgs(options, true));
}

ShuffleBatchSource::ShuffleBatchSource(const Scope& scope, const std::vector<Output>& tensors,
                                       const ShuffleBatchOptions& options)
    : BatchSource(scope, {tensors}, MakeArgs(options, false)) {}

ShuffleBatchSource ShuffleBatchSource::Join(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                                            const ShuffleBatchOptions& options) {
  return ShuffleBatchSource(scope, tensor_lists, MakeArgs(options, true));
}

BatchSource::BatchSource(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists, Args args)
    : num_tensors_(tensor_lists.empty() ? 0 : tensor_lists[0].size()) {
  EnsureDataRegistered();
  Build(scope, tensor_lists, std::move(args));
}

void BatchSource::Build(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists, Args args) {
  const std::string fn = args.scope_name;
  const bool join = fn.ends_with("_join");
  if (tensor_lists.empty()) {
    return scope.UpdateStatus(errors::InvalidArgument("Expected at least one input in ", fn, "()."));
  }
  const std::vector<Output>& tensors = tensor_lists[0];
  if (tensors.empty()) {
    return scope.UpdateStatus(errors::InvalidArgument("Expected at least one tensor in ", fn, "()."));
  }
  for (const std::vector<Output>& list : tensor_lists) {
    for (const Output& t : list) {
      if (t.valid()) continue;
      // The builder of that tensor recorded why.
      if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument(fn, ": an input tensor is null"));
      return;
    }
  }
  for (size_t i = 1; i < tensor_lists.size(); ++i) {
    bool same = tensor_lists[i].size() == tensors.size();
    for (size_t j = 0; same && j < tensors.size(); ++j) same = tensor_lists[i][j].dtype() == tensors[j].dtype();
    if (!same) {
      return scope.UpdateStatus(errors::InvalidArgument("Expected types to be consistent: ", DtypesString(tensors),
                                                        " vs. ", DtypesString(tensor_lists[i]), "."));
    }
  }
  if (args.batch_size < 1 || args.batch_size > std::numeric_limits<int32_t>::max()) {
    return scope.UpdateStatus(errors::InvalidArgument(fn, ": batch_size must be in [1, 2^31), got ", args.batch_size));
  }
  if (!join && args.num_threads < 1) {
    return scope.UpdateStatus(errors::InvalidArgument(fn, ": num_threads must be >= 1, got ", args.num_threads));
  }
  if (args.queue.shuffle && args.queue.capacity <= args.queue.min_after_dequeue) {
    return scope.UpdateStatus(errors::InvalidArgument("capacity ", args.queue.capacity,
                                                      " must be bigger than min_after_dequeue ",
                                                      args.queue.min_after_dequeue, "."));
  }
  if (args.queue.shapes.empty()) {
    // Each element's shape: the first list's that is fully defined; lists that
    // define it differently are an error (TF merges the static shapes).
    for (size_t j = 0; j < tensors.size(); ++j) {
      std::optional<TensorShape> shape;
      for (const std::vector<Output>& list : tensor_lists) {
        std::optional<TensorShape> element = ElementShape(list[j].shape(), args.enqueue_many);
        if (!element) continue;
        if (shape && *shape != *element) {
          return scope.UpdateStatus(errors::InvalidArgument(fn, ": Expected shapes to be consistent: ",
                                                            shape->ToString(), " vs. ", element->ToString(),
                                                            " for tensor ", j));
        }
        shape = element;
      }
      if (!shape) {
        return scope.UpdateStatus(errors::InvalidArgument(fn, ": All shapes must be fully specified: ",
                                                          ShapesString(tensors),
                                                          args.enqueue_many ? " (after dimension 0)" : ""));
      }
      args.queue.shapes.push_back(*shape);
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
  std::vector<Node*> enqueues;
  for (const std::vector<Output>& list : tensor_lists) {
    enqueues.push_back(args.enqueue_many ? queue.EnqueueMany(s, list) : queue.Enqueue(s, list));
  }
  // A join: one thread per list. Otherwise num_threads threads run the same
  // enqueue op, as TF's batch does.
  if (!join) enqueues.assign(static_cast<size_t>(args.num_threads), enqueues[0]);
  QueueRunner runner(s, queue, std::move(enqueues));
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

tw::Batch BatchJoin(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                    const BatchOptions& options) {
  BatchSource source = BatchSource::Join(scope, tensor_lists, options);
  return source.valid() ? source.Next(source.scope()) : tw::Batch(tensor_lists.empty() ? 0 : tensor_lists[0].size());
}

tw::Batch ShuffleBatchJoin(const Scope& scope, const std::vector<std::vector<Output>>& tensor_lists,
                           const ShuffleBatchOptions& options) {
  ShuffleBatchSource source = ShuffleBatchSource::Join(scope, tensor_lists, options);
  return source.valid() ? source.Next(source.scope()) : tw::Batch(tensor_lists.empty() ? 0 : tensor_lists[0].size());
}

}  // namespace tw::train
