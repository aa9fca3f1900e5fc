// The implementation side of data/dataset.h: DatasetBase (one node of a
// dataset's chain: immutable, shared by every Dataset value that holds it)
// and IteratorBase (one pass over it), and what one iterator's whole pipeline
// shares (PipelineContext: the cancellation flag that stops its threads, the
// autotune report).
//
// Iterators pull: GetNext asks the input iterator for what it needs. An
// iterator is used by one thread at a time (its consumer); iterators that
// run ahead (parallel Map, Prefetch, parallel Interleave) own threads that
// they stop and join in their destructor, waking them through the context's
// cancellation. Internal to the data module.
#ifndef TOWERFLOW_DATA_DATASET_DATASET_BASE_H_
#define TOWERFLOW_DATA_DATASET_DATASET_BASE_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/data/dataset.h"

namespace tw::data {

// Shared by every iterator of one pipeline (one Dataset::MakeIterator).
struct PipelineContext {
  // Set when the pipeline is being torn down: threads stop waiting and
  // iterators return Cancelled.
  std::atomic<bool> cancelled{false};
  // Callbacks that wake a thread blocked on a condition variable; called
  // once, by Cancel, under wake_mu, which RemoveWaker also takes: a RunAhead
  // being destroyed waits for a Cancel that is calling its waker. Lock order:
  // wake_mu, then the waker's own mutex; wake_mu, then mu. Guarded by mu.
  std::mutex wake_mu;
  std::mutex mu;
  std::map<int, std::function<void()>> wakers;
  int next_waker = 0;
  // Autotune decisions, by stage name ("Map", "Prefetch"); guarded by mu.
  std::map<std::string, std::string> tuned;
  // Iterator::Gauges; guarded by mu.
  std::map<std::string, double> gauges;

  // Set on the context of the iterator that Interleave and FlatMap open at
  // build time to learn their function's element spec: datasets that count
  // their iterations (Shuffle, ListFiles) draw the next one's order without
  // using it up, so the first real iteration is still iteration 0.
  bool probe = false;

  // Dataset::AutoShard's split of this pipeline (auto_shard.cc), set before
  // the iterators below it are made. With `source`, that dataset keeps only
  // its part (TFRecord and ListFiles their files, other sources their
  // elements: each index `index` modulo `count`); with `records`, every
  // TFRecord of the pipeline keeps the records of each file whose index is
  // `index` modulo `count`, and sets records_split when it does.
  struct Split {
    const DatasetBase* by = nullptr;  // the AutoShard; null: no split
    const DatasetBase* source = nullptr;
    bool records = false;
    int64_t count = 1;
    int64_t index = 0;
  };
  Split split;
  std::atomic<bool> records_split{false};
  // Whether `d` is the split's source.
  bool SplitsSource(const DatasetBase& d) const { return split.source == &d; }

  int AddWaker(std::function<void()> wake);
  void RemoveWaker(int id);
  void Cancel();
  void SetTuned(const std::string& stage, const std::string& value);
  void SetGauge(const std::string& name, double value);
};

// Writes and reads an iterator's position (IteratorState) under a key prefix
// per iterator of the chain ("Batch/Shuffle/TFRecord:file").
class StateWriter {
 public:
  StateWriter(IteratorState* state, std::string prefix) : state_(state), prefix_(std::move(prefix)) {}
  void WriteInt(const std::string& key, int64_t value);
  void WriteString(const std::string& key, const std::string& value);
  // dtype, shape and bytes of each tensor of the element.
  void WriteElement(const std::string& key, const Element& element);
  StateWriter Child(const std::string& name) const { return StateWriter(state_, prefix_ + "/" + name); }

 private:
  IteratorState* state_;
  std::string prefix_;
};

class StateReader {
 public:
  StateReader(const IteratorState* state, std::string prefix) : state_(state), prefix_(std::move(prefix)) {}
  // NotFound naming the key when absent; DataLoss when malformed.
  Status ReadInt(const std::string& key, int64_t* value) const;
  Status ReadString(const std::string& key, std::string* value) const;
  Status ReadElement(const std::string& key, Element* element) const;
  bool Contains(const std::string& key) const;
  StateReader Child(const std::string& name) const { return StateReader(state_, prefix_ + "/" + name); }

 private:
  const IteratorState* state_;
  std::string prefix_;
};

class IteratorBase;
// An iterator's input's position, under the input's name: what every
// iterator with an input saves last and restores last.
Status SaveInput(const IteratorBase& input, StateWriter& writer);
Status RestoreInput(IteratorBase& input, const StateReader& reader);

// One batch's pulls under tf.data's rule for a failed element: calls
// pull(&end) up to `size` times, stopping at the input's end (an OK pull
// with end set). A failed pull takes its place in the batch, and the batch
// fails whole with its first failure once all its places are taken (the
// next batch starts after it); Cancelled returns at once. pull stores what
// it got itself. Shared by Batch, map_and_batch's chunks and the fused
// ShuffleBatch, so that the three fail alike.
template <typename Pull>
Status PullBatch(int64_t size, Pull&& pull) {
  Status failed;
  for (int64_t taken = 0; taken < size; ++taken) {
    bool end = false;
    Status s = pull(&end);
    if (errors::IsCancelled(s)) return s;
    if (s.ok() && end) break;
    if (!s.ok() && failed.ok()) failed = std::move(s);
  }
  return failed;
}

class IteratorBase {
 public:
  virtual ~IteratorBase() = default;
  // The next element into *out and *end = false; *end = true at the end
  // (out untouched); or an error.
  virtual Status GetNext(Element* out, bool* end) = 0;
  // The iterator's position (see Iterator::Save). Default: Unimplemented.
  virtual Status Save(StateWriter& writer) const;
  virtual Status Restore(const StateReader& reader);
  virtual const std::string& name() const = 0;
};

class DatasetBase : public std::enable_shared_from_this<DatasetBase> {
 public:
  DatasetBase(std::string name, ElementSpec spec) : name_(std::move(name)), spec_(std::move(spec)) {}
  virtual ~DatasetBase() = default;
  DatasetBase(const DatasetBase&) = delete;
  DatasetBase& operator=(const DatasetBase&) = delete;

  // "Batch", "TFRecord": what errors and DebugString call it.
  const std::string& name() const { return name_; }
  const ElementSpec& spec() const { return spec_; }
  virtual int64_t Cardinality() const { return kUnknownCardinality; }
  // What AutoShard may split a source into before reading it: its files
  // (TFRecord, ListFiles) or its elements (FromTensors, FromTensorSlices,
  // Range); -1 for datasets that read another dataset.
  virtual StatusOr<int64_t> SplitUnits() const { return int64_t{-1}; }
  // "Batch(Shuffle(TFRecord))".
  virtual std::string DebugString() const { return name_; }
  // A fresh iterator at the start. Errors that only show once the dataset is
  // opened (no file matched a pattern) come from here.
  virtual StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const = 0;

 private:
  std::string name_;
  ElementSpec spec_;
};

// A dataset with one input: its DebugString wraps the input's.
class UnaryDataset : public DatasetBase {
 public:
  UnaryDataset(std::string name, ElementSpec spec, std::shared_ptr<const DatasetBase> input)
      : DatasetBase(std::move(name), std::move(spec)), input_(std::move(input)) {}
  std::string DebugString() const override { return name() + "(" + input_->DebugString() + ")"; }
  const std::shared_ptr<const DatasetBase>& input() const { return input_; }

 private:
  std::shared_ptr<const DatasetBase> input_;
};

// An iterator with a name and the context; most iterators derive from it.
template <typename DatasetType>
class DatasetIterator : public IteratorBase {
 public:
  DatasetIterator(const DatasetType& dataset, std::shared_ptr<PipelineContext> ctx)
      : dataset_(std::static_pointer_cast<const DatasetType>(dataset.shared_from_this())), ctx_(std::move(ctx)) {}
  const std::string& name() const override { return dataset_->name(); }

 protected:
  const DatasetType& dataset() const { return *dataset_; }
  const std::shared_ptr<PipelineContext>& ctx() const { return ctx_; }
  Status CancelledError() const { return errors::Cancelled(dataset_->name(), ": the iterator was closed"); }

 private:
  std::shared_ptr<const DatasetType> dataset_;
  std::shared_ptr<PipelineContext> ctx_;
};

// The implementation behind a Dataset (for builders).
inline const DatasetBase& Impl(const Dataset& d) { return *d.impl(); }

// Factory functions of the transformations, one file each (map.cc, batch.cc, ...).
StatusOr<std::shared_ptr<const DatasetBase>> MakeMapDataset(std::shared_ptr<const DatasetBase> input, const MapFn& fn,
                                                            const MapOptions& options);
StatusOr<std::shared_ptr<const DatasetBase>> MakeFilterDataset(std::shared_ptr<const DatasetBase> input,
                                                               const PredicateFn& predicate);
// `spec`: the element spec of fn's datasets when known (else found by
// calling fn on the input's first element).
StatusOr<std::shared_ptr<const DatasetBase>> MakeInterleaveDataset(std::shared_ptr<const DatasetBase> input,
                                                                   const DatasetFn& fn,
                                                                   const InterleaveOptions& options,
                                                                   const std::string& name,
                                                                   const ElementSpec* spec = nullptr);
StatusOr<std::shared_ptr<const DatasetBase>> MakeShuffleDataset(std::shared_ptr<const DatasetBase> input,
                                                                int64_t buffer_size, const ShuffleOptions& options);
StatusOr<std::shared_ptr<const DatasetBase>> MakeRepeatDataset(std::shared_ptr<const DatasetBase> input,
                                                               int64_t count);
StatusOr<std::shared_ptr<const DatasetBase>> MakeBatchDataset(std::shared_ptr<const DatasetBase> input,
                                                              int64_t batch_size, bool drop_remainder);
StatusOr<std::shared_ptr<const DatasetBase>> MakePaddedBatchDataset(std::shared_ptr<const DatasetBase> input,
                                                                    int64_t batch_size,
                                                                    const PaddedBatchOptions& options);
StatusOr<std::shared_ptr<const DatasetBase>> MakeUnbatchDataset(std::shared_ptr<const DatasetBase> input);
StatusOr<std::shared_ptr<const DatasetBase>> MakeTakeDataset(std::shared_ptr<const DatasetBase> input,
                                                             int64_t count);
StatusOr<std::shared_ptr<const DatasetBase>> MakeIgnoreErrorsDataset(std::shared_ptr<const DatasetBase> input);
StatusOr<std::shared_ptr<const DatasetBase>> MakeSkipDataset(std::shared_ptr<const DatasetBase> input,
                                                             int64_t count);
StatusOr<std::shared_ptr<const DatasetBase>> MakeShardDataset(std::shared_ptr<const DatasetBase> input,
                                                              int64_t num_shards, int64_t index);
StatusOr<std::shared_ptr<const DatasetBase>> MakeCacheDataset(std::shared_ptr<const DatasetBase> input,
                                                              const std::string& filename);
StatusOr<std::shared_ptr<const DatasetBase>> MakeAutoShardDataset(std::shared_ptr<const DatasetBase> input,
                                                                  int64_t num_shards, int64_t index);
// `source`'s iterator reduced to the elements of index `split.index` modulo
// `split.count` (sources that split by element, under AutoShard).
std::unique_ptr<IteratorBase> SplitElements(std::unique_ptr<IteratorBase> source,
                                            const PipelineContext::Split& split);
StatusOr<std::shared_ptr<const DatasetBase>> MakePrefetchDataset(std::shared_ptr<const DatasetBase> input,
                                                                 int64_t buffer_size);
StatusOr<std::shared_ptr<const DatasetBase>> MakePrefetchToDeviceDataset(std::shared_ptr<const DatasetBase> input,
                                                                         const std::string& device,
                                                                         int64_t buffer_size);
// The device a PrefetchToDevice dataset names ("/device:GPU:0") and its
// buffer; "" and 0 for any other dataset.
std::string PrefetchDevice(const DatasetBase& d);
int64_t PrefetchDeviceBuffer(const DatasetBase& d);

// map_and_batch (map_dataset.cc): Batch over a Map with parallel calls, fused:
// each of the Map's workers maps and stacks a whole batch, so that elements
// are handed between threads once per batch, not once per element. Null when
// `map` is not a parallel Map.
StatusOr<std::unique_ptr<IteratorBase>> MakeMapAndBatchIterator(const DatasetBase& map, int64_t batch_size,
                                                                bool drop_remainder,
                                                                const std::shared_ptr<PipelineContext>& ctx);

// Batch(Shuffle(Unbatch(x))) fused (shuffle_dataset.cc) when every component
// is numeric with a fully defined row shape: the shuffle buffer keeps rows
// in one contiguous array per component (as the shuffle queue's slabs) and
// batches copy picked rows, instead of an element (and its tensors) per row.
// The same elements in the same order as the chain it replaces. Null when
// `shuffle` is not such a chain.
StatusOr<std::unique_ptr<IteratorBase>> MakeShuffleBatchIterator(const DatasetBase& shuffle, int64_t batch_size,
                                                                 bool drop_remainder,
                                                                 const std::shared_ptr<PipelineContext>& ctx);
// The input of `d` when it is an Unbatch; null otherwise (batch_transforms.cc).
const DatasetBase* UnbatchInput(const DatasetBase& d);

// Sources (sources.cc, tfrecord_dataset.cc).
StatusOr<std::shared_ptr<const DatasetBase>> MakeTFRecordDataset(std::vector<std::string> files,
                                                                 const TFRecordOptions& options);
StatusOr<std::shared_ptr<const DatasetBase>> MakeTensorsDataset(Element components, bool slices);
StatusOr<std::shared_ptr<const DatasetBase>> MakeRangeDataset(int64_t start, int64_t stop, int64_t step);
StatusOr<std::shared_ptr<const DatasetBase>> MakeListFilesDataset(const std::string& pattern,
                                                                  const ListFilesOptions& options);

// The number of cores the pipeline may use (autotune's ceiling).
int PipelineCores();

}  // namespace tw::data

#endif  // TOWERFLOW_DATA_DATASET_DATASET_BASE_H_
