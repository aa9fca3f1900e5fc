// Cache: the first iteration that reads its input to the end records every
// element; later iterations replay the record instead of reading the input.
// In memory, the record is shared by the dataset's iterators; in a file,
// elements are written as TFRecord records (element_util.h's encoding) to
// "<filename>.tmp-<pid>-<n>" and renamed to <filename> once complete, so an
// interrupted iteration leaves no partial cache behind, and a later run
// (another process) replays a complete file without reading the input.
// An input element's error is not recorded (the replays skip it, as
// tf.data's do).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/element_util.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

class CacheDataset final : public UnaryDataset {
 public:
  CacheDataset(DatasetPtr input, std::string filename)
      : UnaryDataset("Cache", input->spec(), input), filename_(std::move(filename)) {}
  int64_t Cardinality() const override { return input()->Cardinality(); }

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    std::shared_ptr<const std::vector<Element>> memory;
    {
      std::lock_guard<std::mutex> lock(mu_);
      memory = memory_;
    }
    if (memory) {
      it->replay_ = std::move(memory);
    } else if (!filename_.empty() && std::filesystem::exists(filename_)) {
      TW_ASSIGN_OR_RETURN(it->file_, RecordReader::Open(filename_));
    } else {
      TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
      if (!filename_.empty()) {
        it->temp_ = filename_ + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(temps_.fetch_add(1));
        TW_ASSIGN_OR_RETURN(it->writer_, RecordWriter::Open(it->temp_));
      }
    }
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<CacheDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    ~Iter() override {
      if (writer_) {
        writer_->Close().IgnoreError();
        std::remove(temp_.c_str());  // an iteration that did not finish caches nothing
      }
    }

    Status GetNext(Element* out, bool* end) override {
      if (replay_) {
        *end = index_ >= static_cast<int64_t>(replay_->size());
        if (!*end) *out = (*replay_)[static_cast<size_t>(index_++)];
        return Status::OK();
      }
      if (file_) {
        std::string_view record;
        Status s = file_->ReadRecordView(&record);
        if (s.code() == Code::kOutOfRange) {
          *end = true;
          return Status::OK();
        }
        // A cache file that fails to read is read no further: its error,
        // then the end.
        if (!s.ok()) return EndReplayAfter(s);
        auto e = DecodeElement(record);
        if (!e.ok()) return EndReplayAfter(e.status().WithContext(dataset().filename_));
        *out = std::move(e).value();
        ++index_;
        *end = false;
        return Status::OK();
      }
      if (finished_) {  // asked again after its end (Batch's partial last batch does)
        *end = true;
        return Status::OK();
      }
      TW_RETURN_IF_ERROR(input_->GetNext(out, end));
      if (*end) return Finish();
      ++index_;
      if (writer_) {
        encoded_.clear();
        EncodeElement(*out, &encoded_);
        if (Status s = writer_->WriteRecord(encoded_); !s.ok()) {
          // Said once; the iteration goes on reading the input, and caches
          // nothing (a later one reads the input again).
          writer_->Close().IgnoreError();
          writer_.reset();
          std::remove(temp_.c_str());
          return s.WithContext("Cache: writing " + temp_);
        }
      } else {
        recorded_.push_back(*out);
      }
      return Status::OK();
    }

    Status Save(StateWriter& w) const override {
      if (writer_ || (!replay_ && !file_ && dataset().filename_.empty())) {
        return errors::Unimplemented("Cache: an iterator still filling its cache cannot be saved");
      }
      w.WriteInt("index", index_);
      return Status::OK();
    }
    Status Restore(const StateReader& r) override {
      int64_t index = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("index", &index));
      if (replay_ && index <= static_cast<int64_t>(replay_->size())) {
        index_ = index;
        return Status::OK();
      }
      if (!file_) {
        return errors::FailedPrecondition("Cache: the saved position replays a cache that this process does not hold");
      }
      std::string_view record;
      for (index_ = 0; index_ < index; ++index_) TW_RETURN_IF_ERROR(file_->ReadRecordView(&record));
      return Status::OK();
    }

    std::shared_ptr<const std::vector<Element>> replay_;
    std::unique_ptr<RecordReader> file_;
    std::unique_ptr<IteratorBase> input_;
    std::unique_ptr<RecordWriter> writer_;
    std::string temp_;

   private:
    Status EndReplayAfter(const Status& error) {
      file_.reset();
      replay_ = std::make_shared<const std::vector<Element>>();  // the end, from now on
      index_ = 0;
      return error;
    }

    Status Finish() {
      const CacheDataset& d = dataset();
      finished_ = true;
      if (writer_) {
        Status s = writer_->Close();
        writer_.reset();
        if (s.ok() && std::rename(temp_.c_str(), d.filename_.c_str()) != 0) {
          s = errors::Internal("Cache: cannot rename ", temp_, " to ", d.filename_);
        }
        if (!s.ok()) std::remove(temp_.c_str());
        return s;
      }
      if (!d.filename_.empty()) return Status::OK();  // its writer failed to open: nothing recorded
      std::lock_guard<std::mutex> lock(d.mu_);
      if (!d.memory_) d.memory_ = std::make_shared<const std::vector<Element>>(std::move(recorded_));
      recorded_.clear();
      return Status::OK();
    }

    std::vector<Element> recorded_;
    std::string encoded_;
    int64_t index_ = 0;
    bool finished_ = false;  // the input ended and the record was kept
  };

  std::string filename_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::vector<Element>> memory_;  // guarded by mu_: the complete record
  mutable std::atomic<int64_t> temps_{0};
};

}  // namespace

StatusOr<DatasetPtr> MakeCacheDataset(DatasetPtr input, const std::string& filename) {
  return DatasetPtr(std::make_shared<CacheDataset>(std::move(input), filename));
}

}  // namespace tw::data
