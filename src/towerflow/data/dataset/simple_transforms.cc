// Repeat, Take, Skip, Shard and IgnoreErrors: transformations that only count elements.
#include <limits>

#include "towerflow/data/dataset/dataset_base.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

class RepeatDataset final : public UnaryDataset {
 public:
  RepeatDataset(DatasetPtr input, int64_t count) : UnaryDataset("Repeat", input->spec(), input), count_(count) {}
  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (count_ < 0 || n == kInfiniteCardinality) return kInfiniteCardinality;
    if (n < 0) return n;
    int64_t total = 0;  // saturates: no run reads that far
    return __builtin_mul_overflow(n, count_, &total) ? std::numeric_limits<int64_t>::max() : total;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    if (count_ != 0) {
      TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    }
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<RepeatDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const int64_t count = dataset().count_;
      while (input_ != nullptr) {
        TW_RETURN_IF_ERROR(input_->GetNext(out, end));
        if (!*end) {
          produced_in_epoch_ = true;
          return Status::OK();
        }
        ++epoch_;
        // An input that yields nothing would be repeated forever for nothing.
        if ((count >= 0 && epoch_ >= count) || !produced_in_epoch_) {
          input_.reset();
          break;
        }
        produced_in_epoch_ = false;
        TW_ASSIGN_OR_RETURN(input_, dataset().input()->MakeIterator(ctx()));
      }
      *end = true;
      return Status::OK();
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("epoch", epoch_);
      w.WriteInt("produced", produced_in_epoch_ ? 1 : 0);
      w.WriteInt("active", input_ != nullptr ? 1 : 0);
      if (input_ == nullptr) return Status::OK();
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      int64_t produced = 0, active = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("epoch", &epoch_));
      TW_RETURN_IF_ERROR(r.ReadInt("produced", &produced));
      TW_RETURN_IF_ERROR(r.ReadInt("active", &active));
      produced_in_epoch_ = produced != 0;
      if (active == 0) {
        input_.reset();
        return Status::OK();
      }
      // A fresh input iterator (of epoch `epoch_`: shuffles draw that epoch's order).
      TW_ASSIGN_OR_RETURN(input_, dataset().input()->MakeIterator(ctx()));
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;
    int64_t epoch_ = 0;
    bool produced_in_epoch_ = false;
  };
  int64_t count_;
};

// Take (take=true) and Skip.
class TakeSkipDataset final : public UnaryDataset {
 public:
  TakeSkipDataset(DatasetPtr input, int64_t count, bool take)
      : UnaryDataset(take ? "Take" : "Skip", input->spec(), input), count_(count), take_(take) {}
  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (take_) {
      if (count_ < 0) return n;
      if (n == kInfiniteCardinality) return count_;
      return n < 0 ? n : std::min(n, count_);
    }
    if (count_ < 0) return n == kInfiniteCardinality ? n : 0;
    if (n < 0) return n;
    return std::max<int64_t>(0, n - count_);
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<TakeSkipDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const int64_t count = dataset().count_;
      if (dataset().take_) {
        if (count >= 0 && seen_ >= count) {
          *end = true;
          return Status::OK();
        }
        TW_RETURN_IF_ERROR(input_->GetNext(out, end));
        if (!*end) ++seen_;
        return Status::OK();
      }
      while (count < 0 || seen_ < count) {
        // Skip(-1) over a repeated input skips forever: a closed iterator stops it.
        if (ctx()->cancelled.load(std::memory_order_relaxed)) return CancelledError();
        TW_RETURN_IF_ERROR(input_->GetNext(out, end));
        if (*end) return Status::OK();
        ++seen_;
      }
      return input_->GetNext(out, end);
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("seen", seen_);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("seen", &seen_));
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;
    int64_t seen_ = 0;
  };
  int64_t count_;
  bool take_;
};

class ShardDataset final : public UnaryDataset {
 public:
  ShardDataset(DatasetPtr input, int64_t num_shards, int64_t index)
      : UnaryDataset("Shard", input->spec(), input), num_shards_(num_shards), index_(index) {}
  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n < 0) return n;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }
  std::string DebugString() const override {
    return "Shard[" + std::to_string(index_) + "/" + std::to_string(num_shards_) + "](" + input()->DebugString() + ")";
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<ShardDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      // Element k goes to shard k % num_shards: read up to this shard's next one.
      while (true) {
        TW_RETURN_IF_ERROR(input_->GetNext(out, end));
        if (*end) return Status::OK();
        const int64_t k = next_++;
        if (k % dataset().num_shards_ == dataset().index_) return Status::OK();
      }
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("next", next_);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("next", &next_));
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;
    int64_t next_ = 0;
  };
  int64_t num_shards_, index_;
};

// IgnoreErrors: the input's elements, skipping those whose GetNext fails
// (each input recovers from its own errors: dataset.h). The count skipped is
// part of the position, and the pipeline's "Errors ignored" gauge.
class IgnoreErrorsDataset final : public UnaryDataset {
 public:
  explicit IgnoreErrorsDataset(DatasetPtr input) : UnaryDataset("IgnoreErrors", input->spec(), input) {}
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<IgnoreErrorsDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      while (true) {
        // An input that fails on every element (forever, under a Repeat)
        // must not keep a closed iterator's worker from stopping.
        if (ctx()->cancelled.load(std::memory_order_relaxed)) return CancelledError();
        Status s = input_->GetNext(out, end);
        if (s.ok() || errors::IsCancelled(s)) {
          Report();
          return s;
        }
        // The gauge (a mutex) once per 256 skipped in a run of errors, and
        // when the run ends.
        if (++ignored_ % 256 == 0) Report();
      }
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("ignored", ignored_);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      TW_RETURN_IF_ERROR(r.ReadInt("ignored", &ignored_));
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;

   private:
    void Report() {
      if (ignored_ == reported_) return;
      reported_ = ignored_;
      ctx()->SetGauge("Errors ignored", static_cast<double>(ignored_));
    }

    int64_t ignored_ = 0;
    int64_t reported_ = 0;  // the gauge's value
  };
};

}  // namespace

StatusOr<DatasetPtr> MakeIgnoreErrorsDataset(DatasetPtr input) {
  return DatasetPtr(std::make_shared<IgnoreErrorsDataset>(std::move(input)));
}

StatusOr<DatasetPtr> MakeRepeatDataset(DatasetPtr input, int64_t count) {
  if (count < -1) return errors::InvalidArgument("count must be >= -1, got ", count);
  return DatasetPtr(std::make_shared<RepeatDataset>(std::move(input), count));
}
StatusOr<DatasetPtr> MakeTakeDataset(DatasetPtr input, int64_t count) {
  if (count < -1) return errors::InvalidArgument("count must be >= -1, got ", count);
  return DatasetPtr(std::make_shared<TakeSkipDataset>(std::move(input), count, true));
}
StatusOr<DatasetPtr> MakeSkipDataset(DatasetPtr input, int64_t count) {
  if (count < -1) return errors::InvalidArgument("count must be >= -1, got ", count);
  return DatasetPtr(std::make_shared<TakeSkipDataset>(std::move(input), count, false));
}
StatusOr<DatasetPtr> MakeShardDataset(DatasetPtr input, int64_t num_shards, int64_t index) {
  if (num_shards < 1) return errors::InvalidArgument("Number of shards must be greater than zero, got ", num_shards);
  if (index < 0 || index >= num_shards) {
    return errors::InvalidArgument("Index must be between 0 and ", num_shards - 1, " (currently index = ", index,
                                   ").");
  }
  return DatasetPtr(std::make_shared<ShardDataset>(std::move(input), num_shards, index));
}

}  // namespace tw::data
