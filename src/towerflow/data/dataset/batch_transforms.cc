// Batch, PaddedBatch and Unbatch.
#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/element_util.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

PartialShape WithBatchDim(int64_t n, const PartialShape& s) {
  if (!s.known_rank()) return PartialShape::Unknown();
  std::vector<int64_t> dims = {n};
  dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  return PartialShape(std::move(dims));
}

// Batch and PaddedBatch (padded = true).
class BatchDataset final : public UnaryDataset {
 public:
  BatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder, bool padded, PaddedBatchOptions pad,
               ElementSpec spec)
      : UnaryDataset(padded ? "PaddedBatch" : "Batch", std::move(spec), input),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padded_(padded),
        pad_(std::move(pad)) {}
  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n < 0) return n;
    return n / batch_size_ + (!drop_remainder_ && n % batch_size_ != 0 ? 1 : 0);
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    if (!padded_) {
      TW_ASSIGN_OR_RETURN(auto fused, MakeMapAndBatchIterator(*input(), batch_size_, drop_remainder_, ctx));
      if (fused != nullptr) return fused;
      TW_ASSIGN_OR_RETURN(fused, MakeShuffleBatchIterator(*input(), batch_size_, drop_remainder_, ctx));
      if (fused != nullptr) return fused;
    }
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<BatchDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const BatchDataset& d = dataset();
      // The slots are kept from batch to batch and handed to the input to
      // fill: an input that reuses what it is handed (TFRecord) then allocates
      // nothing per element but the element's bytes.
      // Made as elements come, not batch_size up front: Batch(1 << 40) over
      // ten elements holds ten.
      size_t count = 0;
      TW_RETURN_IF_ERROR(PullBatch(d.batch_size_, [&](bool* input_end) {
        if (count == elements_.size()) elements_.emplace_back();
        Status s = input_->GetNext(&elements_[count], input_end);
        if (s.ok() && !*input_end) ++count;
        return s;
      }));
      if (count == 0 || (d.drop_remainder_ && static_cast<int64_t>(count) < d.batch_size_)) {
        *end = true;
        return Status::OK();
      }
      const size_t components = elements_[0].size();
      out->assign(components, Tensor());
      std::vector<const Tensor*> parts(count);
      std::vector<Tensor*> owned(count);
      for (size_t c = 0; c < components; ++c) {
        for (size_t i = 0; i < count; ++i) parts[i] = owned[i] = &elements_[i][c];
        if (!d.padded_) {
          // The elements are this iterator's: their strings move into the batch.
          TW_ASSIGN_OR_RETURN((*out)[c], StackConsuming(owned, static_cast<int>(c)));
          continue;
        }
        TW_ASSIGN_OR_RETURN(TensorShape shape, PaddedShape(parts, c));
        const Tensor pad = c < d.pad_.padding_values.size() ? d.pad_.padding_values[c] : Tensor();
        (*out)[c] = StackPadded(parts, shape, pad);
      }
      *end = false;
      return Status::OK();
    }
    Status Save(StateWriter& w) const override {
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override { return RestoreInput(*input_, r); }

    std::unique_ptr<IteratorBase> input_;

   private:
    // Per dimension: the padded shape's size, or the batch's longest.
    StatusOr<TensorShape> PaddedShape(const std::vector<const Tensor*>& parts, size_t c) const {
      const PaddedBatchOptions& pad = dataset().pad_;
      const int rank = parts[0]->rank();
      std::vector<int64_t> dims(static_cast<size_t>(rank), 0);
      for (const Tensor* t : parts) {
        if (t->rank() != rank) {
          return errors::InvalidArgument("PaddedBatch: component ", c, " has rank ", rank, " in one element and ",
                                         t->rank(), " in another");
        }
        for (int k = 0; k < rank; ++k) dims[static_cast<size_t>(k)] = std::max(dims[static_cast<size_t>(k)], t->dim(k));
      }
      if (c < pad.padded_shapes.size() && pad.padded_shapes[c].known_rank()) {
        const PartialShape& want = pad.padded_shapes[c];
        if (want.rank() != rank) {
          return errors::InvalidArgument("PaddedBatch: component ", c, " has rank ", rank, " but its padded shape ",
                                         ShapeString(want), " has rank ", want.rank());
        }
        for (int k = 0; k < rank; ++k) {
          if (want.dim(k) < 0) continue;
          if (dims[static_cast<size_t>(k)] > want.dim(k)) {
            return errors::InvalidArgument("Attempted to pad to a smaller size than the input element: component ",
                                           c, " dimension ", k, " has ", dims[static_cast<size_t>(k)],
                                           " but the padded shape is ", ShapeString(want));
          }
          dims[static_cast<size_t>(k)] = want.dim(k);
        }
      }
      return TensorShape(std::move(dims));
    }

    std::vector<Element> elements_;
  };

  int64_t batch_size_;
  bool drop_remainder_;
  bool padded_;
  PaddedBatchOptions pad_;
};

class UnbatchDataset final : public UnaryDataset {
 public:
  UnbatchDataset(DatasetPtr input, ElementSpec spec) : UnaryDataset("Unbatch", std::move(spec), input) {}
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<UnbatchDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      while (index_ >= rows_) {
        TW_RETURN_IF_ERROR(input_->GetNext(&batch_, end));
        if (*end) return Status::OK();
        index_ = 0;
        TW_RETURN_IF_ERROR(CheckBatch());
      }
      out->clear();
      for (const Tensor& t : batch_) out->push_back(SliceAlongDim0(t, index_));
      ++index_;
      *end = false;
      return Status::OK();
    }
    // Sets rows_; InvalidArgument unless every component has a dimension 0 of that size.
    Status CheckBatch() {
      rows_ = 0;
      for (size_t c = 0; c < batch_.size(); ++c) {
        if (batch_[c].rank() == 0) return errors::InvalidArgument("Unbatch: component ", c, " is a scalar");
      }
      if (!batch_.empty()) rows_ = batch_[0].dim(0);
      {
        for (size_t c = 1; c < batch_.size(); ++c) {
          if (batch_[c].dim(0) != rows_) {
            rows_ = 0;
            return errors::InvalidArgument("Unbatch: input components have different sizes in dimension 0: ",
                                           batch_[0].dim(0), " (component 0) and ", batch_[c].dim(0), " (component ",
                                           c, ")");
          }
        }
      }
      return Status::OK();
    }
    Status Save(StateWriter& w) const override {
      w.WriteInt("index", index_);
      w.WriteInt("rows", rows_);
      if (index_ < rows_) w.WriteElement("batch", batch_);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      int64_t saved_rows = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("index", &index_));
      TW_RETURN_IF_ERROR(r.ReadInt("rows", &saved_rows));
      rows_ = 0;
      if (index_ < saved_rows) {
        TW_RETURN_IF_ERROR(r.ReadElement("batch", &batch_));
        // The batch itself says how many rows it has; the saved count must agree.
        Status s = CheckBatch();
        if (!s.ok() || rows_ != saved_rows || index_ < 0) {
          return errors::DataLoss("Unbatch: the saved batch does not match its saved position");
        }
      } else {
        index_ = 0;
      }
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;

   private:
    Element batch_;
    int64_t index_ = 0, rows_ = 0;
  };
};

}  // namespace

const DatasetBase* UnbatchInput(const DatasetBase& d) {
  const auto* u = dynamic_cast<const UnbatchDataset*>(&d);
  return u != nullptr ? u->input().get() : nullptr;
}

StatusOr<DatasetPtr> MakeBatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder) {
  if (batch_size < 1) return errors::InvalidArgument("Batch size must be greater than zero, got ", batch_size);
  ElementSpec spec = input->spec();
  for (PartialShape& s : spec.shapes) s = WithBatchDim(drop_remainder ? batch_size : -1, s);
  return DatasetPtr(std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder, false,
                                                   PaddedBatchOptions{}, std::move(spec)));
}

StatusOr<DatasetPtr> MakePaddedBatchDataset(DatasetPtr input, int64_t batch_size, const PaddedBatchOptions& options) {
  if (batch_size < 1) return errors::InvalidArgument("Batch size must be greater than zero, got ", batch_size);
  const ElementSpec& in = input->spec();
  if (!options.padded_shapes.empty() && options.padded_shapes.size() != in.size()) {
    return errors::InvalidArgument(options.padded_shapes.size(), " padded shapes for ", in.size(), " components");
  }
  if (!options.padding_values.empty() && options.padding_values.size() != in.size()) {
    return errors::InvalidArgument(options.padding_values.size(), " padding values for ", in.size(), " components");
  }
  ElementSpec spec = in;
  for (size_t c = 0; c < in.size(); ++c) {
    if (c < options.padding_values.size()) {
      const Tensor& v = options.padding_values[c];
      if (v.IsInitialized() && (v.dtype() != in.dtypes[c] || v.rank() != 0)) {
        return errors::InvalidArgument("padding value of component ", c, " must be a ", DataTypeName(in.dtypes[c]),
                                       " scalar, got ", DataTypeName(v.dtype()), " ", v.shape().ToString());
      }
    }
    PartialShape s = in.shapes[c];
    if (c < options.padded_shapes.size() && options.padded_shapes[c].known_rank()) {
      const PartialShape& want = options.padded_shapes[c];
      if (s.known_rank() && s.rank() != want.rank()) {
        return errors::InvalidArgument("padded shape ", ShapeString(want), " of component ", c,
                                       " is not compatible with its shape ", ShapeString(s));
      }
      s = want;
    }  // else: dims known for every element stay known, the others pad to the longest
    spec.shapes[c] = WithBatchDim(options.drop_remainder ? batch_size : -1, s);
  }
  return DatasetPtr(std::make_shared<BatchDataset>(std::move(input), batch_size, options.drop_remainder, true,
                                                   options, std::move(spec)));
}

StatusOr<DatasetPtr> MakeUnbatchDataset(DatasetPtr input) {
  ElementSpec spec = input->spec();
  for (size_t c = 0; c < spec.size(); ++c) {
    PartialShape& s = spec.shapes[c];
    if (!s.known_rank()) continue;
    if (s.rank() == 0) return errors::InvalidArgument("Unbatch: component ", c, " is a scalar");
    s = PartialShape(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end()));
  }
  return DatasetPtr(std::make_shared<UnbatchDataset>(std::move(input), std::move(spec)));
}

}  // namespace tw::data
