// Builders of the input ops: TFRecord readers, tf.train.Example parsing and
// decode_raw (TF's tf.TFRecordReader, tf.parse_single_example, tf.parse_example,
// tf.decode_raw), plus Glob for listing input files.
//
// Each builder adds nodes to the scope's graph and returns their outputs; on
// failure it records the Status in the scope and returns null Outputs (see
// graph/scope.h), so user code checks `scope.ok()` once. Nothing runs until a
// Session does. The values returned here (TFRecordReader, ParsedFeatures) are
// plain handles on graph nodes: copyable, thread-compatible, valid while the
// graph lives. Every builder registers the data module's ops on first use.
#ifndef TOWERFLOW_DATA_IO_OPS_H_
#define TOWERFLOW_DATA_IO_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "towerflow/core/tensor.h"
#include "towerflow/data/queue_ops.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/graph/scope.h"

namespace tw::io {

// Registers the data module's ops (these, the queue, dataset and image codec
// ops), their kernels and gradient marks, once; every builder of the data
// module does it on first use. Call it before building data ops by name
// (NodeBuilder with an op type, as language bindings do). Thread-safe.
void RegisterDataOps();

// ---- decode_raw -----------------------------------------------------------

// Reinterprets the bytes of each string of `bytes` as a vector of `out_type`
// (uint8, int32, int64, float, double or bool), stored little-endian unless
// `little_endian` is false. The output has shape bytes.shape + [len / size]. At
// run time every string must have the same length, a multiple of the element
// size; otherwise InvalidArgument with TF's texts.
Output DecodeRaw(const Scope& scope, const Output& bytes, DataType out_type, bool little_endian = true);

// ---- Example parsing ------------------------------------------------------

// tf.io.FixedLenFeature: `shape` values of `dtype` (int64, float or string) per
// example, row-major. Examples lacking the feature get `default_value` (any
// tensor of `dtype` with shape.num_elements() values; reshaped to `shape`);
// without a default a missing feature is an InvalidArgument naming the key.
struct FixedLenFeature {
  FixedLenFeature(DataType dtype, TensorShape shape = {}, std::optional<Tensor> default_value = std::nullopt)
      : dtype(dtype), shape(std::move(shape)), default_value(std::move(default_value)) {}
  DataType dtype;
  TensorShape shape;
  std::optional<Tensor> default_value;
};

// tf.io.VarLenFeature: all of an example's values of `dtype`, as a sparse tensor.
struct VarLenFeature {
  explicit VarLenFeature(DataType dtype) : dtype(dtype) {}
  DataType dtype;
};

using Feature = std::variant<FixedLenFeature, VarLenFeature>;
// Feature key -> how to parse it: {{"x", FixedLenFeature(kString)}, ...}.
using FeatureMap = std::map<std::string, Feature>;

// A VarLenFeature's output, TF's SparseTensor: int64 indices [n, rank], values
// [n], int64 dense_shape [rank] (rank 1 for a single example, 2 for a batch).
struct SparseOutput {
  Output indices;
  Output values;
  Output dense_shape;
};

// One parsed feature. A FixedLenFeature converts to its dense Output; a
// VarLenFeature exposes its sparse triple (converting it to an Output records
// an InvalidArgument in the scope and gives a null Output).
class ParsedFeature {
 public:
  ParsedFeature() = default;
  ParsedFeature(std::optional<Scope> scope, std::string key, Output dense)
      : scope_(std::move(scope)), key_(std::move(key)), dense_(dense) {}
  ParsedFeature(std::optional<Scope> scope, std::string key, SparseOutput sparse)
      : scope_(std::move(scope)), key_(std::move(key)), sparse_(sparse), is_sparse_(true) {}

  operator Output() const;  // NOLINT: a dense feature is its tensor
  bool is_sparse() const { return is_sparse_; }
  const SparseOutput& sparse() const { return sparse_; }
  const Output& indices() const { return sparse_.indices; }
  const Output& values() const { return sparse_.values; }
  const Output& dense_shape() const { return sparse_.dense_shape; }

 private:
  std::optional<Scope> scope_;
  std::string key_;
  Output dense_;
  SparseOutput sparse_;
  bool is_sparse_ = false;
};

// What ParseSingleExample / ParseExample return: f["x"] for each configured key.
// An unknown key records NotFound in the scope and gives a null feature.
class ParsedFeatures {
 public:
  ParsedFeatures() = default;
  explicit ParsedFeatures(const Scope& scope) : scope_(scope) {}
  ParsedFeature operator[](const std::string& key) const;
  bool contains(const std::string& key) const { return features_.count(key) > 0; }
  const std::map<std::string, ParsedFeature>& all() const { return features_; }
  void Set(const std::string& key, ParsedFeature f) { features_[key] = std::move(f); }

 private:
  std::optional<Scope> scope_;
  std::map<std::string, ParsedFeature> features_;
};

// One serialized Example (a string scalar) -> dense tensors of each
// FixedLenFeature's shape; sparse triples with indices [n, 1]. `name`, a
// string scalar when given (the reader's key, "<file>:<offset>"), is named in
// errors instead of TF's "<unknown>".
ParsedFeatures ParseSingleExample(const Scope& scope, const Output& serialized, const FeatureMap& features,
                                  const Output& name = Output());
// A vector of B serialized Examples -> dense [B] + shape; sparse indices [n, 2]
// = (example, position) and dense_shape {B, longest list}. Parallel over the
// device's intra-op threads. `names` (TF's parse_example `names`), a string
// vector of B when given (the keys of ReadUpTo), names the failing example in
// errors: "Name: data/b.tfrecord:1234, Feature: x ... is required ...".
ParsedFeatures ParseExample(const Scope& scope, const Output& serialized_batch, const FeatureMap& features,
                            const Output& names = Output());

// ---- Readers --------------------------------------------------------------

struct TFRecordReaderOptions {
  // Unset (the default): each file's compression is detected from its first
  // bytes and its name (RecordReaderOptions::detect_compression; the op's
  // compression_type "AUTO", towerflow's own value). Set: TF's
  // compression_type, every file read so.
  std::optional<Compression> compression = std::nullopt;
  // Skip records whose CRCs do not check (counted, logged) instead of failing
  // with DataLoss. Truncated files still fail.
  bool skip_corrupt = false;
  // ZLIB and GZIP files are decoded on a thread of the reader's own, ahead of
  // the reads (RecordReaderOptions::inflate_ahead): decompression overlaps
  // parsing. Off: one thread per reader does both.
  bool inflate_ahead = true;
  // Keep only the records of each file whose index (0-based, in the file) is
  // shard_index modulo shard_count: processes of one job that read the same
  // files each get their own records. The others are still read and checked,
  // then dropped. InvalidArgument unless 0 <= shard_index < shard_count.
  int64_t shard_count = 1;
  int64_t shard_index = 0;
  // Readers built with the same non-empty shared_name (and container) in one
  // session share their state.
  std::string container = "";
  std::string shared_name = "";
};

// A reader node (tf.TFRecordReader). Read() takes file names from a queue of
// strings (a FIFOQueue, such as tw::train::StringInputProducer's) and
// yields (key, value) scalars: key "<file>:<offset>" (TF's: the byte offset
// where the record starts, in the uncompressed stream), value the record.
// A read fails with OutOfRange once the queue is closed and empty; a corrupt
// record is DataLoss naming the file and byte offset (the next read retries it,
// as TF's does; see skip_corrupt); a file that cannot be opened fails one read
// (NotFound, ...) and the next read goes on with the next file.
class TFRecordReader {
 public:
  explicit TFRecordReader(const Scope& scope, const TFRecordReaderOptions& options = {});

  struct ReadOutputs {
    Output key;
    Output value;
  };
  // Each call builds one ReaderRead node; `queue` is a queue of string scalars
  // (file names), or its Ref(string) handle. A Queue of other component types
  // is an InvalidArgument recorded in the scope.
  ReadOutputs Read(const Queue& queue) const;
  ReadOutputs Read(const Output& queue) const;
  // TF's reader.read_up_to: one ReaderReadUpTo node yielding up to
  // `num_records` records at a time as string vectors (keys, values): the
  // fast path for batched parsing (ParseExample), one step per batch instead
  // of one per record. A batch may be short (at the end of the input, or
  // before a bad record, whose error the next read returns); at the end,
  // OutOfRange. num_records < 1 is InvalidArgument recorded in the scope.
  ReadOutputs ReadUpTo(const Queue& queue, int64_t num_records) const;
  ReadOutputs ReadUpTo(const Output& queue, int64_t num_records) const;
  // The Ref(string) reader handle.
  const Output& handle() const { return handle_; }

 private:
  Scope scope_;
  Output handle_;
};

// What Glob returns: the matching paths, and the pattern they came from, which
// tw::train::StringInputProducer names when nothing matched.
// Not an aggregate, and built from two arguments only: a braced list of names
// ({"a", "b"}) given to StringInputProducer stays a plain vector.
class FileList : public std::vector<std::string> {
 public:
  FileList(std::string pattern, std::vector<std::string> paths)
      : std::vector<std::string>(std::move(paths)), pattern_(std::move(pattern)) {}
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
};

// The paths matching a glob(3) pattern ("data/*.tfrecord"), sorted; empty when
// nothing matches or the pattern cannot be read.
FileList Glob(const std::string& pattern);

}  // namespace tw::io

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_IO_OPS_H_
