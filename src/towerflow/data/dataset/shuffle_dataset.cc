// Shuffle: a buffer of up to buffer_size elements, filled from the input;
// each GetNext hands out a uniformly chosen one and refills its place with
// the next input element (tf.data's algorithm). Each iteration draws from a
// generator seeded by the seed and the iteration's number, so that Repeat's
// epochs differ (reshuffle_each_iteration) yet a seeded run is the same every
// time. The position saves the buffer itself, the generator's state, the
// seed and the iteration's number: a restored pipeline draws the later
// iterations' orders of the run that saved it, whatever seed it was built with.
#include <atomic>
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
  int64_t Cardinality() const override { return input()->Cardinality(); }

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    const uint64_t iteration = options_.reshuffle_each_iteration ? iterations_.fetch_add(1) : 0;
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
      std::ostringstream rng;
      rng << rng_;
      w.WriteString("rng", rng.str());
      w.WriteInt("iteration", static_cast<int64_t>(iteration_));
      w.WriteInt("seed", static_cast<int64_t>(dataset().seed()));
      w.WriteInt("input_ended", input_ended_ ? 1 : 0);
      w.WriteInt("buffered", static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) w.WriteElement("buffer_" + std::to_string(i), buffer_[i]);
      StateWriter child = w.Child(input_->name());
      return input_->Save(child);
    }
    Status Restore(const StateReader& r) override {
      std::string rng;
      int64_t ended = 0, buffered = 0;
      TW_RETURN_IF_ERROR(r.ReadString("rng", &rng));
      int64_t iteration = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("iteration", &iteration));
      // Later iterations (Repeat's next epochs) draw the orders they would have.
      if (dataset().options_.reshuffle_each_iteration) dataset().iterations_.store(static_cast<uint64_t>(iteration) + 1);
      int64_t seed = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("seed", &seed));
      dataset().seed_.store(static_cast<uint64_t>(seed));
      std::istringstream in(rng);
      in >> rng_;
      if (in.fail()) return errors::DataLoss("Shuffle: the saved generator state does not parse");
      TW_RETURN_IF_ERROR(r.ReadInt("input_ended", &ended));
      TW_RETURN_IF_ERROR(r.ReadInt("buffered", &buffered));
      if (buffered < 0 || buffered > dataset().buffer_size_) {
        return errors::DataLoss("Shuffle: the saved buffer holds ", buffered, " elements, more than buffer_size ",
                                dataset().buffer_size_);
      }
      input_ended_ = ended != 0;
      buffer_.assign(static_cast<size_t>(buffered), Element());
      for (int64_t i = 0; i < buffered; ++i) {
        TW_RETURN_IF_ERROR(r.ReadElement("buffer_" + std::to_string(i), &buffer_[static_cast<size_t>(i)]));
      }
      return input_->Restore(r.Child(input_->name()));
    }

    std::unique_ptr<IteratorBase> input_;
    uint64_t iteration_ = 0;

   private:
    std::mt19937_64 rng_;
    std::vector<Element> buffer_;
    bool input_ended_ = false;
    int64_t handed_out_ = 0;
  };

  int64_t buffer_size_;
  ShuffleOptions options_;
  // Mutable for Restore, which takes the saving run's seed.
  mutable std::atomic<uint64_t> seed_;
  mutable std::atomic<uint64_t> iterations_{0};
};

}  // namespace

StatusOr<DatasetPtr> MakeShuffleDataset(DatasetPtr input, int64_t buffer_size, const ShuffleOptions& options) {
  if (buffer_size < 1) return errors::InvalidArgument("buffer_size must be greater than zero, got ", buffer_size);
  return DatasetPtr(std::make_shared<ShuffleDataset>(std::move(input), buffer_size, options));
}

}  // namespace tw::data
