// Input producers, and the CountUpTo and RandomShuffle ops (schema, builder and
// CPU kernel side by side).
#include "towerflow/data/input_producers.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <random>

#include "towerflow/core/seeded_engine.h"
#include "towerflow/data/queue_internal.h"
#include "towerflow/data/queue_runner.h"
#include "towerflow/data/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {
namespace {

// The variable behind ref input 0, for messages.
std::string RefName(const Node& node) {
  Output o = node.input(0);
  while (o.node->op() != "VariableV2" && o.node->num_inputs() > 0 && o.node->input_is_ref(0)) o = o.node->input(0);
  return o.node->name();
}

template <typename T>
class CountUpToOp : public OpKernel {
 public:
  explicit CountUpToOp(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, c->GetAttr("limit", &limit_)); }

  void Compute(OpKernelContext* ctx) override {
    T before;
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      TW_OP_REQUIRES(ctx, var->IsInitialized(),
                     errors::FailedPrecondition("Attempting to use uninitialized value ", RefName(node())));
      TW_OP_REQUIRES(ctx, var->rank() == 0,
                     errors::InvalidArgument("CountUpTo needs a scalar variable; ", RefName(node()), " has shape ",
                                             var->shape().ToString()));
      before = var->data<T>()[0];
      TW_OP_REQUIRES(ctx, before < limit_, errors::OutOfRange("Reached limit of ", limit_));
      var->data<T>()[0] = before + 1;  // in place, under the variable's lock
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    out->data<T>()[0] = before;
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t limit_ = 0;
};

class RandomShuffleOp : public OpKernel {
 public:
  explicit RandomShuffleOp(OpKernelConstruction* c) : OpKernel(c) {
    int64_t seed = 0, seed2 = 0;
    TW_OP_REQUIRES_OK(c, c->GetAttr("seed", &seed));
    TW_OP_REQUIRES_OK(c, c->GetAttr("seed2", &seed2));
    engine_ = SeededEngine(seed, seed2);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (x.rank() == 0 || x.dim(0) <= 1) {
      ctx->set_output(0, x);
      return;
    }
    const int64_t n = x.dim(0);
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    {
      // Fisher-Yates from raw engine words (std::shuffle's draws differ between
      // standard libraries; this gives the same order for a seed anywhere).
      std::lock_guard<std::mutex> lock(mu_);
      for (int64_t i = n - 1; i > 0; --i) {
        const auto j = static_cast<int64_t>(engine_() % static_cast<uint64_t>(i + 1));
        std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
      }
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t row = x.NumElements() / n;
    if (x.dtype() == kString) {
      const std::string* src = x.data<std::string>();
      std::string* dst = out->data<std::string>();
      for (int64_t i = 0; i < n; ++i) {
        std::copy(src + perm[static_cast<size_t>(i)] * row, src + (perm[static_cast<size_t>(i)] + 1) * row, dst + i * row);
      }
    } else {
      const size_t bytes = static_cast<size_t>(row) * DataTypeSize(x.dtype());
      const char* src = static_cast<const char*>(x.raw_data());
      char* dst = static_cast<char*>(out->raw_data());
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + static_cast<size_t>(i) * bytes, src + static_cast<size_t>(perm[static_cast<size_t>(i)]) * bytes, bytes);
      }
    }
  }

 private:
  std::mutex mu_;
  std::mt19937_64 engine_;  // guarded by mu_
};

}  // namespace

namespace queue_internal {

void RegisterInputProducerOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(OpDefBuilder("CountUpTo")
                   .RefInput("ref", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {kInt32, kInt64})
                   .RequiredAttr("limit", AttrType::kInt)
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Doc("Increments a variable until it reaches limit; outputs the value before.")
                   .Build())
      .Check();
  ops.Register(OpDefBuilder("RandomShuffle")
                   .Input("value", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {})
                   .Attr("seed", int64_t{0})
                   .Attr("seed2", int64_t{0})
                   .Stateful()
                   .Shape(shape_fns::Unchanged)
                   .Doc("Shuffles a tensor along dimension 0.")
                   .Build())
      .Check();
  kernels.RegisterTyped<CountUpToOp, int32_t, int64_t>("CountUpTo", kDeviceCpu);
  kernels.RegisterUntyped<RandomShuffleOp>("RandomShuffle", kDeviceCpu);
  grads.RegisterNoGradient("CountUpTo");
  grads.RegisterNoGradient("RandomShuffle");
}

}  // namespace queue_internal

Output CountUpTo(const Scope& scope, const Output& ref, int64_t limit) {
  EnsureDataRegistered();
  return NodeBuilder(scope, "CountUpTo").Input(ref).Attr("limit", limit).Finalize();
}
Output CountUpTo(const Scope& scope, const Variable& var, int64_t limit) { return CountUpTo(scope, var.ref, limit); }

Output RandomShuffle(const Scope& scope, const Output& x, int64_t seed) {
  EnsureDataRegistered();
  const OpSeeds seeds = GetSeeds(scope.graph(), seed);
  return NodeBuilder(scope, "RandomShuffle").Input(x).Attr("seed", seeds.seed).Attr("seed2", seeds.seed2).Finalize();
}

namespace train {

Output LimitEpochs(const Scope& scope, const Output& tensor, std::optional<int64_t> num_epochs) {
  EnsureDataRegistered();
  if (!num_epochs) return tensor;
  if (*num_epochs <= 0) {
    scope.UpdateStatus(errors::InvalidArgument("num_epochs must be > 0 not ", *num_epochs, "."));
    return Output();
  }
  Scope s = scope.NewSubScope("limit_epochs");
  VariableOptions vo;
  vo.dtype = kInt64;
  vo.initializer = ZerosInitializer();
  vo.trainable = false;
  vo.collections = {collections::kLocalVariables};
  Variable epochs = CreateVariable(s, s.name_scope() + "/epochs", TensorShape{}, vo);
  if (!epochs.valid()) return Output();
  Output counter = CountUpTo(s, epochs, *num_epochs);
  if (!counter.valid()) return Output();
  return Identity(s.WithControlDependencies({counter}), tensor);
}

namespace {

// input_producer's body in its own name scope `s` ("input_producer"), which
// also names the queue.
io::Queue ProduceSlices(const Scope& s, const Output& input, const InputProducerOptions& options) {
  if (!input.valid()) return io::Queue();  // its builder recorded why
  const PartialShape& shape = input.shape();
  if (!shape.known_rank() || shape.rank() < 1) {
    s.UpdateStatus(errors::InvalidArgument("input_producer: the input must have rank >= 1, got shape ",
                                           shape.ToString()));
    return io::Queue();
  }
  std::vector<int64_t> element_dims(shape.dims().begin() + 1, shape.dims().end());
  if (!PartialShape(element_dims).IsFullyDefined()) {
    s.UpdateStatus(errors::InvalidArgument("Expected element_shape to be fully defined, got ",
                                           PartialShape(element_dims).ToString()));
    return io::Queue();
  }
  if (options.num_epochs && *options.num_epochs <= 0) {
    s.UpdateStatus(errors::InvalidArgument("num_epochs must be > 0 not ", *options.num_epochs, "."));
    return io::Queue();
  }
  Output values = options.shuffle ? RandomShuffle(s, input, options.seed) : input;
  values = LimitEpochs(s, values, options.num_epochs);
  io::internal::QueueArgs a;
  a.capacity = options.capacity;
  a.dtypes = {input.dtype()};
  a.shapes = {TensorShape(element_dims)};
  a.shared_name = options.shared_name;
  a.exact_name = s.name_scope();  // TF names the queue after its scope: "input_producer"
  io::Queue queue = io::internal::BuildQueue(s, a);
  if (!queue.valid() || !values.valid()) return io::Queue();
  Node* enqueue = queue.EnqueueMany(s, {values});
  QueueRunner runner(s, queue, {enqueue});
  if (!runner.valid()) return io::Queue();
  AddQueueRunner(s.graph(), runner);
  return queue;
}

}  // namespace

io::Queue InputProducer(const Scope& scope, const Output& input, const InputProducerOptions& options) {
  EnsureDataRegistered();
  return ProduceSlices(scope.NewSubScope("input_producer"), input, options);
}

io::Queue StringInputProducer(const Scope& scope, const std::vector<std::string>& strings,
                              const InputProducerOptions& options) {
  EnsureDataRegistered();
  if (strings.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("string_input_producer requires a non-null input tensor"));
    return io::Queue();
  }
  Scope s = scope.NewSubScope("input_producer");
  return ProduceSlices(s, Const(s, Tensor::Vec<std::string>(strings)), options);
}

io::Queue StringInputProducer(const Scope& scope, const io::FileList& files, const InputProducerOptions& options) {
  if (files.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("string_input_producer: no file matches '", files.pattern(),
                                               "' (io::Glob found nothing)"));
    return io::Queue();
  }
  return StringInputProducer(scope, static_cast<const std::vector<std::string>&>(files), options);
}

io::Queue RangeInputProducer(const Scope& scope, int32_t limit, const InputProducerOptions& options) {
  EnsureDataRegistered();
  if (limit <= 0) {
    scope.UpdateStatus(errors::InvalidArgument("range_input_producer: limit must be > 0, got ", limit));
    return io::Queue();
  }
  std::vector<int32_t> range(static_cast<size_t>(limit));
  std::iota(range.begin(), range.end(), 0);
  Scope s = scope.NewSubScope("input_producer");
  return ProduceSlices(s, Const(s, range), options);
}

}  // namespace train
}  // namespace tw
