// Shuffle: a buffer of up to buffer_size elements, filled from the input;
// each GetNext hands out a uniformly chosen one and refills its place with
// the next input element (tf.data's algorithm). Each iteration draws from a
// generator seeded by the seed and the iteration's number, so that Repeat's
// epochs differ (reshuffle_each_iteration) yet a seeded run is the same every
// time. The position saves the buffer itself, the generator's state, the
// seed and the iteration's number: a restored pipeline draws the later
// iterations' orders of the run that saved it, whatever seed it was built with.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/element_util.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

uint64_t Mix(uint64_t seed, uint64_t iteration) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + iteration + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;  // SplitMix64's finalizer
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class ShuffleDataset final : public UnaryDataset {
 public:
  ShuffleDataset(DatasetPtr input, int64_t buffer_size, ShuffleOptions options)
      : UnaryDataset("Shuffle", input->spec(), input),
        buffer_size_(buffer_size),
        options_(options),
        seed_(options.seed ? static_cast<uint64_t>(*options.seed) : std::random_device{}()) {}
  uint64_t seed() const { return seed_.load(); }

  // What both iterators draw from (Shuffle's and the fused ShuffleBatch's):
  // the generator, the iteration it was seeded for, the seed, and whether the
  // input has ended. Restore also makes the dataset's later iterations (Repeat's
  // next epochs) draw the orders the saving run would have drawn.
  void SaveDraws(StateWriter& w, const std::mt19937_64& rng, uint64_t iteration, bool input_ended) const {
    std::ostringstream state;
    state << rng;
    w.WriteString("rng", state.str());
    w.WriteInt("iteration", static_cast<int64_t>(iteration));
    w.WriteInt("seed", static_cast<int64_t>(seed()));
    w.WriteInt("input_ended", input_ended ? 1 : 0);
  }
  Status RestoreDraws(const StateReader& r, std::mt19937_64* rng, uint64_t* iteration, bool* input_ended) const {
    std::string state;
    int64_t saved_iteration = 0, seed = 0, ended = 0;
    TW_RETURN_IF_ERROR(r.ReadString("rng", &state));
    std::istringstream in(state);
    in >> *rng;
    if (in.fail()) return errors::DataLoss("Shuffle: the saved generator state does not parse");
    TW_RETURN_IF_ERROR(r.ReadInt("iteration", &saved_iteration));
    TW_RETURN_IF_ERROR(r.ReadInt("seed", &seed));
    TW_RETURN_IF_ERROR(r.ReadInt("input_ended", &ended));
    *iteration = static_cast<uint64_t>(saved_iteration);
    *input_ended = ended != 0;
    if (options_.reshuffle_each_iteration) iterations_.store(*iteration + 1);
    seed_.store(static_cast<uint64_t>(seed));
    return Status::OK();
  }
  int64_t Cardinality() const override { return input()->Cardinality(); }

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    const uint64_t iteration = !options_.reshuffle_each_iteration ? 0
                               : ctx->probe                      ? iterations_.load()
                                                                 : iterations_.fetch_add(1);
    auto it = std::make_unique<Iter>(*this, ctx, Mix(seed_.load(), iteration));
    it->iteration_ = iteration;
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<ShuffleDataset> {
   public:
    Iter(const ShuffleDataset& d, std::shared_ptr<PipelineContext> ctx, uint64_t seed)
        : DatasetIterator(d, std::move(ctx)), rng_(seed) {}

    Status GetNext(Element* out, bool* end) override {
      const size_t capacity = static_cast<size_t>(dataset().buffer_size_);
      while (!input_ended_ && buffer_.size() < capacity) {
        Element e;
        bool input_end = false;
        TW_RETURN_IF_ERROR(input_->GetNext(&e, &input_end));
        if (input_end) {
          input_ended_ = true;
          break;
        }
        buffer_.push_back(std::move(e));
      }
      if (buffer_.empty()) {
        *end = true;
        return Status::OK();
      }
      if (handed_out_++ % 64 == 0) {
        ctx()->SetGauge("Shuffle buffer fill", static_cast<double>(buffer_.size()) / static_cast<double>(capacity));
      }
      std::uniform_int_distribution<size_t> pick(0, buffer_.size() - 1);
      const size_t i = pick(rng_);
      *out = std::move(buffer_[i]);
      if (i + 1 != buffer_.size()) buffer_[i] = std::move(buffer_.back());
      buffer_.pop_back();
      *end = false;
      return Status::OK();
    }

    Status Save(StateWriter& w) const override {
      dataset().SaveDraws(w, rng_, iteration_, input_ended_);
      w.WriteInt("buffered", static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) w.WriteElement("buffer_" + std::to_string(i), buffer_[i]);
      return SaveInput(*input_, w);
    }
    Status Restore(const StateReader& r) override {
      int64_t buffered = 0;
      TW_RETURN_IF_ERROR(dataset().RestoreDraws(r, &rng_, &iteration_, &input_ended_));
      TW_RETURN_IF_ERROR(r.ReadInt("buffered", &buffered));
      if (buffered < 0 || buffered > dataset().buffer_size_) {
        return errors::DataLoss("Shuffle: the saved buffer holds ", buffered, " elements, more than buffer_size ",
                                dataset().buffer_size_);
      }
      buffer_.assign(static_cast<size_t>(buffered), Element());
      for (int64_t i = 0; i < buffered; ++i) {
        TW_RETURN_IF_ERROR(r.ReadElement("buffer_" + std::to_string(i), &buffer_[static_cast<size_t>(i)]));
      }
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;
    uint64_t iteration_ = 0;

   private:
    std::mt19937_64 rng_;
    std::vector<Element> buffer_;
    bool input_ended_ = false;
    int64_t handed_out_ = 0;
  };

  friend class ShuffleBatchIter;
  friend StatusOr<std::unique_ptr<IteratorBase>> tw::data::MakeShuffleBatchIterator(
      const DatasetBase&, int64_t, bool, const std::shared_ptr<PipelineContext>&);

  int64_t buffer_size_;
  ShuffleOptions options_;
  // Mutable for Restore, which takes the saving run's seed.
  mutable std::atomic<uint64_t> seed_;
  mutable std::atomic<uint64_t> iterations_{0};
};

// Batch(Shuffle(Unbatch(x))) over fixed-size numeric rows (dataset_base.h):
// the draws of ShuffleDataset::Iter, row for row, on rows kept in one array
// per component.
class ShuffleBatchIter final : public IteratorBase {
 public:
  ShuffleBatchIter(const ShuffleDataset& shuffle, std::shared_ptr<PipelineContext> ctx, int64_t batch_size,
                   bool drop_remainder, std::vector<DataType> dtypes, std::vector<TensorShape> rows,
                   uint64_t iteration)
      : shuffle_(std::static_pointer_cast<const ShuffleDataset>(shuffle.shared_from_this())),
        ctx_(std::move(ctx)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        dtypes_(std::move(dtypes)),
        rows_shape_(std::move(rows)),
        rng_(Mix(shuffle.seed(), iteration)),
        iteration_(iteration) {
    // MakeShuffleBatchIterator checked that a full buffer's bytes fit.
    for (size_t c = 0; c < dtypes_.size(); ++c) {
      row_bytes_.push_back(static_cast<size_t>(rows_shape_[c].num_elements()) * DataTypeSize(dtypes_[c]));
    }
    store_.resize(dtypes_.size());
  }
  const std::string& name() const override { return name_; }

  Status GetNext(Element* out, bool* end) override {
    const int64_t capacity = shuffle_->buffer_size_;
    Element batch(dtypes_.size());
    for (size_t c = 0; c < dtypes_.size(); ++c) batch[c] = Tensor(dtypes_[c], WithRows(batch_size_, c));
    int64_t k = 0;  // rows in the batch
    // As the unfused Batch(Shuffle(...)) (PullBatch): an input error takes
    // one place of the batch, which fails whole once taken.
    TW_RETURN_IF_ERROR(PullBatch(batch_size_, [&](bool* input_end) {
      while (!input_ended_ && size_ < capacity) {
        bool got = false;
        TW_RETURN_IF_ERROR(NextRow(&got));
        if (!got) input_ended_ = true;
      }
      if (size_ == 0) {
        *input_end = true;
        return Status::OK();
      }
      if (handed_out_++ % 64 == 0) {
        ctx_->SetGauge("Shuffle buffer fill", static_cast<double>(size_) / static_cast<double>(capacity));
      }
      std::uniform_int_distribution<size_t> pick(0, static_cast<size_t>(size_) - 1);
      const size_t i = pick(rng_);
      for (size_t c = 0; c < dtypes_.size(); ++c) {
        const size_t n = row_bytes_[c];
        char* rows = store_[c].data();
        std::memcpy(static_cast<char*>(batch[c].raw_data()) + static_cast<size_t>(k) * n, rows + i * n, n);
        if (i + 1 != static_cast<size_t>(size_)) std::memcpy(rows + i * n, rows + static_cast<size_t>(size_ - 1) * n, n);
      }
      --size_;
      ++k;
      return Status::OK();
    }));
    if (k == 0 || (drop_remainder_ && k < batch_size_)) {
      *end = true;
      return Status::OK();
    }
    if (k < batch_size_) {  // the last, smaller batch
      for (size_t c = 0; c < dtypes_.size(); ++c) {
        Tensor part(dtypes_[c], WithRows(k, c));
        std::memcpy(part.raw_data(), batch[c].raw_data(), part.TotalBytes());
        batch[c] = std::move(part);
      }
    }
    *out = std::move(batch);
    *end = false;
    return Status::OK();
  }

  Status Save(StateWriter& w) const override {
    shuffle_->SaveDraws(w, rng_, iteration_, input_ended_);
    Element buffer(dtypes_.size());
    for (size_t c = 0; c < dtypes_.size(); ++c) {
      buffer[c] = Tensor(dtypes_[c], WithRows(size_, c));
      if (buffer[c].TotalBytes() > 0) std::memcpy(buffer[c].raw_data(), store_[c].data(), buffer[c].TotalBytes());
    }
    w.WriteElement("buffer", buffer);
    w.WriteInt("index", index_);
    if (index_ < batch_rows_) w.WriteElement("batch", batch_);
    return SaveInput(*input_, w);
  }

  Status Restore(const StateReader& r) override {
    TW_RETURN_IF_ERROR(shuffle_->RestoreDraws(r, &rng_, &iteration_, &input_ended_));
    Element buffer;
    TW_RETURN_IF_ERROR(r.ReadElement("buffer", &buffer));
    TW_RETURN_IF_ERROR(CheckRows(buffer, "the saved shuffle buffer"));
    size_ = buffer.empty() ? 0 : buffer[0].dim(0);
    if (size_ > shuffle_->buffer_size_) return errors::DataLoss("Shuffle: the saved buffer holds too many rows");
    for (size_t c = 0; c < dtypes_.size(); ++c) {
      Reserve(c, static_cast<size_t>(size_));
      if (buffer[c].TotalBytes() > 0) std::memcpy(store_[c].data(), buffer[c].raw_data(), buffer[c].TotalBytes());
    }
    TW_RETURN_IF_ERROR(r.ReadInt("index", &index_));
    batch_rows_ = 0;
    if (r.Contains("batch")) {
      TW_RETURN_IF_ERROR(r.ReadElement("batch", &batch_));
      TW_RETURN_IF_ERROR(CheckRows(batch_, "the saved input batch"));
      batch_rows_ = batch_.empty() ? 0 : batch_[0].dim(0);
    }
    if (index_ < 0 || (index_ > batch_rows_ && batch_rows_ > 0)) {
      return errors::DataLoss("Shuffle: the saved row ", index_, " is outside its batch of ", batch_rows_);
    }
    if (batch_rows_ == 0) index_ = 0;
    return RestoreInput(*input_, r);
  }

  std::unique_ptr<IteratorBase> input_;  // over the Unbatch's input: batches

 private:
  TensorShape WithRows(int64_t n, size_t c) const {
    std::vector<int64_t> dims = {n};
    dims.insert(dims.end(), rows_shape_[c].dims().begin(), rows_shape_[c].dims().end());
    return TensorShape(std::move(dims));
  }

  // InvalidArgument unless `e` is one batch of rows of the expected dtypes
  // and shapes (Unbatch's and Batch's checks).
  Status CheckRows(const Element& e, const char* what) const {
    if (e.size() != dtypes_.size()) return errors::InvalidArgument(what, " has ", e.size(), " components");
    for (size_t c = 0; c < e.size(); ++c) {
      if (e[c].dtype() != dtypes_[c] || e[c].rank() != rows_shape_[c].rank() + 1 ||
          e[c].dim(0) != e[0].dim(0) ||
          TensorShape(std::vector<int64_t>(e[c].shape().dims().begin() + 1, e[c].shape().dims().end())) !=
              rows_shape_[c]) {
        return errors::InvalidArgument("Unbatch: ", what, " component ", c, " is ", DataTypeName(e[c].dtype()), " ",
                                       e[c].shape().ToString(), ", expected rows of ", rows_shape_[c].ToString(),
                                       " as many as component 0's ", e[0].rank() > 0 ? e[0].dim(0) : 0);
      }
    }
    return Status::OK();
  }

  // Room for `rows` rows of component c: the store grows with the rows that
  // come (doubling, up to buffer_size rows), so that a buffer larger than the
  // data holds the data, as the unfused Shuffle's.
  void Reserve(size_t c, size_t rows) {
    const size_t need = rows * row_bytes_[c];
    if (need <= store_[c].size()) return;
    const size_t full = static_cast<size_t>(shuffle_->buffer_size_) * row_bytes_[c];
    store_[c].resize(std::min(full, std::max(need, 2 * store_[c].size())));
  }

  // Copies the next input row into slot size_; *got false at the input's end.
  Status NextRow(bool* got) {
    while (index_ >= batch_rows_) {
      bool end = false;
      TW_RETURN_IF_ERROR(input_->GetNext(&batch_, &end));
      if (end) {
        *got = false;
        return Status::OK();
      }
      TW_RETURN_IF_ERROR(CheckRows(batch_, "an input batch"));
      index_ = 0;
      batch_rows_ = batch_[0].dim(0);
    }
    for (size_t c = 0; c < dtypes_.size(); ++c) {
      const size_t n = row_bytes_[c];
      Reserve(c, static_cast<size_t>(size_) + 1);
      std::memcpy(store_[c].data() + static_cast<size_t>(size_) * n,
                  static_cast<const char*>(batch_[c].raw_data()) + static_cast<size_t>(index_) * n, n);
    }
    ++index_;
    ++size_;
    *got = true;
    return Status::OK();
  }

  const std::string name_ = "ShuffleBatch";
  std::shared_ptr<const ShuffleDataset> shuffle_;
  std::shared_ptr<PipelineContext> ctx_;
  const int64_t batch_size_;
  const bool drop_remainder_;
  const std::vector<DataType> dtypes_;
  const std::vector<TensorShape> rows_shape_;
  std::vector<size_t> row_bytes_;
  std::vector<std::vector<char>> store_;  // per component: up to buffer_size rows (Reserve)
  int64_t size_ = 0;                       // rows in the buffer
  Element batch_;                          // the input batch being unbatched
  int64_t index_ = 0, batch_rows_ = 0;     // its next row, its rows
  std::mt19937_64 rng_;
  uint64_t iteration_;
  bool input_ended_ = false;
  int64_t handed_out_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<IteratorBase>> MakeShuffleBatchIterator(const DatasetBase& shuffle, int64_t batch_size,
                                                                 bool drop_remainder,
                                                                 const std::shared_ptr<PipelineContext>& ctx) {
  const auto* s = dynamic_cast<const ShuffleDataset*>(&shuffle);
  const DatasetBase* batches = s != nullptr ? UnbatchInput(*s->input()) : nullptr;
  if (batches == nullptr) return std::unique_ptr<IteratorBase>();
  const ElementSpec& spec = batches->spec();
  std::vector<TensorShape> rows;
  for (size_t c = 0; c < spec.size(); ++c) {
    const PartialShape& shape = spec.shapes[c];
    if (spec.dtypes[c] == kString || !shape.known_rank() || shape.rank() < 1) return std::unique_ptr<IteratorBase>();
    std::vector<int64_t> dims(shape.dims().begin() + 1, shape.dims().end());
    for (int64_t d : dims) {
      if (d < 0) return std::unique_ptr<IteratorBase>();
    }
    rows.emplace_back(std::move(dims));
  }
  // The fused iterator makes each batch whole up front and may hold
  // buffer_size rows: past these sizes (or where they overflow) the unfused
  // path runs, whose memory follows the elements that come.
  constexpr uint64_t kMaxFusedBatchBytes = uint64_t{1} << 30;
  for (size_t c = 0; c < rows.size(); ++c) {
    uint64_t row = 0, batch = 0, buffer = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(rows[c].num_elements()), DataTypeSize(spec.dtypes[c]), &row) ||
        __builtin_mul_overflow(row, static_cast<uint64_t>(batch_size), &batch) || batch > kMaxFusedBatchBytes ||
        __builtin_mul_overflow(row, static_cast<uint64_t>(s->buffer_size_), &buffer) ||
        buffer > static_cast<uint64_t>(std::numeric_limits<std::ptrdiff_t>::max())) {
      return std::unique_ptr<IteratorBase>();
    }
  }
  const uint64_t iteration = !s->options_.reshuffle_each_iteration ? 0
                             : ctx->probe                         ? s->iterations_.load()
                                                                  : s->iterations_.fetch_add(1);
  auto it = std::make_unique<ShuffleBatchIter>(*s, ctx, batch_size, drop_remainder, spec.dtypes, std::move(rows),
                                               iteration);
  TW_ASSIGN_OR_RETURN(it->input_, batches->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(std::move(it));
}

StatusOr<DatasetPtr> MakeShuffleDataset(DatasetPtr input, int64_t buffer_size, const ShuffleOptions& options) {
  if (buffer_size < 1) return errors::InvalidArgument("buffer_size must be greater than zero, got ", buffer_size);
  return DatasetPtr(std::make_shared<ShuffleDataset>(std::move(input), buffer_size, options));
}

}  // namespace tw::data
