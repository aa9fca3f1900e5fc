// AutoShard: one shard of a whole pipeline (tf.data's AutoShardPolicy.AUTO,
// as MultiWorkerMirroredStrategy applies it to each worker's dataset). When
// the iterator is made, the pipeline's source (the dataset at the bottom of
// its chain) is asked how many files or elements it has; then, in order:
// - at least as many as shards: the source keeps its part (files for TFRecord
//   and ListFiles, elements for the in-memory sources), split before any
//   shuffle, so the shards stay disjoint whatever seeds they shuffle with;
// - fewer, and the pipeline reads records (a TFRecord source, or an
//   Interleave or FlatMap that may open TFRecord datasets): every TFRecord of
//   the pipeline keeps, of each file, the records whose index is the
//   shard's;
// - otherwise (or when no TFRecord turned up by the first element): the
//   elements of the shard's index modulo the count, dropped here at the end
//   (tf.data's DATA policy: disjoint only when every shard sees the same
//   order, the same seeds).
// One AutoShard per pipeline: a second one fails when the iterator is made.
// Position: the mode chosen and the elements seen at the end.
#include "towerflow/data/dataset/dataset_base.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

// Element k of the input when k % count == index; the position counts them.
class SplitIter final : public IteratorBase {
 public:
  SplitIter(std::unique_ptr<IteratorBase> input, int64_t count, int64_t index)
      : input_(std::move(input)), count_(count), index_(index) {}
  Status GetNext(Element* out, bool* end) override {
    while (true) {
      TW_RETURN_IF_ERROR(input_->GetNext(out, end));
      if (*end || next_++ % count_ == index_) return Status::OK();
    }
  }
  Status Save(StateWriter& w) const override {
    w.WriteInt("split_next", next_);
    return SaveInput(*input_, w);
  }
  Status Restore(const StateReader& r) override {
    TW_RETURN_IF_ERROR(r.ReadInt("split_next", &next_));
    return RestoreInput(*input_, r);
  }
  const std::string& name() const override { return input_->name(); }

 private:
  std::unique_ptr<IteratorBase> input_;
  int64_t count_, index_;
  int64_t next_ = 0;
};

class AutoShardDataset final : public UnaryDataset {
 public:
  AutoShardDataset(DatasetPtr input, int64_t count, int64_t index)
      : UnaryDataset("AutoShard", input->spec(), input), count_(count), index_(index) {
    const DatasetBase* d = this->input().get();
    while (const auto* unary = dynamic_cast<const UnaryDataset*>(d)) {
      // Interleave and FlatMap may open TFRecord datasets; TFRecord over a
      // dataset of names is an Interleave of that name.
      const std::string& n = unary->name();
      reads_records_ = reads_records_ || n == "Interleave" || n == "FlatMap" || n == "TFRecord";
      d = unary->input().get();
    }
    source_ = d;
    reads_records_ = reads_records_ || source_->name() == "TFRecord";
  }
  int64_t Cardinality() const override {
    return input()->Cardinality() == kInfiniteCardinality ? kInfiniteCardinality : kUnknownCardinality;
  }
  std::string DebugString() const override {
    return "AutoShard[" + std::to_string(index_) + "/" + std::to_string(count_) + "](" + input()->DebugString() + ")";
  }

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    PipelineContext::Split& split = ctx->split;
    if (split.by != nullptr && split.by != this) {
      return errors::FailedPrecondition("AutoShard: the pipeline is split once; ", split.by->DebugString(),
                                        " splits it already");
    }
    auto it = std::make_unique<Iter>(*this, ctx);
    if (split.by == nullptr) {
      // Decided once per pipeline: a Repeat above makes this iterator again
      // while threads of the pipeline may read the split.
      TW_ASSIGN_OR_RETURN(const int64_t units, source_->SplitUnits());
      PipelineContext::Split decided{.by = this, .count = count_, .index = index_};
      if (units >= count_) {
        decided.source = source_;
      } else if (reads_records_) {
        decided.records = true;
      }
      split = decided;
    }
    if (split.source != nullptr) {
      it->mode_ = Mode::kPass;
    } else if (split.records) {
      it->mode_ = source_->name() == "TFRecord" ? Mode::kPass : Mode::kRecordsOrElements;
    } else {
      it->mode_ = Mode::kElements;
    }
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  enum class Mode : int64_t {
    kPass = 0,               // split below
    kElements = 1,           // split here, by element
    kRecordsOrElements = 2,  // below if a TFRecord split its records by the first element, else here
  };

  class Iter final : public DatasetIterator<AutoShardDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const int64_t count = dataset().count_, index = dataset().index_;
      while (true) {
        TW_RETURN_IF_ERROR(input_->GetNext(out, end));
        if (*end) return Status::OK();
        if (mode_ == Mode::kRecordsOrElements) {
          // The first element came out of an iterator made before it: a
          // TFRecord that splits its records has said so by now.
          mode_ = ctx()->records_split.load() ? Mode::kPass : Mode::kElements;
        }
        if (mode_ == Mode::kPass || next_++ % count == index) return Status::OK();
      }
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("mode", static_cast<int64_t>(mode_));
      w.WriteInt("next", next_);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      int64_t mode = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("mode", &mode));
      TW_RETURN_IF_ERROR(r.ReadInt("next", &next_));
      if (mode < 0 || mode > 2 || next_ < 0) {
        return errors::DataLoss("AutoShard: saved mode ", mode, " and position ", next_, " are not a position");
      }
      mode_ = static_cast<Mode>(mode);
      return RestoreInput(*input_, r);
    }

   private:
    friend class AutoShardDataset;
    std::unique_ptr<IteratorBase> input_;
    Mode mode_ = Mode::kPass;
    int64_t next_ = 0;
  };

  int64_t count_, index_;
  const DatasetBase* source_ = nullptr;  // the bottom of the chain
  bool reads_records_ = false;
};

}  // namespace

std::unique_ptr<IteratorBase> SplitElements(std::unique_ptr<IteratorBase> source,
                                            const PipelineContext::Split& split) {
  return std::make_unique<SplitIter>(std::move(source), split.count, split.index);
}

StatusOr<DatasetPtr> MakeAutoShardDataset(DatasetPtr input, int64_t num_shards, int64_t index) {
  if (num_shards < 1) return errors::InvalidArgument("Number of shards must be greater than zero, got ", num_shards);
  if (index < 0 || index >= num_shards) {
    return errors::InvalidArgument("Index must be between 0 and ", num_shards - 1, " (currently index = ", index,
                                   ").");
  }
  return DatasetPtr(std::make_shared<AutoShardDataset>(std::move(input), num_shards, index));
}

}  // namespace tw::data
