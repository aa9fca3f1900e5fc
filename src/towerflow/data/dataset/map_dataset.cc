// Map (sequential, or parallel through RunAhead) and Filter. A failure of
// the function names the element's number in this iteration and the node.
#include <algorithm>

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/element_util.h"
#include "towerflow/data/dataset/graph_function.h"
#include "towerflow/data/dataset/run_ahead.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

// The threads of `num_parallel_calls` (not kAutotune): one per call, but
// past max(64, 4 x cores) more threads only take turns (and 100,000 of them
// would fail to start).
int MapWorkers(int64_t num_parallel_calls, int cores) {
  const int64_t most = std::max<int64_t>(64, 4 * static_cast<int64_t>(cores));
  return static_cast<int>(std::min(num_parallel_calls, most));
}

class MapDataset final : public UnaryDataset {
 public:
  MapDataset(DatasetPtr input, std::shared_ptr<GraphFunction> fn, MapOptions options)
      : UnaryDataset(options.num_parallel_calls != 0 ? "ParallelMap" : "Map", fn->output_spec(), input),
        fn_(std::move(fn)),
        options_(options) {}
  int64_t Cardinality() const override { return input()->Cardinality(); }

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    if (options_.num_parallel_calls != 0) {
      const bool tune = options_.num_parallel_calls == kAutotune;
      const int cores = PipelineCores();
      const int workers = tune ? 1 : MapWorkers(options_.num_parallel_calls, cores);
      it->run_ahead_ = std::make_unique<RunAhead>(
          ctx, it->input_.get(),
          [fn = fn_](int64_t index, Element&& in, Element* out) { return Apply(*fn, index, in, out); },
          RunAhead::Options{.stage = "Map",
                            .workers = workers,
                            .buffer = std::max(16, 2 * workers),
                            .ordered = options_.deterministic,
                            .tune_workers = tune,
                            .max_workers = tune ? cores : workers,
                            .max_buffer = 2 * std::max(cores, workers)});
    }
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

  static Status Apply(const GraphFunction& fn, int64_t index, const Element& in, Element* out) {
    Status s = fn.Run(in, out);
    if (!s.ok()) return s.WithContext("Map: element " + std::to_string(index));
    return s;
  }

  const std::shared_ptr<GraphFunction>& fn() const { return fn_; }
  const MapOptions& options() const { return options_; }

 private:
  class Iter final : public DatasetIterator<MapDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      if (run_ahead_) return run_ahead_->GetNext(out, end);
      Element in;
      TW_RETURN_IF_ERROR(input_->GetNext(&in, end));
      if (*end) return Status::OK();
      return Apply(*dataset().fn_, index_++, in, out);
    }
    Status Save(StateWriter& w) const override {
      if (run_ahead_) return run_ahead_->Save(w);
      w.WriteInt("index", index_);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      if (run_ahead_) return run_ahead_->Restore(r);
      TW_RETURN_IF_ERROR(r.ReadInt("index", &index_));
      return RestoreInput(*input_, r);
    }

    // Declared before run_ahead_: destroyed after its workers are joined.
    std::unique_ptr<IteratorBase> input_;
    std::unique_ptr<RunAhead> run_ahead_;

   private:
    int64_t index_ = 0;
  };

  std::shared_ptr<GraphFunction> fn_;
  MapOptions options_;
};

class FilterDataset final : public UnaryDataset {
 public:
  FilterDataset(DatasetPtr input, std::shared_ptr<GraphFunction> fn)
      : UnaryDataset("Filter", input->spec(), input), fn_(std::move(fn)) {}
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<FilterDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      Element keep;
      while (true) {
        // A predicate false for long (forever, over a repeated input) must
        // not keep a closed iterator's worker from stopping.
        if (ctx()->cancelled.load(std::memory_order_relaxed)) return CancelledError();
        TW_RETURN_IF_ERROR(input_->GetNext(out, end));
        if (*end) return Status::OK();
        Status s = dataset().fn_->Run(*out, &keep);
        if (!s.ok()) return s.WithContext("Filter: element " + std::to_string(index_));
        ++index_;
        if (keep[0].NumElements() != 1) {
          return errors::InvalidArgument("Filter: the predicate must return a bool scalar, got shape ",
                                         keep[0].shape().ToString());
        }
        if (keep[0].flat<bool>()[0]) return Status::OK();
      }
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("index", index_);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("index", &index_));
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;

   private:
    int64_t index_ = 0;
  };
  std::shared_ptr<GraphFunction> fn_;
};

// map_and_batch's input: up to batch_size input elements per GetNext, as one
// Element: an int64 scalar count, then each element's components in turn.
class ChunkIterator final : public IteratorBase {
 public:
  ChunkIterator(std::unique_ptr<IteratorBase> input, int64_t size, bool drop_remainder)
      : input_(std::move(input)), size_(size), drop_remainder_(drop_remainder) {}
  const std::string& name() const override { return name_; }
  Status GetNext(Element* out, bool* end) override {
    out->assign(1, Tensor());
    int64_t count = 0;
    Element e;
    TW_RETURN_IF_ERROR(PullBatch(size_, [&](bool* input_end) {
      Status s = input_->GetNext(&e, input_end);
      if (!s.ok() || *input_end) return s;
      for (Tensor& t : e) out->push_back(std::move(t));
      ++count;
      return s;
    }));
    *end = count == 0 || (drop_remainder_ && count < size_);
    (*out)[0] = Tensor::Scalar<int64_t>(count);
    return Status::OK();
  }
  Status Save(StateWriter& w) const override {
    return SaveInput(*input_, w);
  }
  Status Restore(const StateReader& r) override { return RestoreInput(*input_, r); }

 private:
  const std::string name_ = "Chunk";
  std::unique_ptr<IteratorBase> input_;
  const int64_t size_;
  const bool drop_remainder_;
};

class MapAndBatchIterator final : public IteratorBase {
 public:
  const std::string& name() const override { return name_; }
  Status GetNext(Element* out, bool* end) override { return run_ahead_->GetNext(out, end); }
  Status Save(StateWriter& w) const override { return run_ahead_->Save(w); }
  Status Restore(const StateReader& r) override { return run_ahead_->Restore(r); }

  // Maps chunk number `chunk` (see ChunkIterator) element by element and
  // stacks the results.
  static Status MapChunk(const GraphFunction& fn, size_t arity, int64_t batch_size, int64_t chunk, Element&& in,
                         Element* out) {
    const int64_t count = in[0].scalar<int64_t>();
    std::vector<Element> mapped(static_cast<size_t>(count));
    Element element(arity);
    for (int64_t i = 0; i < count; ++i) {
      for (size_t c = 0; c < arity; ++c) element[c] = std::move(in[1 + static_cast<size_t>(i) * arity + c]);
      TW_RETURN_IF_ERROR(MapDataset::Apply(fn, chunk * batch_size + i, element, &mapped[static_cast<size_t>(i)]));
    }
    const size_t components = mapped[0].size();
    out->assign(components, Tensor());
    std::vector<Tensor*> parts(mapped.size());
    for (size_t c = 0; c < components; ++c) {
      for (size_t i = 0; i < mapped.size(); ++i) parts[i] = &mapped[i][c];
      TW_ASSIGN_OR_RETURN((*out)[c], StackConsuming(parts, static_cast<int>(c)));
    }
    return Status::OK();
  }

  std::unique_ptr<ChunkIterator> chunks_;  // outlives run_ahead_'s workers
  std::unique_ptr<RunAhead> run_ahead_;

 private:
  const std::string name_ = "MapAndBatch";
};

}  // namespace

StatusOr<std::unique_ptr<IteratorBase>> MakeMapAndBatchIterator(const DatasetBase& map, int64_t batch_size,
                                                                bool drop_remainder,
                                                                const std::shared_ptr<PipelineContext>& ctx) {
  const auto* m = dynamic_cast<const MapDataset*>(&map);
  if (m == nullptr || m->options().num_parallel_calls == 0) return std::unique_ptr<IteratorBase>();
  TW_ASSIGN_OR_RETURN(auto input, m->input()->MakeIterator(ctx));
  auto it = std::make_unique<MapAndBatchIterator>();
  it->chunks_ = std::make_unique<ChunkIterator>(std::move(input), batch_size, drop_remainder);
  const bool tune = m->options().num_parallel_calls == kAutotune;
  const int cores = PipelineCores();
  const int workers = tune ? 1 : MapWorkers(m->options().num_parallel_calls, cores);
  const size_t arity = m->input()->spec().size();
  it->run_ahead_ = std::make_unique<RunAhead>(
      ctx, it->chunks_.get(),
      [fn = m->fn(), arity, batch_size](int64_t chunk, Element&& in, Element* out) {
        return MapAndBatchIterator::MapChunk(*fn, arity, batch_size, chunk, std::move(in), out);
      },
      RunAhead::Options{.stage = "MapAndBatch",
                        .workers = workers,
                        .buffer = 2 * workers,
                        .ordered = m->options().deterministic,
                        .tune_workers = tune,
                        .max_workers = tune ? cores : workers,
                        .max_buffer = 2 * std::max(cores, workers)});
  return std::unique_ptr<IteratorBase>(std::move(it));
}

StatusOr<DatasetPtr> MakeMapDataset(DatasetPtr input, const MapFn& fn, const MapOptions& options) {
  if (options.num_parallel_calls < 0 && options.num_parallel_calls != kAutotune) {
    return errors::InvalidArgument("num_parallel_calls must be >= 0 or kAutotune, got ", options.num_parallel_calls);
  }
  TW_ASSIGN_OR_RETURN(auto f, GraphFunction::Make(input->spec(), fn, "map"));
  return DatasetPtr(std::make_shared<MapDataset>(std::move(input), std::move(f), options));
}

StatusOr<DatasetPtr> MakeFilterDataset(DatasetPtr input, const PredicateFn& predicate) {
  if (!predicate) return errors::InvalidArgument("a null predicate");
  GraphFunction::Builder builder = [&predicate](const Scope& s, const std::vector<Output>& args) {
    return std::vector<Output>{predicate(s, args)};
  };
  TW_ASSIGN_OR_RETURN(auto f, GraphFunction::Make(input->spec(), builder, "filter"));
  const ElementSpec& out = f->output_spec();
  if (out.size() != 1 || out.dtypes[0] != kBool ||
      (out.shapes[0].known_rank() && out.shapes[0].num_elements() != 1 && out.shapes[0].IsFullyDefined())) {
    return errors::InvalidArgument("the predicate must return a bool scalar, got ", out.DebugString());
  }
  return DatasetPtr(std::make_shared<FilterDataset>(std::move(input), std::move(f)));
}

}  // namespace tw::data
