// Prefetch: one thread of the pipeline produces elements ahead of the consumer
// (RunAhead with the identity).
#include "towerflow/core/device_spec.h"
#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/run_ahead.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

// Autotune's starting and largest buffers.
constexpr int64_t kTunedStart = 2;
constexpr int64_t kTunedMax = 64;

class PrefetchDataset : public UnaryDataset {
 public:
  PrefetchDataset(DatasetPtr input, int64_t buffer_size, std::string name = "Prefetch")
      : UnaryDataset(std::move(name), input->spec(), input), buffer_size_(buffer_size) {}
  int64_t Cardinality() const override { return input()->Cardinality(); }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    const bool tune = buffer_size_ == kAutotune;
    it->run_ahead_ = std::make_unique<RunAhead>(ctx, it->input_.get(), nullptr,
                                                RunAhead::Options{.stage = "Prefetch",
                                                                  .workers = 1,
                                                                  .buffer = tune ? kTunedStart : buffer_size_,
                                                                  .tune_buffer = tune,
                                                                  .max_buffer = tune ? kTunedMax : buffer_size_});
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<PrefetchDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override { return run_ahead_->GetNext(out, end); }
    Status Save(StateWriter& w) const override { return run_ahead_->Save(w); }
    Status Restore(const StateReader& r) override { return run_ahead_->Restore(r); }

    std::unique_ptr<IteratorBase> input_;  // outlives run_ahead_'s worker
    std::unique_ptr<RunAhead> run_ahead_;
  };

 protected:
  int64_t buffer_size_;
};

// A Prefetch that names the device graph iterators copy its elements to
// (iterator_resource.cc does the copying).
class PrefetchToDeviceDataset final : public PrefetchDataset {
 public:
  PrefetchToDeviceDataset(DatasetPtr input, std::string device, int64_t buffer_size)
      : PrefetchDataset(std::move(input), buffer_size, "PrefetchToDevice"), device_(std::move(device)) {}
  std::string DebugString() const override { return "PrefetchToDevice[" + device_ + "](" + input()->DebugString() + ")"; }
  const std::string& device() const { return device_; }
  int64_t buffer_size() const { return buffer_size_; }

 private:
  std::string device_;
};

}  // namespace

std::string PrefetchDevice(const DatasetBase& d) {
  const auto* p = dynamic_cast<const PrefetchToDeviceDataset*>(&d);
  return p != nullptr ? p->device() : std::string();
}

int64_t PrefetchDeviceBuffer(const DatasetBase& d) {
  const auto* p = dynamic_cast<const PrefetchToDeviceDataset*>(&d);
  return p != nullptr ? p->buffer_size() : 0;
}

StatusOr<DatasetPtr> MakePrefetchToDeviceDataset(DatasetPtr input, const std::string& device, int64_t buffer_size) {
  if (buffer_size < 1) return errors::InvalidArgument("buffer_size must be >= 1, got ", buffer_size);
  auto spec = DeviceSpec::Parse(device);
  if (!spec.ok() || !spec->has_type() || !spec->has_id()) {
    return errors::InvalidArgument("'", device, "' does not name one device (\"/gpu:0\", \"/device:GPU:1\")");
  }
  return DatasetPtr(std::make_shared<PrefetchToDeviceDataset>(std::move(input), spec->ShortString(), buffer_size));
}

StatusOr<DatasetPtr> MakePrefetchDataset(DatasetPtr input, int64_t buffer_size) {
  if (buffer_size < 0 && buffer_size != kAutotune) {
    return errors::InvalidArgument("buffer_size must be >= 0 or kAutotune, got ", buffer_size);
  }
  if (buffer_size == 0) return input;  // as tf.data: no prefetching
  return DatasetPtr(std::make_shared<PrefetchDataset>(std::move(input), buffer_size));
}

}  // namespace tw::data
