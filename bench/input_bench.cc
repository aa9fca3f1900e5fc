// The [input] benchmark: records/s and MB/s from TFRecord files to parsed,
// decoded batches of 100 in memory (read + CRC + parse + decode_raw), for the
// Fashion-MNIST schema (image: 784 bytes -> uint8 [784], label: int64) and the
// seed's schema (x: bytes -> int32 [2, 64], labels: bytes -> int32 [1, 2]),
// plain and GZIP files, 1 and 2 threads. bench/input_pipeline runs it next to
// TensorFlow (bench/peers/tf_input.py) on the same files and prints the table.
//
// Pipelines, all built with the public API as a user would (the graph API, or
// tw::data's Dataset):
//   queue    the seed's: StringInputProducer -> TFRecordReader ->
//            ParseSingleExample -> DecodeRaw -> Reshape -> ShuffleBatch
//            (min_after_dequeue 1000, capacity 1000 + 4 * 100, num_threads T);
//            the loop dequeues batches of 100
//   readupto towerflow train's: a TFRecordReader per thread -> ReadUpTo 100 ->
//            ParseExample -> DecodeRaw -> ShuffleBatchJoin (enqueue_many)
//   batched  StringInputProducer -> TFRecordReader -> Batch of 100 serialized
//            records (num_threads T); the loop's step runs ParseExample +
//            DecodeRaw on the batch (parallel over T intra-op threads)
//   dataset_single   tw::data: Dataset::TFRecord -> Repeat -> Map(ParseSingleExample
//            -> DecodeRaw -> Reshape, the queue pipeline's per-record work,
//            num_parallel_calls T) -> Batch(100) -> Prefetch(kAutotune); the loop
//            takes batches from an Iterator (Dataset::MakeIterator). tf.data's
//            map(parse_single)+batch
//   dataset_batched  tw::data: Dataset::TFRecord -> Repeat -> Batch(100) ->
//            Map(ParseExample + DecodeRaw on the batch, num_parallel_calls T) ->
//            Prefetch(kAutotune): tf.data's batch+map(parse_example)
//   library  no graph: RecordReader + ExampleParser + DecodeRawFill in one loop
//            on one thread, what the kernels cost without the framework; for
//            GZIP files also on zlib's decoder (".../gzip-zlib/..."), against
//            the default ISA-L
// The session has T inter-op and T intra-op threads. The dataset pipelines have
// no session of the benchmark's: T Map workers (which also read the records,
// one worker at a time, and run the function on a session of one thread each)
// and the Prefetch thread (which batches, in dataset_single); their label is
// the iterator's AutotuneSummary (Prefetch's buffer). Plus the machine's limits:
// memcpy and CRC32C (data/crc32c.h) GB/s.
//
// Data: TOWERFLOW_INPUT_BENCH_DATA=DIR holding DIR/fmnist/*.tfrecord[.gz] and
// DIR/seed/*.tfrecord[.gz] (bench/input_pipeline writes them with `towerflow
// convert`). MB/s counts the uncompressed TFRecord stream (framing + payload),
// so plain and GZIP rates compare; 1 MB = 1e6 bytes. Counters: records_per_sec,
// bytes_per_sec.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "towerflow/data/crc32c.h"
#include "towerflow/data/decode_raw_op.h"
#include "towerflow/data/example_parser.h"
#include "towerflow/towerflow.h"

namespace {

constexpr int64_t kBatch = 100;
constexpr int64_t kMinAfterDequeue = 1000;  // the seed's
constexpr int kSeedFeatures = 64;

enum class Schema { kFashionMnist, kSeed };
enum class Mode { kQueue, kBatched, kReadUpTo, kLibrary, kDatasetSingle, kDatasetBatched };

// The benchmark's files (not a tw::data::Dataset: that one is always named in full).
struct Dataset {
  Schema schema;
  std::string schema_name;  // "fmnist" | "seed"
  tw::Compression compression;
  std::vector<std::string> files;
  double record_bytes = 0;  // mean framed record size in the uncompressed stream
};

// The dataset's files and mean record size; empty files when there are none.
Dataset FindDataset(const std::string& dir, Schema schema, tw::Compression compression) {
  Dataset d{schema, schema == Schema::kFashionMnist ? "fmnist" : "seed", compression, {}, 0};
  const std::string ext = compression == tw::Compression::kGzip ? ".tfrecord.gz" : ".tfrecord";
  d.files = tw::io::Glob(dir + "/" + d.schema_name + "/*" + ext);
  tw::RecordFileStats total;
  for (const std::string& f : d.files) {
    tw::RecordFileStats stats;
    if (!tw::VerifyFile(f, compression, &stats).ok()) return {};
    total.records += stats.records;
    total.stream_bytes += stats.stream_bytes;
  }
  if (total.records == 0) return {};
  d.record_bytes = static_cast<double>(total.stream_bytes) / static_cast<double>(total.records);
  return d;
}

// The seed's get_input() for one serialized Example (and its Fashion-MNIST twin).
std::vector<tw::Output> ParseOne(const tw::Scope& s, const tw::Output& serialized, Schema schema) {
  if (schema == Schema::kFashionMnist) {
    auto f = tw::io::ParseSingleExample(
        s, serialized, {{"image", tw::io::FixedLenFeature(tw::kString)}, {"label", tw::io::FixedLenFeature(tw::kInt64)}});
    return {tw::Reshape(s, tw::io::DecodeRaw(s, f["image"], tw::kUInt8), {784}), f["label"]};
  }
  auto f = tw::io::ParseSingleExample(
      s, serialized, {{"x", tw::io::FixedLenFeature(tw::kString)}, {"labels", tw::io::FixedLenFeature(tw::kString)}});
  return {tw::Reshape(s, tw::io::DecodeRaw(s, f["x"], tw::kInt32), {2, kSeedFeatures}),
          tw::Reshape(s, tw::io::DecodeRaw(s, f["labels"], tw::kInt32), {1, 2})};
}

// The same on a vector of serialized Examples.
std::vector<tw::Output> ParseMany(const tw::Scope& s, const tw::Output& serialized, Schema schema) {
  if (schema == Schema::kFashionMnist) {
    auto f = tw::io::ParseExample(
        s, serialized, {{"image", tw::io::FixedLenFeature(tw::kString)}, {"label", tw::io::FixedLenFeature(tw::kInt64)}});
    return {tw::Reshape(s, tw::io::DecodeRaw(s, f["image"], tw::kUInt8), {-1, 784}), f["label"]};
  }
  auto f = tw::io::ParseExample(
      s, serialized, {{"x", tw::io::FixedLenFeature(tw::kString)}, {"labels", tw::io::FixedLenFeature(tw::kString)}});
  return {tw::Reshape(s, tw::io::DecodeRaw(s, f["x"], tw::kInt32), {-1, 2, kSeedFeatures}),
          tw::Reshape(s, tw::io::DecodeRaw(s, f["labels"], tw::kInt32), {-1, 1, 2})};
}

// A running queue pipeline: graph, session, queue runners. The destructor stops
// the runners (their cancel threads unblock full queues) and joins them.
class Pipeline {
 public:
  Pipeline(const Dataset& d, Mode mode, int threads) {
    tw::Scope root(graph_);
    tw::io::Queue files = tw::train::StringInputProducer(root, d.files);  // shuffled, forever: the seed's
    tw::io::TFRecordReader reader(root, {.compression = d.compression});
    if (mode == Mode::kQueue) {
      // The seed's pipeline: one record per step of an input thread.
      auto read = reader.Read(files);
      fetches_ = tw::train::ShuffleBatch(root, ParseOne(root, read.value, d.schema),
                                         {.batch_size = kBatch,
                                          .capacity = kMinAfterDequeue + 4 * kBatch,
                                          .min_after_dequeue = kMinAfterDequeue,
                                          .num_threads = threads});
    } else if (mode == Mode::kReadUpTo) {
      // towerflow train's: read_up_to + parse_example + decode_raw per batch,
      // enqueue_many into the seed's shuffle queue; a reader per thread
      // (shuffle_batch_join).
      std::vector<std::vector<tw::Output>> per_thread;
      for (int t = 0; t < threads; ++t) {
        tw::io::TFRecordReader own(root, {.compression = d.compression});
        per_thread.push_back(ParseMany(root, own.ReadUpTo(files, kBatch).value, d.schema));
      }
      fetches_ = tw::train::ShuffleBatchJoin(root, per_thread,
                                             {.batch_size = kBatch,
                                              .capacity = kMinAfterDequeue + 4 * kBatch,
                                              .min_after_dequeue = kMinAfterDequeue,
                                              .enqueue_many = true});
    } else {
      // Records batched by a FIFO queue, then parsed per batch.
      auto read = reader.Read(files);
      tw::Batch serialized =
          tw::train::Batch(root, {read.value}, {.batch_size = kBatch, .num_threads = threads, .capacity = 4 * kBatch});
      if (root.ok()) fetches_ = ParseMany(root, serialized[0], d.schema);
    }
    status_ = root.status();
    if (!status_.ok()) return;
    session_ = std::make_unique<tw::Session>(
        graph_, tw::SessionOptions{.inter_op_threads = threads, .intra_op_threads = threads});
    status_ = session_->Run(tw::LocalVariablesInitializer(graph_));
    if (status_.ok()) threads_ = tw::train::StartQueueRunners(*session_, coord_);
  }
  ~Pipeline() {
    coord_.RequestStop();
    if (session_ != nullptr) {
      tw::Status s = coord_.Join(threads_, std::chrono::seconds(10));
      if (!s.ok()) std::fprintf(stderr, "input_bench: %s\n", s.ToString().c_str());
    }
  }
  const tw::Status& status() const { return status_; }

  // One batch of kBatch decoded records.
  tw::Status Step() {
    auto out = session_->Run(fetches_);
    if (!out.ok()) return out.status();
    if ((*out)[0].shape().dim(0) != kBatch) return tw::errors::Internal("batch of ", (*out)[0].shape().ToString());
    return tw::Status::OK();
  }

 private:
  tw::Graph graph_;
  std::unique_ptr<tw::Session> session_;
  tw::train::Coordinator coord_;
  std::vector<std::thread> threads_;
  std::vector<tw::Output> fetches_;
  tw::Status status_;
};

// A running tw::data pipeline (Mode::kDatasetSingle or kDatasetBatched): the
// dataset, read forever (Repeat), and an iterator over it. The iterator's
// destructor stops and joins the pipeline's threads.
class DatasetPipeline {
 public:
  DatasetPipeline(const Dataset& d, Mode mode, int threads) {
    const Schema schema = d.schema;
    const tw::data::TFRecordOptions files{.compression = d.compression == tw::Compression::kGzip ? "GZIP" : ""};
    const tw::data::Dataset records = tw::data::Dataset::TFRecord(d.files, files).Repeat();
    const tw::data::MapOptions parallel{.num_parallel_calls = threads};
    if (mode == Mode::kDatasetSingle) {
      // Per record, then batched: tf.data's map(parse_single_example)+batch.
      const tw::data::MapFn parse_one = [schema](const tw::Scope& s, const std::vector<tw::Output>& record) {
        return ParseOne(s, record[0], schema);
      };
      dataset_ = records.Map(parse_one, parallel).Batch(kBatch).Prefetch(tw::data::kAutotune);
    } else {
      // Batched, then parsed per batch: tf.data's batch+map(parse_example).
      const tw::data::MapFn parse_many = [schema](const tw::Scope& s, const std::vector<tw::Output>& batch) {
        return ParseMany(s, batch[0], schema);
      };
      dataset_ = records.Batch(kBatch).Map(parse_many, parallel).Prefetch(tw::data::kAutotune);
    }
    auto it = dataset_.MakeIterator();  // the dataset's error, if building it failed
    if (!it.ok()) {
      status_ = it.status();
      return;
    }
    iterator_ = std::move(*it);
  }
  const tw::Status& status() const { return status_; }
  std::string AutotuneSummary() const { return iterator_ != nullptr ? iterator_->AutotuneSummary() : ""; }

  // One batch of kBatch decoded records.
  tw::Status Step() {
    TW_RETURN_IF_ERROR(iterator_->GetNext(&batch_));
    if (batch_[0].shape().dim(0) != kBatch) {
      return tw::errors::Internal("batch of ", batch_[0].shape().ToString());
    }
    return tw::Status::OK();
  }

 private:
  tw::data::Dataset dataset_;
  std::unique_ptr<tw::data::Iterator> iterator_;
  tw::data::Element batch_;
  tw::Status status_;
};

void SetRates(benchmark::State& state, const Dataset& d) {
  const double records = static_cast<double>(state.iterations()) * kBatch;
  state.counters["records_per_sec"] = benchmark::Counter(records, benchmark::Counter::kIsRate);
  state.counters["bytes_per_sec"] = benchmark::Counter(records * d.record_bytes, benchmark::Counter::kIsRate);
}

// Warms up, then times p.Step() (one batch of kBatch records) per iteration.
template <typename P>
void Measure(benchmark::State& state, P& p, const Dataset& d) {
  if (!p.status().ok()) {
    state.SkipWithError(p.status().ToString().c_str());
    return;
  }
  // Warm-up, untimed: the shuffle queue fills to min_after_dequeue first (the
  // dataset pipelines' threads start and their buffers fill).
  for (int i = 0; i < 30; ++i) {
    if (tw::Status s = p.Step(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  for (auto _ : state) {
    if (tw::Status s = p.Step(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  SetRates(state, d);
}

void BM_Pipeline(benchmark::State& state, Dataset d, Mode mode, int threads) {
  Pipeline p(d, mode, threads);
  Measure(state, p, d);
}

void BM_DatasetPipeline(benchmark::State& state, Dataset d, Mode mode, int threads) {
  DatasetPipeline p(d, mode, threads);
  Measure(state, p, d);
  state.SetLabel(p.AutotuneSummary());  // what autotuning chose, for the log
}

// The library loop: the files read over and over; each iteration parses and
// decodes kBatch records one at a time, as the queue pipeline's kernels do.
void BM_Library(benchmark::State& state, Dataset d, tw::InflateLibrary inflate) {
  tw::ParseConfig config;
  const bool fmnist = d.schema == Schema::kFashionMnist;
  config.dense.push_back({fmnist ? "image" : "x", tw::kString, tw::TensorShape{}, std::nullopt});
  config.dense.push_back({fmnist ? "label" : "labels", fmnist ? tw::kInt64 : tw::kString, tw::TensorShape{}, std::nullopt});
  auto parser = tw::ExampleParser::Create(config);
  if (!parser.ok()) {
    state.SkipWithError(parser.status().ToString().c_str());
    return;
  }
  size_t file = 0;
  std::unique_ptr<tw::RecordReader> reader;
  std::string_view record;
  tw::ParseResult parsed;
  const tw::DataType out_type = fmnist ? tw::kUInt8 : tw::kInt32;
  auto next = [&]() -> tw::Status {
    for (;;) {
      if (reader == nullptr) {
        TW_ASSIGN_OR_RETURN(reader, tw::RecordReader::Open(d.files[file], {.compression = d.compression,
                                                                            .inflate_library = inflate}));
        file = (file + 1) % d.files.size();
      }
      tw::Status s = reader->ReadRecordView(&record);
      if (!tw::errors::IsOutOfRange(s)) return s;
      reader.reset();
    }
  };
  auto one = [&]() -> tw::Status {
    TW_RETURN_IF_ERROR(next());
    TW_RETURN_IF_ERROR(parser->ParseSingle(record, &parsed));
    for (size_t i = 0; i < parsed.dense.size(); ++i) {
      if (parsed.dense[i].dtype() != tw::kString) continue;
      TW_ASSIGN_OR_RETURN(tw::TensorShape shape, tw::DecodeRawShape(parsed.dense[i], out_type));
      tw::Tensor out(out_type, shape);
      tw::DecodeRawFill(parsed.dense[i], true, &out);
      benchmark::DoNotOptimize(fmnist ? static_cast<void*>(out.data<uint8_t>()) : out.data<int32_t>());
    }
    return tw::Status::OK();
  };
  for (auto _ : state) {
    for (int64_t i = 0; i < kBatch; ++i) {
      if (tw::Status s = one(); !s.ok()) {
        state.SkipWithError(s.ToString().c_str());
        return;
      }
    }
  }
  SetRates(state, d);
}

// memcpy between two 64 MiB buffers: main-memory bandwidth.
void BM_Memcpy(benchmark::State& state) {
  const size_t n = size_t{64} << 20;
  std::vector<char> a(n, 1), b(n, 2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

// CRC32C of a 1 MiB buffer (cache-resident): the checksum's own speed.
void BM_Crc32c(benchmark::State& state) {
  std::vector<uint8_t> a(size_t{1} << 20);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 131);
  for (auto _ : state) benchmark::DoNotOptimize(tw::Crc32cValue(a.data(), a.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * a.size()));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RegisterBenchmark("limit/memcpy", BM_Memcpy)->UseRealTime();
  benchmark::RegisterBenchmark("limit/crc32c", BM_Crc32c)->UseRealTime();
  const char* dir = std::getenv("TOWERFLOW_INPUT_BENCH_DATA");
  if (dir == nullptr) {
    std::fprintf(stderr, "input_bench: TOWERFLOW_INPUT_BENCH_DATA is not set: only the limits run "
                         "(bench/input_pipeline writes the data and sets it)\n");
  }
  for (Schema schema : {Schema::kFashionMnist, Schema::kSeed}) {
    for (tw::Compression c : {tw::Compression::kNone, tw::Compression::kGzip}) {
      if (dir == nullptr) break;
      Dataset d = FindDataset(dir, schema, c);
      if (d.files.empty()) {
        std::fprintf(stderr, "input_bench: no readable %s files under %s/%s\n",
                     c == tw::Compression::kGzip ? ".tfrecord.gz" : ".tfrecord", dir,
                     schema == Schema::kFashionMnist ? "fmnist" : "seed");
        continue;
      }
      const std::string tail = "/" + d.schema_name + "/" + (c == tw::Compression::kGzip ? "gzip" : "none");
      for (int threads : {1, 2}) {
        for (Mode mode : {Mode::kQueue, Mode::kBatched, Mode::kReadUpTo}) {
          const char* mode_name = mode == Mode::kQueue ? "queue" : mode == Mode::kBatched ? "batched" : "readupto";
          const std::string name = std::string(mode_name) + tail + "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), BM_Pipeline, d, mode, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
        for (Mode mode : {Mode::kDatasetSingle, Mode::kDatasetBatched}) {
          const char* mode_name = mode == Mode::kDatasetSingle ? "dataset_single" : "dataset_batched";
          const std::string name = std::string(mode_name) + tail + "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), BM_DatasetPipeline, d, mode, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
      benchmark::RegisterBenchmark(("library" + tail + "/threads:1").c_str(), BM_Library, d,
                                   tw::InflateLibrary::kAuto)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
      if (c == tw::Compression::kGzip && tw::InflateLibraryAvailable(tw::InflateLibrary::kIsal)) {
        // The same loop on zlib's decoder, to compare with ISA-L's (the default).
        benchmark::RegisterBenchmark(("library" + tail + "-zlib/threads:1").c_str(), BM_Library, d,
                                     tw::InflateLibrary::kZlib)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
