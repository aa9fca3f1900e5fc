// Map (sequential, or parallel through RunAhead) and Filter. A failure of
// the function names the element's number in this iteration and the node.
#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/graph_function.h"
#include "towerflow/data/dataset/run_ahead.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

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
      const int workers = tune ? 1 : static_cast<int>(options_.num_parallel_calls);
      it->run_ahead_ = std::make_unique<RunAhead>(
          ctx, it->input_.get(),
          [fn = fn_](int64_t index, Element&& in, Element* out) { return Apply(*fn, index, in, out); },
          RunAhead::Options{.stage = "Map",
                            .workers = workers,
                            .buffer = 2 * workers,
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
      StateWriter child = w.Child(input_->name());
      return input_->Save(child);
    }
    Status Restore(const StateReader& r) override {
      if (run_ahead_) return run_ahead_->Restore(r);
      TW_RETURN_IF_ERROR(r.ReadInt("index", &index_));
      return input_->Restore(r.Child(input_->name()));
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
      StateWriter child = w.Child(input_->name());
      return input_->Save(child);
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("index", &index_));
      return input_->Restore(r.Child(input_->name()));
    }

    std::unique_ptr<IteratorBase> input_;

   private:
    int64_t index_ = 0;
  };
  std::shared_ptr<GraphFunction> fn_;
};

}  // namespace

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
