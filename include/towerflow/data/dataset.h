// Datasets: input pipelines as composable values, with the semantics of
// tf.data (TF 2.x's documentation and behaviour are the reference).
//
//   using tw::data::Dataset;
//   Dataset ds = Dataset::TFRecord({"train-0.tfrecord", "train-1.tfrecord"})
//                    .Shuffle(5000, {.seed = 7})
//                    .Repeat()
//                    .Batch(100, /*drop_remainder=*/true)
//                    .Map(parse_and_decode, {.num_parallel_calls = tw::data::kAutotune})
//                    .Prefetch();
//   TW_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
//   tw::data::Element batch;
//   while ((s = it->GetNext(&batch)).ok()) { ... }   // OutOfRange at the end
//
// A Dataset is an immutable description: cheap to copy (it shares its parts),
// safe to use from several threads, and each MakeIterator walks it afresh. An
// element is a tuple of tensors (Element), whose dtypes and static shapes the
// dataset knows (element_spec()). Map and Filter functions are towerflow
// subgraphs: the callback builds them once, on placeholders standing for the
// element's components, in a graph of the dataset's own, and every element is
// run through that graph by a session of the dataset's own on the CPU (several
// at once with num_parallel_calls).
//
// Errors: building never fails on the spot. A transformation given bad
// arguments (a negative batch size, a Map function that records an error in
// its scope) gives a dataset whose status() holds the first error, naming the
// transformation; every transformation of it keeps that error, and
// MakeIterator returns it. Errors while iterating (a corrupt record, a Map that
// fails on an element) come from GetNext, naming the dataset, the element and,
// for Map, the node. As in tf.data, an error belongs to its element and the
// iteration goes on: the next GetNext returns the element after it (a Batch
// holding the failed element fails as a whole, its other elements dropped; a
// TFRecord file that cannot be opened or read on goes on with the next file),
// so a caller may skip errors, or IgnoreErrors() may; a caller that stops at
// the first error sees nothing new. Only Cancel (or a closed session) ends
// an iteration with an error: every later GetNext returns Cancelled.
//
// Graph use: data/iterator_ops.h makes an iterator an op of a training graph
// (IteratorGetNext, one per tower).
#ifndef TOWERFLOW_DATA_DATASET_H_
#define TOWERFLOW_DATA_DATASET_H_

// Internal: the dataset and iterator implementations (data/dataset/), opaque
// to users; declared before the exported region.
namespace tw::data {
class DatasetBase;
class IteratorBase;
struct PipelineContext;
}  // namespace tw::data

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/graph/scope.h"

namespace tw::data {

// One element of a dataset: one tensor per component.
using Element = std::vector<Tensor>;

// Asks the pipeline to choose a parallelism or buffer size at run time from
// the time its stages take (tf.data.AUTOTUNE).
inline constexpr int64_t kAutotune = -1;

// Dataset::Cardinality() for datasets that never end, and for those whose
// length is only known by reading them.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

// What a dataset's elements are: per component a dtype and a static shape
// (-1 where a dimension varies from element to element).
struct ElementSpec {
  std::vector<DataType> dtypes;
  std::vector<PartialShape> shapes;
  size_t size() const { return dtypes.size(); }
  // "(string [], float32 [-1,784])".
  std::string DebugString() const;
};

struct TFRecordOptions {
  // "" (none), "ZLIB", "GZIP", or "auto": each file's own, detected from its
  // first bytes and its name (data/record_writer.h's DetectCompression).
  std::string compression = "auto";
  // Bytes asked of each read.
  int64_t buffer_size = 256 << 10;
  // Files read at once, their records interleaved one at a time in file
  // order (tf.data's num_parallel_reads); 1 reads the files one after another.
  // kAutotune: one per core, at most the number of files.
  int64_t num_parallel_reads = 1;
  // Records whose CRC does not check are skipped, logged and counted instead of
  // failing with DataLoss (RecordReaderOptions::skip_corrupt).
  bool skip_corrupt = false;
  // Elements (key, record) instead of the record alone: the key is
  // "<file>:<offset>", the record's byte offset in its (uncompressed) file,
  // as TF1's readers key their records; parse ops name it in their errors.
  bool keys = false;
};

struct ListFilesOptions {
  // The matches in a random order (a new one per iteration), else sorted.
  bool shuffle = true;
  std::optional<int64_t> seed = std::nullopt;
};

// A Map function: builds the output components from the element's (one
// Output per component, in order) in `scope`, a scope of the dataset's own
// graph. It runs once, when Map is called; what it records in `scope` becomes
// the dataset's error.
using MapFn = std::function<std::vector<Output>(const Scope& scope, const std::vector<Output>& element)>;
// A Filter predicate: a bool scalar.
using PredicateFn = std::function<Output(const Scope& scope, const std::vector<Output>& element)>;
class Dataset;
// Interleave and FlatMap: the dataset an input element expands into (a file
// name into the file's records). Called while iterating, from the pipeline's
// threads: it must be thread-safe; an error it returns fails GetNext. To learn
// the element spec, Interleave and FlatMap call it once when built, on the
// input's first element (an empty input is then an error; the input's
// Shuffle and ListFiles orders are drawn without using up an iteration, so
// the first real iteration is still their first).
using DatasetFn = std::function<StatusOr<Dataset>(const Element& element)>;

struct MapOptions {
  // Elements mapped at once, each on a thread of the pipeline (at most
  // max(64, 4 x cores) threads); 0 maps on the consumer's thread. kAutotune:
  // chosen at run time, up to one per core.
  int64_t num_parallel_calls = 0;
  // Elements come out in input order; false lets a finished element overtake
  // a slow one (tf.data's deterministic=False).
  bool deterministic = true;
};

struct InterleaveOptions {
  // Input elements whose datasets are open at once; kAutotune: one per core.
  int64_t cycle_length = kAutotune;
  // Consecutive elements taken from each before moving to the next.
  int64_t block_length = 1;
  // 0: the open datasets are read on the consumer's thread; otherwise each
  // is read ahead on a thread of its own (kAutotune: as 1).
  int64_t num_parallel_calls = 0;
  bool deterministic = true;
};

struct ShuffleOptions {
  // With a seed the order is the same in every run; without one it differs.
  std::optional<int64_t> seed = std::nullopt;
  // Each iteration (each epoch under Repeat) draws a new order.
  bool reshuffle_each_iteration = true;
};

struct PaddedBatchOptions {
  bool drop_remainder = false;
  // Per component: the shape to pad to, -1 where each batch pads to its
  // longest element. Empty: every dimension pads to the batch's longest.
  std::vector<PartialShape> padded_shapes = {};
  // Per component a scalar of its dtype; empty: zeros and empty strings.
  Element padding_values = {};
};

class Iterator;

class Dataset {
 public:
  // An invalid dataset (status() is FailedPrecondition).
  Dataset();

  // ---- sources
  // The records of TFRecord files, as string scalars, file after file.
  // An empty list is InvalidArgument.
  static Dataset TFRecord(std::vector<std::string> files, const TFRecordOptions& options = {});
  // The same over a dataset of file names (string scalars), such as ListFiles.
  static Dataset TFRecord(const Dataset& filenames, const TFRecordOptions& options = {});
  // One element.
  static Dataset FromTensors(Element components);
  // The slices along dimension 0 of every component (which must agree in size).
  static Dataset FromTensorSlices(Element components);
  // int64 scalars start, start + step, ... short of stop (Python's range).
  static Dataset Range(int64_t stop);
  static Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
  // The files matching a glob pattern (string scalars). No match is
  // InvalidArgument "No files matched pattern: <pattern>", at MakeIterator.
  static Dataset ListFiles(const std::string& pattern, const ListFilesOptions& options = {});

  // ---- transformations (each returns a new dataset; this one is unchanged)
  Dataset Map(const MapFn& fn, const MapOptions& options = {}) const;
  Dataset Filter(const PredicateFn& predicate) const;
  Dataset FlatMap(const DatasetFn& fn) const;
  Dataset Interleave(const DatasetFn& fn, const InterleaveOptions& options = {}) const;
  // The input's elements without its errors (tf.data's ignore_errors): an
  // element whose GetNext fails (a Map that fails on it, a corrupt or missing
  // TFRecord file, a Batch holding such an element) is skipped and counted
  // (Iterator::Gauges' "Errors ignored"). Cancelled is not ignored.
  Dataset IgnoreErrors() const;
  // REQUIRES (else the dataset's error): buffer_size >= 1.
  Dataset Shuffle(int64_t buffer_size, const ShuffleOptions& options = {}) const;
  // The dataset `count` times; -1 forever.
  Dataset Repeat(int64_t count = -1) const;
  // Stacks `batch_size` consecutive elements (components must agree in shape
  // within a batch); the last batch may be smaller unless drop_remainder.
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  Dataset PaddedBatch(int64_t batch_size, const PaddedBatchOptions& options = {}) const;
  // The inverse of Batch: every component's slices along dimension 0.
  Dataset Unbatch() const;
  // The first `count` elements (-1: all); Skip drops them (-1: all).
  Dataset Take(int64_t count) const;
  Dataset Skip(int64_t count) const;
  // Every num_shards-th element starting at `index`. REQUIRES: 0 <= index < num_shards.
  Dataset Shard(int64_t num_shards, int64_t index) const;
  // Shard `index` of num_shards of the whole pipeline, split where it costs
  // least (tf.data's AutoShardPolicy.AUTO, what each process of a
  // multi-process job reads: dist::DistributeDataset applies it by rank):
  // the source's files (TFRecord, ListFiles) or elements (FromTensors,
  // FromTensorSlices, Range) when it has at least num_shards, split before
  // any shuffle, so the shards are disjoint whatever their seeds; else, for
  // pipelines that read records (a TFRecord source, or TFRecord datasets
  // opened by Interleave or FlatMap), of each file the records of index
  // `index` modulo num_shards; else every num_shards-th element at this
  // point, disjoint only when every shard sees the same order (same seeds).
  // Put it last (before Prefetch); one per pipeline. REQUIRES as Shard.
  Dataset AutoShard(int64_t num_shards, int64_t index) const;
  // The elements of the first complete iteration, kept in memory ("") or
  // written to `filename` (readable by later runs), replayed by later ones.
  Dataset Cache(const std::string& filename = "") const;
  // Elements produced ahead of the consumer on a thread of the pipeline, up to
  // buffer_size of them; kAutotune grows the buffer while the consumer waits.
  Dataset Prefetch(int64_t buffer_size = kAutotune) const;
  // tf.data's prefetch_to_device: in a graph (data/iterator_ops.h) the
  // IteratorGetNext ops are placed on `device` ("/gpu:0") and copy each
  // element into its memory on a thread of the pipeline, up to buffer_size
  // elements ahead, so that a tower there finds its batch already in place.
  // Iterated from C++ it is Prefetch(buffer_size). It must be the last
  // transformation: any after it is InvalidArgument. String components cannot
  // go to a GPU (the GetNext fails naming the component).
  Dataset PrefetchToDevice(const std::string& device, int64_t buffer_size = 1) const;

  // ---- description
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok().
  const ElementSpec& element_spec() const;
  // Elements per iteration when known without reading: kInfiniteCardinality,
  // kUnknownCardinality, or the count.
  int64_t Cardinality() const;
  // The chain of transformations: "Prefetch(Map(Batch(Shuffle(TFRecord))))".
  std::string DebugString() const;

  // A new iterator at the start of the dataset; the dataset's error if it has one.
  StatusOr<std::unique_ptr<Iterator>> MakeIterator() const;

  // Internal: the implementation (data/dataset/dataset_base.h).
  const std::shared_ptr<const DatasetBase>& impl() const { return impl_; }
  explicit Dataset(std::shared_ptr<const DatasetBase> impl);
  static Dataset FromError(Status status);

 private:
  std::shared_ptr<const DatasetBase> impl_;
  Status status_;
};

// An iterator's position, for checkpoints: named byte strings (a plain value).
using IteratorState = std::map<std::string, std::string>;
// One byte string holding a state (each key and value as a u64 length and
// its bytes, little-endian, in key order), and back; DataLoss naming the byte
// offset for bytes that are not one. Do not change: on-disk format (the
// "input_state" of `towerflow train`'s checkpoints; docs/formats.md).
std::string SerializeIteratorState(const IteratorState& state);
StatusOr<IteratorState> ParseIteratorState(std::string_view bytes);

// A pass over a dataset. Not thread-safe: one consumer at a time (graph use
// serializes GetNext under a lock). Destroying it stops and joins the
// pipeline's threads, within a second even when they are blocked.
class Iterator {
 public:
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element; OutOfRange "End of sequence" after the last one (and on
  // every later call).
  [[nodiscard]] Status GetNext(Element* element);
  const ElementSpec& element_spec() const { return spec_; }

  // The position, so that a new iterator over the same dataset can continue
  // from it (Restore): read offsets, counts, shuffle buffers and seeds.
  // Unimplemented naming the transformation for parts that cannot be saved.
  [[nodiscard]] Status Save(IteratorState* state) const;
  // REQUIRES: a fresh iterator (no GetNext yet) over the dataset that saved it.
  [[nodiscard]] Status Restore(const IteratorState& state);

  // What autotuning chose, one "stage: value" per tuned stage
  // ("Map: 2 parallel calls, Prefetch: 8 elements"); "" when nothing is tuned.
  std::string AutotuneSummary() const;
  // Live measures of the pipeline, by name: "Shuffle buffer fill" (0..1, the
  // fraction of the shuffle buffer filled, as TF's queue fill summaries),
  // "Errors ignored" (IgnoreErrors' count of skipped elements).
  std::map<std::string, double> Gauges() const;

  // Stops the pipeline, from any thread: a GetNext waiting now, and every
  // later one, returns Cancelled.
  void Cancel();

  // Internal: made by Dataset::MakeIterator.
  Iterator(std::shared_ptr<PipelineContext> context, std::unique_ptr<IteratorBase> impl, ElementSpec spec);

 private:
  std::shared_ptr<PipelineContext> context_;
  std::unique_ptr<IteratorBase> impl_;
  ElementSpec spec_;
  Status spent_;  // the error that ended iteration, or OK
  bool ended_ = false;
};

}  // namespace tw::data

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_DATASET_H_
