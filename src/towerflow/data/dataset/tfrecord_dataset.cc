// TFRecord: the records of a list of files, file after file, as string
// scalars. Position: the file's index and the records read from it (a
// restore reopens the file and skips them, checking their CRCs again).
// Under AutoShard, the shard's files, or of every file the records whose
// index within the file is the shard's (the others are read and dropped).
// A file that fails to open or read is its error, once; the next file follows.
#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/record_reader.h"

namespace tw::data {
namespace {

class TFRecordDataset final : public DatasetBase {
 public:
  TFRecordDataset(std::vector<std::string> files, TFRecordOptions options, RecordReaderOptions reader)
      : DatasetBase("TFRecord", options.keys ? ElementSpec{{kString, kString}, {TensorShape{}, TensorShape{}}}
                                             : ElementSpec{{kString}, {PartialShape(TensorShape{})}}),
        files_(std::move(files)),
        options_(std::move(options)),
        reader_(reader) {}

  StatusOr<int64_t> SplitUnits() const override { return static_cast<int64_t>(files_.size()); }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    const PipelineContext::Split& split = ctx->split;
    if (ctx->SplitsSource(*this)) {
      for (size_t i = 0; i < files_.size(); ++i) {
        if (static_cast<int64_t>(i) % split.count == split.index) it->files_.push_back(files_[i]);
      }
    } else {
      it->files_ = files_;
      if (split.records) {
        it->record_count_ = split.count;
        it->record_index_ = split.index;
        ctx->records_split.store(true);
      }
    }
    return std::unique_ptr<IteratorBase>(std::move(it));
  }
  std::string DebugString() const override {
    return files_.size() == 1 ? "TFRecord(" + files_[0] + ")" : "TFRecord(" + std::to_string(files_.size()) + " files)";
  }

 private:
  class Iter final : public DatasetIterator<TFRecordDataset> {
   public:
    using DatasetIterator::DatasetIterator;

    Status GetNext(Element* out, bool* end) override {
      const TFRecordDataset& d = dataset();
      while (file_ < static_cast<int64_t>(files_.size())) {
        if (ctx()->cancelled.load(std::memory_order_relaxed)) return CancelledError();
        if (reader_ == nullptr) {
          // A file that cannot be opened is this element's error; the next
          // GetNext goes on with the next file.
          if (Status s = Open(0); !s.ok()) return NextFileAfter(s);
        }
        std::string_view record;
        const uint64_t offset = reader_->offset();
        Status s = reader_->ReadRecordView(&record);
        if (s.ok() && (reader_->records_read() - 1) % record_count_ != record_index_) continue;
        if (s.ok()) {
          const bool keys = d.options_.keys;
          const size_t n = keys ? 2 : 1;
          // One copy of the record, into the tensor; into the caller's own
          // string scalars when it hands them back (Batch does), so that a
          // record costs no allocation but its bytes'.
          bool reuse = out->size() == n;
          for (size_t i = 0; reuse && i < n; ++i) {
            const Tensor& t = (*out)[i];
            reuse = t.dtype() == kString && t.rank() == 0 && t.buffer().use_count() == 1;
          }
          if (!reuse) {
            out->clear();
            for (size_t i = 0; i < n; ++i) out->emplace_back(kString, TensorShape{});
          }
          if (keys) {
            std::string& key = (*out)[0].data<std::string>()[0];
            key.assign(files_[static_cast<size_t>(file_)]).append(":").append(std::to_string(offset));
          }
          (*out)[n - 1].data<std::string>()[0].assign(record);
          *end = false;
          return Status::OK();
        }
        if (s.code() != Code::kOutOfRange) return NextFileAfter(s);
        reader_.reset();
        ++file_;
      }
      *end = true;
      return Status::OK();
    }

    Status Save(StateWriter& w) const override {
      w.WriteInt("file", file_);
      w.WriteInt("records", reader_ ? reader_->records_read() : 0);
      return Status::OK();
    }
    Status Restore(const StateReader& r) override {
      int64_t records = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("file", &file_));
      TW_RETURN_IF_ERROR(r.ReadInt("records", &records));
      reader_.reset();
      if (file_ < 0 || file_ > static_cast<int64_t>(files_.size())) {
        return errors::InvalidArgument("iterator state names file ", file_, " of a dataset of ", files_.size(),
                                       " files");
      }
      if (file_ < static_cast<int64_t>(files_.size()) && records > 0) return Open(records);
      return Status::OK();
    }

   private:
    friend class TFRecordDataset;
    // A file that failed (corrupt, truncated, unreadable) is read no further,
    // as tf.data does after DataLoss: its error is returned and the next
    // GetNext starts the next file (where tf.data retries a file it cannot
    // open forever).
    Status NextFileAfter(const Status& error) {
      reader_.reset();
      ++file_;
      return error;
    }
    // Opens file_ and reads past its first `skip` records.
    Status Open(int64_t skip) {
      const std::string& path = files_[static_cast<size_t>(file_)];
      TW_ASSIGN_OR_RETURN(reader_, RecordReader::Open(path, dataset().reader_));
      std::string_view record;
      for (int64_t i = 0; i < skip; ++i) {
        Status s = reader_->ReadRecordView(&record);
        if (s.code() == Code::kOutOfRange) {
          return errors::DataLoss(path, ": the iterator state is at record ", skip, " but the file has ", i,
                                  " (was it rewritten?)");
        }
        TW_RETURN_IF_ERROR(s);
      }
      return Status::OK();
    }

    std::vector<std::string> files_;  // the dataset's, or this shard's
    // Of each file, the records whose index is record_index_ modulo record_count_.
    int64_t record_count_ = 1;
    int64_t record_index_ = 0;
    int64_t file_ = 0;
    std::unique_ptr<RecordReader> reader_;
  };

  std::vector<std::string> files_;
  TFRecordOptions options_;
  RecordReaderOptions reader_;
};

}  // namespace

StatusOr<std::shared_ptr<const DatasetBase>> MakeTFRecordDataset(std::vector<std::string> files,
                                                                 const TFRecordOptions& options) {
  if (files.empty()) return errors::InvalidArgument("an empty list of files");
  for (const std::string& f : files) {
    if (f.empty()) return errors::InvalidArgument("an empty file name in the list of files");
  }
  if (options.buffer_size < 1) return errors::InvalidArgument("buffer_size must be >= 1, got ", options.buffer_size);
  RecordReaderOptions reader;
  if (options.compression == "auto") {
    reader.detect_compression = true;
  } else {
    TW_ASSIGN_OR_RETURN(reader.compression, ParseCompression(options.compression));
  }
  reader.buffer_size = static_cast<size_t>(options.buffer_size);
  reader.skip_corrupt = options.skip_corrupt;
  return std::shared_ptr<const DatasetBase>(
      std::make_shared<TFRecordDataset>(std::move(files), options, reader));
}

}  // namespace tw::data
