// In-memory sources: FromTensors, FromTensorSlices, Range, ListFiles. Each
// iterator's position is one index (and ListFiles' the order it drew).
#include <glob.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <limits>
#include <random>

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/element_util.h"

namespace tw::data {
namespace {

class TensorsDataset final : public DatasetBase {
 public:
  TensorsDataset(Element components, bool slices, ElementSpec spec)
      : DatasetBase(slices ? "FromTensorSlices" : "FromTensors", std::move(spec)),
        components_(std::move(components)),
        slices_(slices) {}
  int64_t Cardinality() const override { return count(); }
  StatusOr<int64_t> SplitUnits() const override { return count(); }
  int64_t count() const { return slices_ ? components_[0].dim(0) : 1; }

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    std::unique_ptr<IteratorBase> it = std::make_unique<Iter>(*this, ctx);
    return ctx->SplitsSource(*this) ? SplitElements(std::move(it), ctx->split) : std::move(it);
  }

 private:
  class Iter final : public DatasetIterator<TensorsDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const TensorsDataset& d = dataset();
      if (next_ >= d.count()) {
        *end = true;
        return Status::OK();
      }
      out->clear();
      for (const Tensor& t : d.components_) out->push_back(d.slices_ ? SliceAlongDim0(t, next_) : t);
      ++next_;
      *end = false;
      return Status::OK();
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("next", next_);
      return Status::OK();
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("next", &next_));
      if (next_ < 0 || next_ > dataset().count()) {
        return errors::DataLoss(name(), ": saved position ", next_, " outside 0..", dataset().count());
      }
      return Status::OK();
    }

   private:
    int64_t next_ = 0;
  };

  Element components_;
  bool slices_;
};

class RangeDataset final : public DatasetBase {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step)
      : DatasetBase("Range", ElementSpec{{kInt64}, {PartialShape(TensorShape{})}}),
        start_(start), stop_(stop), step_(step) {}
  // In unsigned arithmetic: the span of Range(INT64_MIN, INT64_MAX) and
  // the step's magnitude fit 64 bits unsigned, not signed. A count past
  // INT64_MAX saturates (no run reads that far).
  int64_t Cardinality() const override {
    const bool up = step_ > 0;
    if (up ? stop_ <= start_ : start_ <= stop_) return 0;
    const uint64_t span = up ? static_cast<uint64_t>(stop_) - static_cast<uint64_t>(start_)
                             : static_cast<uint64_t>(start_) - static_cast<uint64_t>(stop_);
    const uint64_t stride = up ? static_cast<uint64_t>(step_) : uint64_t{0} - static_cast<uint64_t>(step_);
    const uint64_t count = span / stride + (span % stride != 0 ? 1 : 0);
    return count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                              : static_cast<int64_t>(count);
  }
  StatusOr<int64_t> SplitUnits() const override { return Cardinality(); }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    std::unique_ptr<IteratorBase> it = std::make_unique<Iter>(*this, ctx);
    return ctx->SplitsSource(*this) ? SplitElements(std::move(it), ctx->split) : std::move(it);
  }

 private:
  class Iter final : public DatasetIterator<RangeDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      if (index_ >= dataset().Cardinality()) {
        *end = true;
        return Status::OK();
      }
      // start + index * step lies between start and stop: the unsigned sum wraps to it.
      out->assign(1, Tensor::Scalar<int64_t>(static_cast<int64_t>(
                         static_cast<uint64_t>(dataset().start_) +
                         static_cast<uint64_t>(index_) * static_cast<uint64_t>(dataset().step_))));
      ++index_;
      *end = false;
      return Status::OK();
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("index", index_);
      return Status::OK();
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("index", &index_));
      if (index_ < 0 || index_ > dataset().Cardinality()) {
        return errors::DataLoss("Range: saved position ", index_, " outside 0..", dataset().Cardinality());
      }
      return Status::OK();
    }

   private:
    int64_t index_ = 0;
  };
  int64_t start_, stop_, step_;
};

class ListFilesDataset final : public DatasetBase {
 public:
  ListFilesDataset(std::string pattern, ListFilesOptions options)
      : DatasetBase("ListFiles", ElementSpec{{kString}, {PartialShape(TensorShape{})}}),
        pattern_(std::move(pattern)),
        options_(std::move(options)),
        seed_(options_.seed ? static_cast<uint64_t>(*options_.seed) : std::random_device{}()) {}

  StatusOr<std::vector<std::string>> Match() const {
    // A directory of the pattern that does not exist is no match, as in TF; one
    // that cannot be read fails naming it (glob's error callback records it).
    static thread_local std::string unreadable;
    static thread_local int unreadable_errno = 0;
    unreadable.clear();
    unreadable_errno = 0;
    auto on_error = [](const char* path, int err) -> int {
      if (err != ENOENT && err != ENOTDIR && unreadable.empty()) {
        unreadable = path;
        unreadable_errno = err;
      }
      return 0;  // keep matching the rest
    };
    glob_t g{};
    const int rc = glob(pattern_.c_str(), 0, on_error, &g);
    std::vector<std::string> files;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (!unreadable.empty()) {
      return FileError(unreadable, "ListFiles '" + pattern_ + "' cannot read the directory", unreadable_errno);
    }
    if (rc != 0 && rc != GLOB_NOMATCH) return errors::Internal("glob(\"", pattern_, "\") failed with code ", rc);
    if (files.empty()) return errors::InvalidArgument("No files matched pattern: ", pattern_);
    std::sort(files.begin(), files.end());
    return files;
  }

  StatusOr<int64_t> SplitUnits() const override {
    TW_ASSIGN_OR_RETURN(auto files, Match());
    return static_cast<int64_t>(files.size());
  }

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    TW_ASSIGN_OR_RETURN(auto files, Match());
    if (ctx->SplitsSource(*this)) {
      // This shard's files of the sorted list, then shuffled: the shards
      // stay disjoint whatever seed each one shuffles with.
      std::vector<std::string> mine;
      for (size_t i = 0; i < files.size(); ++i) {
        if (static_cast<int64_t>(i) % ctx->split.count == ctx->split.index) mine.push_back(std::move(files[i]));
      }
      files = std::move(mine);
    }
    const uint64_t iteration = ctx->probe ? iterations_.load() : iterations_.fetch_add(1);
    if (options_.shuffle) {
      std::mt19937_64 rng(seed_.load() * 0x9e3779b97f4a7c15ull + iteration);
      std::shuffle(files.begin(), files.end(), rng);
    }
    return std::unique_ptr<IteratorBase>(std::make_unique<Iter>(*this, ctx, std::move(files), iteration));
  }

 private:
  class Iter final : public DatasetIterator<ListFilesDataset> {
   public:
    Iter(const ListFilesDataset& d, std::shared_ptr<PipelineContext> ctx, std::vector<std::string> files,
         uint64_t iteration)
        : DatasetIterator(d, std::move(ctx)), files_(std::move(files)), iteration_(iteration) {}
    Status GetNext(Element* out, bool* end) override {
      *end = next_ >= static_cast<int64_t>(files_.size());
      if (!*end) out->assign(1, Tensor::String(files_[static_cast<size_t>(next_++)]));
      return Status::OK();
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("next", next_);
      std::string order;
      for (const std::string& f : files_) order += f + '\n';
      w.WriteString("files", order);
      // The order's draw, so that the iterations after a restore draw the
      // orders the run that saved would have drawn (Shuffle's rule).
      w.WriteInt("iteration", static_cast<int64_t>(iteration_));
      w.WriteInt("seed", static_cast<int64_t>(dataset().seed_.load()));
      return Status::OK();
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("next", &next_));
      std::string order;
      TW_RETURN_IF_ERROR(r.ReadString("files", &order));
      files_.clear();
      size_t pos = 0;
      while (pos < order.size()) {
        const size_t nl = order.find('\n', pos);
        files_.push_back(order.substr(pos, nl - pos));
        pos = nl == std::string::npos ? order.size() : nl + 1;
      }
      if (next_ < 0 || next_ > static_cast<int64_t>(files_.size())) {
        return errors::DataLoss("ListFiles: saved position ", next_, " outside 0..", files_.size());
      }
      if (r.Contains("iteration")) {  // states saved before it was kept have no draw
        int64_t iteration = 0, seed = 0;
        TW_RETURN_IF_ERROR(r.ReadInt("iteration", &iteration));
        TW_RETURN_IF_ERROR(r.ReadInt("seed", &seed));
        iteration_ = static_cast<uint64_t>(iteration);
        dataset().iterations_.store(iteration_ + 1);
        dataset().seed_.store(static_cast<uint64_t>(seed));
      }
      return Status::OK();
    }

   private:
    std::vector<std::string> files_;
    int64_t next_ = 0;
    uint64_t iteration_;
  };

  std::string pattern_;
  ListFilesOptions options_;
  mutable std::atomic<uint64_t> seed_;  // a restore takes the saved one
  mutable std::atomic<uint64_t> iterations_{0};
};

}  // namespace

StatusOr<std::shared_ptr<const DatasetBase>> MakeTensorsDataset(Element components, bool slices) {
  if (components.empty()) return errors::InvalidArgument("an element needs at least one component");
  ElementSpec spec;
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& t = components[i];
    if (!t.IsInitialized()) return errors::InvalidArgument("component ", i, " is an uninitialized tensor");
    spec.dtypes.push_back(t.dtype());
    if (!slices) {
      spec.shapes.push_back(PartialShape(t.shape()));
      continue;
    }
    if (t.rank() == 0) {
      return errors::InvalidArgument("component ", i, " is a scalar: slicing needs at least one dimension");
    }
    if (t.dim(0) != components[0].dim(0)) {
      return errors::InvalidArgument("Dimensions ", components[0].dim(0), " and ", t.dim(0),
                                     " are not compatible: components 0 and ", i,
                                     " must have the same size in dimension 0");
    }
    std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
    spec.shapes.push_back(PartialShape(std::move(dims)));
  }
  return std::shared_ptr<const DatasetBase>(std::make_shared<TensorsDataset>(std::move(components), slices,
                                                                             std::move(spec)));
}

StatusOr<std::shared_ptr<const DatasetBase>> MakeRangeDataset(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return errors::InvalidArgument("step must not be 0");
  return std::shared_ptr<const DatasetBase>(std::make_shared<RangeDataset>(start, stop, step));
}

StatusOr<std::shared_ptr<const DatasetBase>> MakeListFilesDataset(const std::string& pattern,
                                                                  const ListFilesOptions& options) {
  if (pattern.empty()) return errors::InvalidArgument("empty file pattern");
  return std::shared_ptr<const DatasetBase>(std::make_shared<ListFilesDataset>(pattern, options));
}

}  // namespace tw::data
