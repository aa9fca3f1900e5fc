// Readers as session resources (TF1's ReaderBase and TFRecordReader): a reader
// turns a stream of work units (file names, taken from a queue) into records.
//
// ReaderResource holds the reader's position: the current file, if any, and
// what the subclass keeps to read it. ReaderRead (reader_ops.cc) calls Read,
// which dequeues the next file name when the current file is done. The
// TFRecordReader op (tfrecord_reader_op.cc) creates a TFRecordReaderResource in
// the session's ResourceMgr and outputs its name as a Ref(string) handle, as the
// queue ops do. Thread-safe: Read holds the reader's mutex for the whole read
// (dequeue included), so concurrent reads of one reader are serialized and each
// record is produced exactly once; use several readers on one filename queue for
// parallel reading, as TF's docs advise.
#ifndef TOWERFLOW_DATA_TFRECORD_READER_OP_H_
#define TOWERFLOW_DATA_TFRECORD_READER_OP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/data/record_reader.h"
#include "towerflow/data/register.h"
#include "towerflow/device/resource_mgr.h"

namespace tw {

class ReaderResource : public ResourceBase {
 public:
  // Takes the next work unit: OK, or the queue's error (OutOfRange once the
  // queue is closed and empty, Cancelled when the session closes).
  using NextWork = std::function<Status(std::string* work)>;

  // The next record and its key. When no file is open, or the open one is done,
  // takes the next from `next_work` (empty files are passed over). Errors: those
  // of `next_work`, unchanged; a file that cannot be opened (the file is dropped,
  // so the next Read goes on with the next file); a record that cannot be read,
  // such as DataLoss naming the file and offset (the file stays open and the
  // next Read retries the same record, as TF's reader does).
  Status Read(const NextWork& next_work, std::string* key, std::string* value);
  // Up to `n` records, in order, under one lock (TF's ReaderReadUpTo), moving
  // on to the next work unit as each ends. A batch stops short before an
  // error: the records read so far are returned (OK), and the error is
  // returned by the next Read or ReadUpTo (nothing is lost, nothing is
  // skipped silently). An error before the first record is returned at once,
  // as Read returns it. REQUIRES: n >= 1.
  Status ReadUpTo(const NextWork& next_work, int64_t n, std::vector<std::string>* keys,
                  std::vector<std::string>* values);

  int64_t records_produced() const { return records_produced_.load(); }
  int64_t work_units_completed() const { return work_units_completed_.load(); }

 protected:
  // Subclass hooks, called with the reader's mutex held. OnWorkStarted opens a
  // work unit; ReadRecord returns OK with a record, OutOfRange at its clean end,
  // or an error; OnWorkFinished releases it.
  virtual Status OnWorkStarted(const std::string& work) = 0;
  virtual Status ReadRecord(const std::string& work, std::string* key, std::string* value) = 0;
  virtual void OnWorkFinished() = 0;

 private:
  // Read's body. REQUIRES: mu_ held.
  Status ReadLocked(const NextWork& next_work, std::string* key, std::string* value);

  std::mutex mu_;
  bool has_work_ = false;  // guarded by mu_
  std::string work_;       // guarded by mu_
  Status deferred_;        // guarded by mu_; the error a ReadUpTo stopped before
  std::atomic<int64_t> records_produced_{0};
  std::atomic<int64_t> work_units_completed_{0};
};

// Reads TFRecord files (plain, ZLIB or GZIP). Keys are "<file>:<record index>",
// the index counting the records this reader returned from that file from 0.
class TFRecordReaderResource final : public ReaderResource {
 public:
  // Keeps the records whose index in their file is shard_index modulo
  // shard_count (io_ops.h's TFRecordReaderOptions).
  TFRecordReaderResource(std::string name, RecordReaderOptions options, int64_t shard_count = 1,
                         int64_t shard_index = 0)
      : name_(std::move(name)), options_(options), shard_count_(shard_count), shard_index_(shard_index) {}

  // With skip_corrupt: corrupt records skipped so far, over every file.
  int64_t skipped_records() const { return skipped_records_.load(); }
  std::string DebugString() const override;

 private:
  Status OnWorkStarted(const std::string& work) override;
  Status ReadRecord(const std::string& work, std::string* key, std::string* value) override;
  void OnWorkFinished() override;

  const std::string name_;
  const RecordReaderOptions options_;
  const int64_t shard_count_, shard_index_;
  // Guarded by the base class's mutex (only touched from the hooks).
  std::unique_ptr<RecordReader> reader_;
  int64_t skipped_seen_ = 0;  // reader_->skipped_records() already counted
  int64_t index_in_file_ = 0;  // of the next record of the current file
  std::atomic<int64_t> skipped_records_{0};
};

// The TFRecordReader op: schema, CPU kernel, no-gradient mark.
void RegisterTFRecordReaderOp(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);

}  // namespace tw

#endif  // TOWERFLOW_DATA_TFRECORD_READER_OP_H_
