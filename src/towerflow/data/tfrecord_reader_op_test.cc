#include "towerflow/data/tfrecord_reader_op.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "example.pb.h"
#include "towerflow/data/input_producers.h"
#include "towerflow/data/io_ops.h"
#include "towerflow/data/queue_ops.h"
#include "towerflow/data/queue_runner.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

std::string RecordValue(int file, int record) { return "file" + std::to_string(file) + "-record" + std::to_string(record); }

// TF's key of a record: "<file>:<byte offset of its start>"; each record before
// it takes 12 header bytes, its value and 4 footer bytes.
std::string KeyOf(const std::string& path, int file, int record) {
  size_t offset = 0;
  for (int r = 0; r < record; ++r) offset += 16 + RecordValue(file, r).size();
  return path + ":" + std::to_string(offset);
}

class TFRecordReaderOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / (std::string("tw_reader_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `n` records RecordValue(file, 0..n-1) to a new file.
  std::string WriteFile(int file, int n, Compression compression = Compression::kNone) {
    const std::string path = (dir_ / ("data-" + std::to_string(file) + ".tfrecord")).string();
    auto writer = RecordWriter::Open(path, {.compression = compression});
    EXPECT_TRUE(writer.ok()) << writer.status().ToString();
    for (int r = 0; r < n; ++r) EXPECT_TRUE((*writer)->WriteRecord(RecordValue(file, r)).ok());
    EXPECT_TRUE((*writer)->Close().ok());
    return path;
  }

  // A filename queue holding `files`, closed unless `close` is false, and a
  // reader reading from it.
  void Build(const std::vector<std::string>& files, const io::TFRecordReaderOptions& options = {}, bool close = true) {
    queue_ = io::FIFOQueue(root_, 32, {kString});
    enqueue_ = queue_.EnqueueMany(root_, {Const(root_, Tensor::Vec<std::string>(files))});
    close_ = queue_.Close(root_);
    reader_.emplace(root_.WithOpName("reader"), options);
    read_ = reader_->Read(queue_);
    ASSERT_TRUE(root_.ok()) << root_.status().ToString();
    session_ = std::make_unique<Session>(graph_);
    if (!files.empty()) {
      ASSERT_TRUE(session_->Run(enqueue_).ok());
    }
    if (close) {
      ASSERT_TRUE(session_->Run(close_).ok());
    }
  }

  StatusOr<std::pair<std::string, std::string>> Read() {
    auto out = session_->Run({read_.key, read_.value});
    if (!out.ok()) return out.status();
    return std::make_pair((*out)[0].scalar<std::string>(), (*out)[1].scalar<std::string>());
  }

  fs::path dir_;
  Graph graph_;
  Scope root_{graph_};
  io::Queue queue_;
  Node* enqueue_ = nullptr;
  Node* close_ = nullptr;
  std::optional<io::TFRecordReader> reader_;
  io::TFRecordReader::ReadOutputs read_;
  std::unique_ptr<Session> session_;
};

TEST_F(TFRecordReaderOpTest, ReadsEveryRecordOfEveryFileInOrderThenOutOfRange) {
  // The middle file is empty: the reader passes over it.
  const std::vector<std::string> files = {WriteFile(0, 2), WriteFile(1, 0), WriteFile(2, 3)};
  Build(files);
  EXPECT_EQ(read_.key.shape(), PartialShape(TensorShape()));
  EXPECT_EQ(read_.value.dtype(), kString);
  const std::vector<std::pair<int, int>> expected = {{0, 0}, {0, 1}, {2, 0}, {2, 1}, {2, 2}};
  for (auto [file, record] : expected) {
    auto kv = Read();
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    EXPECT_EQ(kv->first, KeyOf(files[static_cast<size_t>(file)], file, record));
    EXPECT_EQ(kv->second, RecordValue(file, record));
  }
  auto end = Read();
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.status().code(), Code::kOutOfRange) << end.status().ToString();
  EXPECT_NE(end.status().message().find("is closed and has insufficient elements"), std::string::npos)
      << end.status().ToString();
  // The end is sticky.
  EXPECT_EQ(Read().status().code(), Code::kOutOfRange);
}

// shard_count/shard_index: each shard gets the records of each file whose
// index is its own modulo the count (multi-process jobs with fewer files than
// ranks); together the shards read every record once.
TEST_F(TFRecordReaderOpTest, ShardsKeepTheRecordsOfTheirIndex) {
  const std::vector<std::string> files = {WriteFile(0, 5), WriteFile(1, 2)};
  Build(files, {.shard_count = 3, .shard_index = 1});
  const std::vector<std::pair<int, int>> expected = {{0, 1}, {0, 4}, {1, 1}};
  for (auto [file, record] : expected) {
    auto kv = Read();
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    EXPECT_EQ(kv->first, KeyOf(files[static_cast<size_t>(file)], file, record));
    EXPECT_EQ(kv->second, RecordValue(file, record));
  }
  EXPECT_EQ(Read().status().code(), Code::kOutOfRange);
}

TEST_F(TFRecordReaderOpTest, ABadShardIsAnError) {
  Graph graph;
  Scope root(graph);
  io::TFRecordReader reader(root, {.shard_count = 2, .shard_index = 2});
  EXPECT_TRUE(errors::IsInvalidArgument(root.status())) << root.status().ToString();
  EXPECT_NE(root.status().message().find("shard_index 2 of shard_count 2"), std::string::npos);
}

TEST_F(TFRecordReaderOpTest, GzipFiles) {
  const std::vector<std::string> files = {WriteFile(10, 3, Compression::kGzip), WriteFile(11, 1, Compression::kGzip)};
  Build(files, {.compression = Compression::kGzip});
  for (auto [file, record] : std::vector<std::pair<int, int>>{{10, 0}, {10, 1}, {10, 2}, {11, 0}}) {
    auto kv = Read();
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    EXPECT_EQ(kv->first, KeyOf(files[static_cast<size_t>(file - 10)], file, record));  // uncompressed offsets
    EXPECT_EQ(kv->second, RecordValue(file, record));
  }
  EXPECT_EQ(Read().status().code(), Code::kOutOfRange);
}

TEST_F(TFRecordReaderOpTest, ZlibFiles) {
  const std::vector<std::string> files = {WriteFile(0, 2, Compression::kZlib)};
  Build(files, {.compression = Compression::kZlib});
  for (int record = 0; record < 2; ++record) {
    auto kv = Read();
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    EXPECT_EQ(kv->second, RecordValue(0, record));
  }
  EXPECT_EQ(Read().status().code(), Code::kOutOfRange);
}

TEST_F(TFRecordReaderOpTest, ReadingACompressedFileAsPlainIsDataLossWithAHint) {
  Build({WriteFile(0, 2, Compression::kGzip)}, {.compression = Compression::kNone});
  auto kv = Read();
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), Code::kDataLoss) << kv.status().ToString();
  EXPECT_NE(kv.status().message().find("the file starts like a GZIP stream: read it with compression GZIP"),
            std::string::npos)
      << kv.status().ToString();
}

TEST_F(TFRecordReaderOpTest, ByDefaultEachFilesCompressionIsDetected) {
  const std::vector<std::string> files = {WriteFile(0, 2, Compression::kGzip), WriteFile(1, 1),
                                          WriteFile(2, 2, Compression::kZlib)};
  Build(files);
  for (auto [file, record] : std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {2, 0}, {2, 1}}) {
    auto kv = Read();
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    EXPECT_EQ(kv->second, RecordValue(file, record));
  }
  EXPECT_EQ(Read().status().code(), Code::kOutOfRange);
}

// Flips a byte inside record `index`'s data of a file of RecordValue(0, r) records.
void CorruptRecordData(const std::string& path, int index, uint64_t* record_offset) {
  uint64_t offset = 0;
  for (int r = 0; r < index; ++r) offset += kRecordHeaderSize + RecordValue(0, r).size() + kRecordFooterSize;
  *record_offset = offset;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset + kRecordHeaderSize + 2));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  f.seekp(static_cast<std::streamoff>(offset + kRecordHeaderSize + 2));
  f.write(&c, 1);
}

TEST_F(TFRecordReaderOpTest, CorruptRecordIsDataLossNamingFileAndOffset) {
  const std::string path = WriteFile(0, 3);
  uint64_t offset = 0;
  CorruptRecordData(path, 1, &offset);
  Build({path});
  auto first = Read();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->second, RecordValue(0, 0));
  auto bad = Read();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kDataLoss);
  EXPECT_NE(bad.status().message().find(path), std::string::npos) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("corrupted record at " + std::to_string(offset)), std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("'ReaderRead' (ReaderRead)"), std::string::npos) << bad.status().ToString();
  // As in TF, the reader stays on the bad record.
  EXPECT_EQ(Read().status().code(), Code::kDataLoss);
}

TEST_F(TFRecordReaderOpTest, SkipCorruptSkipsAndCounts) {
  const std::string path = WriteFile(0, 3);
  uint64_t offset = 0;
  CorruptRecordData(path, 1, &offset);
  Build({path}, {.skip_corrupt = true});
  auto a = Read();
  auto b = Read();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->second, RecordValue(0, 0));
  EXPECT_EQ(b->second, RecordValue(0, 2));
  EXPECT_EQ(b->first, KeyOf(path, 0, 2));  // the skipped record changes no offset
  EXPECT_EQ(Read().status().code(), Code::kOutOfRange);
  auto reader = session_->impl().resource_mgr()->LookupOrCreate<TFRecordReaderResource>(
      "reader", []() -> StatusOr<std::shared_ptr<TFRecordReaderResource>> { return errors::NotFound("no reader"); });
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->skipped_records(), 1);
  EXPECT_EQ((*reader)->records_produced(), 2);
  EXPECT_EQ((*reader)->work_units_completed(), 1);
}

TEST_F(TFRecordReaderOpTest, MissingFileIsNotFoundThenReadingGoesOn) {
  const std::string missing = (dir_ / "missing.tfrecord").string();
  const std::string good = WriteFile(1, 1);
  Build({missing, good});
  auto bad = Read();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kNotFound);
  EXPECT_NE(bad.status().message().find(missing), std::string::npos) << bad.status().ToString();
  auto next = Read();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->first, KeyOf(good, 1, 0));
}

// Keys and values of one ReaderReadUpTo run of up to `n` records.
StatusOr<std::pair<std::vector<std::string>, std::vector<std::string>>> ReadUpTo(
    Session& session, const io::TFRecordReader::ReadOutputs& read) {
  auto out = session.Run({read.key, read.value});
  if (!out.ok()) return out.status();
  return std::make_pair((*out)[0].ToVector<std::string>(), (*out)[1].ToVector<std::string>());
}

TEST_F(TFRecordReaderOpTest, ReadUpToCrossesFilesAndEndsShortThenOutOfRange) {
  const std::vector<std::string> files = {WriteFile(0, 3), WriteFile(1, 0), WriteFile(2, 4)};
  Build(files);
  io::TFRecordReader::ReadOutputs batch = reader_->ReadUpTo(queue_, 5);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(batch.key.shape(), PartialShape({-1}));
  std::vector<std::string> keys, values;
  for (int call = 0; call < 2; ++call) {
    auto kv = ReadUpTo(*session_, batch);
    ASSERT_TRUE(kv.ok()) << kv.status().ToString();
    EXPECT_EQ(kv->first.size(), call == 0 ? 5u : 2u);
    keys.insert(keys.end(), kv->first.begin(), kv->first.end());
    values.insert(values.end(), kv->second.begin(), kv->second.end());
  }
  const std::vector<std::pair<int, int>> expected = {{0, 0}, {0, 1}, {0, 2}, {2, 0}, {2, 1}, {2, 2}, {2, 3}};
  ASSERT_EQ(keys.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    auto [file, record] = expected[i];
    EXPECT_EQ(keys[i], KeyOf(files[static_cast<size_t>(file)], file, record));
    EXPECT_EQ(values[i], RecordValue(file, record));
  }
  auto end = ReadUpTo(*session_, batch);
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.status().code(), Code::kOutOfRange) << end.status().ToString();
  EXPECT_NE(end.status().message().find("ReaderReadUpTo"), std::string::npos) << end.status().ToString();
}

TEST_F(TFRecordReaderOpTest, ReadUpToStopsBeforeACorruptRecordAndReportsItNext) {
  const std::string path = WriteFile(0, 4);
  uint64_t offset = 0;
  CorruptRecordData(path, 2, &offset);
  Build({path});
  io::TFRecordReader::ReadOutputs batch = reader_->ReadUpTo(queue_, 10);
  ASSERT_TRUE(root_.ok());
  auto first = ReadUpTo(*session_, batch);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->second, (std::vector<std::string>{RecordValue(0, 0), RecordValue(0, 1)}));
  auto bad = ReadUpTo(*session_, batch);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kDataLoss);
  EXPECT_NE(bad.status().message().find("corrupted record at " + std::to_string(offset)), std::string::npos)
      << bad.status().ToString();
  // The reader stays on the bad record, as ReaderRead does.
  EXPECT_EQ(ReadUpTo(*session_, batch).status().code(), Code::kDataLoss);
}

TEST_F(TFRecordReaderOpTest, ReadUpToReportsAMissingFileAfterTheRecordsBeforeIt) {
  const std::string missing = (dir_ / "missing.tfrecord").string();
  const std::vector<std::string> files = {WriteFile(0, 1), missing, WriteFile(2, 2)};
  Build(files);
  io::TFRecordReader::ReadOutputs batch = reader_->ReadUpTo(queue_, 10);
  ASSERT_TRUE(root_.ok());
  auto first = ReadUpTo(*session_, batch);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->first, (std::vector<std::string>{KeyOf(files[0], 0, 0)}));
  auto bad = ReadUpTo(*session_, batch);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kNotFound);
  EXPECT_NE(bad.status().message().find(missing), std::string::npos) << bad.status().ToString();
  auto rest = ReadUpTo(*session_, batch);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(rest->first, (std::vector<std::string>{KeyOf(files[2], 2, 0), KeyOf(files[2], 2, 1)}));
}

TEST_F(TFRecordReaderOpTest, ReadUpToRejectsACountBelowOne) {
  Graph g;
  Scope root(g);
  io::Queue q = io::FIFOQueue(root, 4, {kString});
  io::TFRecordReader r(root.WithOpName("r"));
  io::TFRecordReader::ReadOutputs none = r.ReadUpTo(q, 0);
  EXPECT_FALSE(none.key.valid());
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("num_records must be at least 1, got 0"), std::string::npos)
      << root.status().ToString();
}

TEST_F(TFRecordReaderOpTest, ConcurrentReadsProduceEachRecordOnce) {
  std::vector<std::string> files;
  for (int f = 0; f < 6; ++f) files.push_back(WriteFile(f, 20));
  Build(files);
  // A second reader on the same queue, as shuffle_batch_join does.
  io::TFRecordReader second(root_);
  auto read2 = second.Read(queue_);
  ASSERT_TRUE(root_.ok());
  std::mutex mu;
  std::multiset<std::string> keys;
  std::vector<Status> ends;
  auto loop = [&](io::TFRecordReader::ReadOutputs r) {
    for (;;) {
      auto out = session_->Run({r.key});
      std::lock_guard<std::mutex> lock(mu);
      if (!out.ok()) {
        ends.push_back(out.status());
        return;
      }
      keys.insert((*out)[0].scalar<std::string>());
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(loop, t % 2 ? read_ : read2);
  for (auto& t : threads) t.join();
  EXPECT_EQ(keys.size(), 120u);
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), 120u);
  for (const Status& s : ends) EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
}

TEST_F(TFRecordReaderOpTest, SessionCloseCancelsABlockedRead) {
  Build({}, {}, /*close=*/false);
  Status status;
  std::thread reader([&] { status = Read().status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  session_->Close();
  reader.join();
  EXPECT_EQ(status.code(), Code::kCancelled) << status.ToString();
}

TEST_F(TFRecordReaderOpTest, QueueOfNonStringsIsInvalidArgument) {
  auto queue = io::FIFOQueue(root_, 4, {kInt32});
  io::TFRecordReader reader(root_);
  // Seen when the graph is built from the Queue ...
  EXPECT_FALSE(reader.Read(queue).key.valid());
  ASSERT_FALSE(root_.ok());
  EXPECT_NE(root_.status().message().find("queue of strings"), std::string::npos) << root_.status().ToString();
  // ... and at run time when only the handle is given.
  Graph graph;
  Scope root(graph);
  auto handle_only = io::FIFOQueue(root, 4, {kInt32}).handle();
  auto read = io::TFRecordReader(root).Read(handle_only);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  auto out = session.Run({read.value});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("queue of strings"), std::string::npos) << out.status().ToString();
}

TEST_F(TFRecordReaderOpTest, UnknownCompressionTypeFailsTheReader) {
  EnsureDataRegistered();
  NodeBuilder(root_, "TFRecordReader").Attr("compression_type", std::string("SNAPPY")).Finalize();
  Node* node = graph_.FindNode("TFRecordReader");
  ASSERT_NE(node, nullptr);
  Session session(graph_);
  auto out = session.Run({Output(node, 0)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("SNAPPY"), std::string::npos) << out.status().ToString();
}

// The seed's get_input() end to end: string_input_producer, TFRecordReader,
// parse_single_example, decode_raw and reshape, driven by queue runners.
TEST_F(TFRecordReaderOpTest, SeedInputPipeline) {
  std::vector<std::string> files;
  size_t framed = 0;  // bytes of one framed record
  for (int f = 0; f < 2; ++f) {
    const std::string path = (dir_ / ("seed-" + std::to_string(f) + ".tfrecord")).string();
    auto writer = RecordWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    for (int r = 0; r < 3; ++r) {
      const int32_t base = 100 * f + 10 * r;
      const std::vector<int32_t> x = {base, base + 1, base + 2, base + 3, base + 4, base + 5};
      const std::vector<int32_t> labels = {r % 2, 1 - r % 2};
      tensorflow::Example ex;
      auto& features = *ex.mutable_features()->mutable_feature();
      features["x"].mutable_bytes_list()->add_value(std::string(reinterpret_cast<const char*>(x.data()), 24));
      features["labels"].mutable_bytes_list()->add_value(std::string(reinterpret_cast<const char*>(labels.data()), 8));
      ASSERT_TRUE((*writer)->WriteRecord(ex.SerializeAsString()).ok());
      framed = 16 + ex.SerializeAsString().size();  // the same for every record: fixed-size values
    }
    ASSERT_TRUE((*writer)->Close().ok());
    files.push_back(path);
  }
  Scope s = root_.WithDevice("/cpu:0").WithVariableScope("tfrecords_input");
  auto filenames = train::StringInputProducer(s, io::Glob((dir_ / "seed-*.tfrecord").string()),
                                              {.num_epochs = 2, .shuffle = false});
  auto [key, serialized] = io::TFRecordReader(s).Read(filenames);
  auto f = io::ParseSingleExample(s, serialized,
                                  {{"x", io::FixedLenFeature(kString)}, {"labels", io::FixedLenFeature(kString)}});
  auto x = Reshape(s, io::DecodeRaw(s, f["x"], kInt32), {2, 3});
  auto labels = Reshape(s, io::DecodeRaw(s, f["labels"], kInt32), {1, 2});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();

  SessionOptions options;
  options.inter_op_threads = 1;
  Session session(graph_, options);
  ASSERT_TRUE(session.Run(LocalVariablesInitializer(graph_)).ok());
  train::Coordinator coord;
  auto threads = train::StartQueueRunners(session, coord);
  std::vector<std::string> keys;
  Status end;
  while (!coord.ShouldStop()) {
    auto out = session.Run({key, x, labels});
    if (!out.ok()) {
      end = out.status();
      break;
    }
    const std::string k = (*out)[0].scalar<std::string>();
    const int file = k.find("seed-0") != std::string::npos ? 0 : 1;
    const int record = static_cast<int>(std::stoull(k.substr(k.rfind(':') + 1)) / framed);  // key: file:offset
    const int32_t base = 100 * file + 10 * record;
    EXPECT_EQ((*out)[1].shape(), (TensorShape{2, 3}));
    EXPECT_EQ((*out)[1].ToVector<int32_t>(),
              (std::vector<int32_t>{base, base + 1, base + 2, base + 3, base + 4, base + 5}));
    EXPECT_EQ((*out)[2].ToVector<int32_t>(), (std::vector<int32_t>{record % 2, 1 - record % 2}));
    keys.push_back(k);
  }
  EXPECT_EQ(end.code(), Code::kOutOfRange) << end.ToString();
  coord.RequestStop(end);
  EXPECT_TRUE(coord.Join(threads).ok());
  // Two epochs of both files, in order (shuffle off).
  std::vector<std::string> want;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const auto& file : files) {
      for (int r = 0; r < 3; ++r) want.push_back(file + ":" + std::to_string(r * framed));
    }
  }
  EXPECT_EQ(keys, want);
}

TEST_F(TFRecordReaderOpTest, GlobIsSorted) {
  for (const char* name : {"b.tfrecord", "a.tfrecord", "c.txt", "a10.tfrecord"}) std::ofstream(dir_ / name) << "x";
  auto files = io::Glob((dir_ / "*.tfrecord").string());
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(fs::path(files[0]).filename(), "a.tfrecord");
  EXPECT_EQ(fs::path(files[1]).filename(), "a10.tfrecord");
  EXPECT_EQ(fs::path(files[2]).filename(), "b.tfrecord");
  EXPECT_TRUE(io::Glob((dir_ / "*.nothing").string()).empty());
  // A glob that matches nothing, given to string_input_producer, is an error
  // naming the pattern when the graph is built (not a failed run later).
  Graph g;
  Scope root(g);
  const std::string pattern = (dir_ / "*.nothing").string();
  io::Queue q = train::StringInputProducer(root, io::Glob(pattern));
  EXPECT_FALSE(q.valid());
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("no file matches '" + pattern + "'"), std::string::npos)
      << root.status().ToString();
}

}  // namespace
}  // namespace tw
