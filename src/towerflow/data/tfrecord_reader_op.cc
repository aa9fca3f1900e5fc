// ReaderResource, TFRecordReaderResource, the TFRecordReader op (schema, CPU
// kernel) and the reader builders of io_ops.h (TFRecordReader, Glob).
#include "towerflow/data/tfrecord_reader_op.h"

#include <glob.h>

#include <algorithm>
#include <utility>

#include "towerflow/data/io_ops.h"
#include "towerflow/data/queue_ops.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {

// compression_type of a reader that detects each file's compression (towerflow's
// own value; TF's are "", "ZLIB" and "GZIP").
constexpr char kDetectCompression[] = "AUTO";

Status ReaderResource::Read(const NextWork& next_work, std::string* key, std::string* value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!deferred_.ok()) return std::exchange(deferred_, Status::OK());
  return ReadLocked(next_work, key, value);
}

Status ReaderResource::ReadUpTo(const NextWork& next_work, int64_t n, std::vector<std::string>* keys,
                                std::vector<std::string>* values) {
  keys->clear();
  values->clear();
  std::lock_guard<std::mutex> lock(mu_);
  if (!deferred_.ok()) return std::exchange(deferred_, Status::OK());
  while (static_cast<int64_t>(keys->size()) < n) {
    std::string key, value;
    Status s = ReadLocked(next_work, &key, &value);
    if (!s.ok()) {
      if (keys->empty()) return s;
      deferred_ = std::move(s);
      break;
    }
    keys->push_back(std::move(key));
    values->push_back(std::move(value));
  }
  return Status::OK();
}

Status ReaderResource::ReadLocked(const NextWork& next_work, std::string* key, std::string* value) {
  for (;;) {
    if (!has_work_) {
      std::string work;
      TW_RETURN_IF_ERROR(next_work(&work));
      if (Status s = OnWorkStarted(work); !s.ok()) {
        // Drop the file: the next Read moves on to the next one.
        OnWorkFinished();
        return s;
      }
      work_ = std::move(work);
      has_work_ = true;
    }
    Status s = ReadRecord(work_, key, value);
    if (s.ok()) {
      records_produced_.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    if (!errors::IsOutOfRange(s)) return s;
    OnWorkFinished();
    has_work_ = false;
    work_units_completed_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::string TFRecordReaderResource::DebugString() const {
  return StrCat("TFRecordReader '", name_, "' (compression \"",
                options_.detect_compression ? kDetectCompression : CompressionName(options_.compression), "\")");
}

Status TFRecordReaderResource::OnWorkStarted(const std::string& work) {
  TW_ASSIGN_OR_RETURN(reader_, RecordReader::Open(work, options_));
  skipped_seen_ = 0;
  index_in_file_ = 0;
  return Status::OK();
}

Status TFRecordReaderResource::ReadRecord(const std::string& work, std::string* key, std::string* value) {
  for (;;) {
    Status s = reader_->ReadRecord(value);
    if (const int64_t skipped = reader_->skipped_records(); skipped > skipped_seen_) {
      skipped_records_.fetch_add(skipped - skipped_seen_, std::memory_order_relaxed);
      skipped_seen_ = skipped;
    }
    TW_RETURN_IF_ERROR(s);
    if (index_in_file_++ % shard_count_ == shard_index_) break;  // another shard's otherwise
  }
  // TF's key: the file and the byte offset where the record starts (in the
  // uncompressed stream), which DataLoss and parse errors can then point at.
  *key = StrCat(work, ":", reader_->offset() - kRecordHeaderSize - value->size() - kRecordFooterSize);
  return Status::OK();
}

void TFRecordReaderResource::OnWorkFinished() { reader_.reset(); }

namespace {

// Creates the reader resource on first run and outputs a reference to a string
// scalar holding its name (the queue ops' handle convention).
class TFRecordReaderOp : public OpKernel {
 public:
  explicit TFRecordReaderOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string container, shared_name, compression;
    TW_OP_REQUIRES_OK(c, c->GetAttr("container", &container));
    TW_OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name));
    TW_OP_REQUIRES_OK(c, c->GetAttr("compression_type", &compression));
    TW_OP_REQUIRES_OK(c, c->GetAttr("skip_corrupt", &options_.skip_corrupt));
    TW_OP_REQUIRES_OK(c, c->GetAttr("inflate_ahead", &options_.inflate_ahead));
    TW_OP_REQUIRES_OK(c, c->GetAttr("shard_count", &shard_count_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("shard_index", &shard_index_));
    if (shard_count_ < 1 || shard_index_ < 0 || shard_index_ >= shard_count_) {
      TW_OP_REQUIRES_OK(c, errors::InvalidArgument("TFRecordReader '", c->node().name(), "': shard_index ",
                                                   shard_index_, " of shard_count ", shard_count_));
    }
    if (compression == kDetectCompression) {
      options_.detect_compression = true;
    } else {
      auto parsed = ParseCompression(compression);
      TW_OP_REQUIRES_OK(c, parsed.status());
      options_.compression = *parsed;
    }
    key_ = shared_name.empty() ? c->node().name() : shared_name;
    if (!container.empty()) key_ = container + "/" + key_;
    handle_ = Tensor::String(key_);
  }

  void Compute(OpKernelContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!reader_) {
        auto found = ctx->resource_mgr()->LookupOrCreate<TFRecordReaderResource>(
            key_, [this]() -> StatusOr<std::shared_ptr<TFRecordReaderResource>> {
              return std::make_shared<TFRecordReaderResource>(key_, options_, shard_count_, shard_index_);
            });
        TW_OP_REQUIRES_OK(ctx, found.status());
        reader_ = *found;
      }
    }
    // handle_ never changes after construction; the mutex is what refs carry.
    ctx->set_output_ref(0, &handle_mu_, &handle_);
  }
  bool IsExpensive() const override { return false; }

 private:
  RecordReaderOptions options_;
  int64_t shard_count_ = 1, shard_index_ = 0;
  std::string key_;
  std::mutex handle_mu_;
  Tensor handle_;
  std::mutex mu_;
  std::shared_ptr<TFRecordReaderResource> reader_;  // guarded by mu_; keeps it alive with the kernel
};

}  // namespace

void RegisterTFRecordReaderOp(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(OpDefBuilder("TFRecordReader")
                   .RefOutput("reader_handle", "string")
                   .Attr("container", std::string())
                   .Attr("shared_name", std::string())
                   .Attr("compression_type", std::string())
                   .Attr("skip_corrupt", false)
                   .Attr("inflate_ahead", true)
                   .Attr("shard_count", int64_t{1})
                   .Attr("shard_index", int64_t{0})
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Doc("A reader that outputs the records of TFRecord files.")
                   .Build()).Check();
  kernels.RegisterUntyped<TFRecordReaderOp>("TFRecordReader", kDeviceCpu);
  grads.RegisterNoGradient("TFRecordReader");
}

namespace io {

// Reads are built in the reader's scope, without the op name meant for the reader.
TFRecordReader::TFRecordReader(const Scope& scope, const TFRecordReaderOptions& options)
    : scope_(scope.WithOpName("")) {
  EnsureDataRegistered();
  if (options.shard_count < 1 || options.shard_index < 0 || options.shard_index >= options.shard_count) {
    scope.UpdateStatus(errors::InvalidArgument("TFRecordReader: shard_index ", options.shard_index, " of shard_count ",
                                               options.shard_count, " (0 <= shard_index < shard_count)"));
    return;
  }
  handle_ = NodeBuilder(scope, "TFRecordReader")
                .Attr("container", options.container)
                .Attr("shared_name", options.shared_name)
                .Attr("compression_type", options.compression ? std::string(CompressionName(*options.compression))
                                                              : std::string(kDetectCompression))
                .Attr("skip_corrupt", options.skip_corrupt)
                .Attr("inflate_ahead", options.inflate_ahead)
                .Attr("shard_count", options.shard_count)
                .Attr("shard_index", options.shard_index)
                .Finalize();
}

TFRecordReader::ReadOutputs TFRecordReader::Read(const Output& queue) const {
  Node* node = NodeBuilder(scope_, "ReaderRead").Input(handle_).Input(queue).Finalize();
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1)};
}

TFRecordReader::ReadOutputs TFRecordReader::Read(const Queue& queue) const {
  if (queue.valid() && queue.dtypes() != std::vector<DataType>{kString}) {
    scope_.UpdateStatus(errors::InvalidArgument("ReaderRead '", scope_.Prefixed("ReaderRead"),
                                                "' takes file names from a queue of strings, but ", queue.op(), " '",
                                                queue.name(), "' holds ", queue.num_components(), " component(s)"));
    return {};
  }
  return Read(queue.handle());
}

TFRecordReader::ReadOutputs TFRecordReader::ReadUpTo(const Output& queue, int64_t num_records) const {
  if (num_records < 1) {
    scope_.UpdateStatus(errors::InvalidArgument("ReaderReadUpTo '", scope_.Prefixed("ReaderReadUpTo"),
                                                "': num_records must be at least 1, got ", num_records));
    return {};
  }
  Tensor n = Tensor::Scalar<int64_t>(num_records);
  Output count = Const(scope_.WithOpName("ReaderReadUpTo/num_records"), n);
  Node* node = NodeBuilder(scope_, "ReaderReadUpTo").Input(handle_).Input(queue).Input(count).Finalize();
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1)};
}

TFRecordReader::ReadOutputs TFRecordReader::ReadUpTo(const Queue& queue, int64_t num_records) const {
  if (queue.valid() && queue.dtypes() != std::vector<DataType>{kString}) {
    scope_.UpdateStatus(errors::InvalidArgument("ReaderReadUpTo '", scope_.Prefixed("ReaderReadUpTo"),
                                                "' takes file names from a queue of strings, but ", queue.op(), " '",
                                                queue.name(), "' holds ", queue.num_components(), " component(s)"));
    return {};
  }
  return ReadUpTo(queue.handle(), num_records);
}

FileList Glob(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    out.reserve(g.gl_pathc);
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  // Byte order, whatever the locale's collation.
  std::sort(out.begin(), out.end());
  return FileList(pattern, std::move(out));
}

}  // namespace io
}  // namespace tw
