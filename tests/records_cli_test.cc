// End-to-end tests of `towerflow records` and `towerflow convert`: runs the built
// binary (build/bin/towerflow, found next to this test's build/tests/) on files
// written here, and checks exit statuses, stdout and stderr.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "example.pb.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"
#include "cli_test_util.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::ReadFile;

class RecordsCliTest : public testing::CliTest {
 protected:
  // Examples {"label": int64 [i], "name": bytes ["n<i>"], "w": float [0.5, i]}.
  std::string WriteExamples(const std::string& name, int n, Compression c = Compression::kNone) {
    const std::string path = (dir_ / name).string();
    auto writer = RecordWriter::Open(path, {.compression = c});
    EXPECT_TRUE(writer.ok());
    for (int i = 0; i < n; ++i) {
      tensorflow::Example ex;
      auto& f = *ex.mutable_features()->mutable_feature();
      f["label"].mutable_int64_list()->add_value(i);
      f["name"].mutable_bytes_list()->add_value(std::string("n").append(std::to_string(i)));
      f["w"].mutable_float_list()->add_value(0.5f);
      f["w"].mutable_float_list()->add_value(static_cast<float>(i));
      std::string s;
      ex.SerializeToString(&s);
      EXPECT_TRUE((*writer)->WriteRecord(s).ok());
    }
    EXPECT_TRUE((*writer)->Close().ok());
    return path;
  }
};

TEST_F(RecordsCliTest, CountSumsFiles) {
  const std::string a = WriteExamples("a.tfrecord", 3), b = WriteExamples("b.tfrecord", 4, Compression::kGzip);
  Result r = Run({"records", "count", a, b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "7\n");
  // Forcing no compression on the gzip file: a DataLoss line, exit 1.
  Result forced = Run({"records", "count", "--compression", "none", b});
  EXPECT_EQ(forced.exit_code, 1);
  EXPECT_EQ(forced.err.rfind(b + ": DataLoss: ", 0), 0u) << forced.err;
  EXPECT_EQ(Run({"records", "count", "--compression", "gzip", b}).out, "4\n");
}

TEST_F(RecordsCliTest, VerifyReportsEachBadFile) {
  const std::string good = WriteExamples("good.tfrecord", 2), bad = WriteExamples("bad.tfrecord", 3);
  Result ok = Run({"records", "verify", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find(good + ": OK, 2 records"), std::string::npos) << ok.out;
  // Corrupt the data of record 1 (records are all the same size here).
  const uint64_t record_bytes = fs::file_size(bad) / 3;
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(record_bytes + kRecordHeaderSize + 1));
    f.put('\x7f');
  }
  const std::string missing = (dir_ / "missing.tfrecord").string();
  Result r = Run({"records", "verify", good, bad, missing});
  EXPECT_EQ(r.exit_code, 1);
  const std::string want = bad + ": DataLoss: corrupted record at " + std::to_string(record_bytes);
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offset " + std::to_string(record_bytes)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing + ": NotFound: "), std::string::npos) << r.err;
  // One line per bad file.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
  EXPECT_NE(r.out.find("3 file(s) checked, 2 bad"), std::string::npos) << r.out;
}

TEST_F(RecordsCliTest, ShowPrintsOneJsonObjectPerRecord) {
  const std::string path = WriteExamples("a.tfrecord", 3);
  Result r = Run({"records", "show", path, "--limit", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"label\": {\"int64_list\": [0]}, \"name\": {\"bytes_list\": [\"bjA=\"]}, "
            "\"w\": {\"float_list\": [0.5, 0]}}\n"
            "{\"label\": {\"int64_list\": [1]}, \"name\": {\"bytes_list\": [\"bjE=\"]}, "
            "\"w\": {\"float_list\": [0.5, 1]}}\n");
  Result all = Run({"records", "show", path});
  EXPECT_EQ(std::count(all.out.begin(), all.out.end(), '\n'), 3);
}

TEST_F(RecordsCliTest, ShowRejectsRecordsThatAreNotExamples) {
  const std::string path = (dir_ / "junk.tfrecord").string();
  {
    auto writer = RecordWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->WriteRecord("\xff\xff\xff").ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  Result r = Run({"records", "show", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind(path + ": InvalidArgument: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("offset 0"), std::string::npos) << r.err;
}

TEST_F(RecordsCliTest, PipesAndFifosAreReadAsStreamsWithTheirCompressionDetected) {
  const std::string plain = WriteExamples("a.tfrecord", 3), gz = WriteExamples("b.tfrecord", 4, Compression::kGzip);
  // A pipe: the bytes that detect the compression are the reader's first bytes.
  for (const auto& [file, want] : {std::pair{plain, "3\n"}, std::pair{gz, "4\n"}}) {
    Result piped = Run({"records", "count", "/dev/stdin"}, "cat " + testing::ShellQuote(file) + " | timeout -s KILL 20");
    EXPECT_EQ(piped.exit_code, 0) << file << ": " << piped.err;
    EXPECT_EQ(piped.out, want) << file;
    Result shown = Run({"records", "show", "/dev/stdin", "--limit", "1"},
                       "cat " + testing::ShellQuote(file) + " | timeout -s KILL 20");
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(shown.out.rfind("{\"label\": {\"int64_list\": [0]}", 0), 0u) << shown.out;
  }
  // A named FIFO with a writer: read once, no hang.
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result from_fifo = Run({"records", "verify", fifo}, "(cat " + testing::ShellQuote(gz) + " > " +
                                                          testing::ShellQuote(fifo) + " &); timeout -s KILL 20");
  EXPECT_EQ(from_fifo.exit_code, 0) << from_fifo.err;
  EXPECT_NE(from_fifo.out.find(fifo + ": OK, 4 records"), std::string::npos) << from_fifo.out;
}

TEST_F(RecordsCliTest, BadUsageExitsWithTwo) {
  EXPECT_EQ(Run({"records"}).exit_code, 2);
  EXPECT_EQ(Run({"records", "count"}).exit_code, 2);
  EXPECT_EQ(Run({"records", "show", "x", "--limit", "many"}).exit_code, 2);
  EXPECT_EQ(Run({"records", "count", "--compression", "lz4", "x"}).exit_code, 2);
  EXPECT_EQ(Run({"convert", "seed-synthetic", "--out", dir_.string()}).exit_code, 2);
  EXPECT_EQ(Run({"records", "--help"}).exit_code, 0);
  // Range errors say the bound in words (not DBL_MAX in 309 digits), on one line.
  Result negative = Run({"records", "show", "x", "--limit", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_EQ(negative.err, "towerflow records: --limit: '-1' is not an integer >= 0 (see --help)\n");
}

TEST_F(RecordsCliTest, SeedSyntheticWritesTheSeedSchema) {
  const std::string out = (dir_ / "seed").string();
  Result r = Run({"convert", "seed-synthetic", "--out", out, "--n-features", "5", "--examples", "400", "--shards",
                  "3", "--seed", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 3 files, 400 records"), std::string::npos) << r.out;
  int64_t total = 0, positive = 0;
  for (int s = 0; s < 3; ++s) {
    const std::string path = out + "/train-0000" + std::to_string(s) + "-of-00003.tfrecord";
    auto reader = RecordReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::string record;
    while ((*reader)->ReadRecord(&record).ok()) {
      tensorflow::Example ex;
      ASSERT_TRUE(ex.ParseFromString(record));
      const auto& f = ex.features().feature();
      ASSERT_EQ(f.at("x").bytes_list().value(0).size(), 2u * 5u * 4u);
      const std::string& labels = f.at("labels").bytes_list().value(0);
      ASSERT_EQ(labels.size(), 8u);
      int32_t l[2];
      std::memcpy(l, labels.data(), 8);
      ASSERT_EQ(l[0] + l[1], 1);  // one-hot
      positive += l[1];
      ++total;
    }
  }
  EXPECT_EQ(total, 400);
  // Balanced: the two rows are drawn alike.
  EXPECT_GT(positive, 150);
  EXPECT_LT(positive, 250);
  // The same seed gives the same bytes.
  const std::string again = (dir_ / "again").string();
  ASSERT_EQ(Run({"convert", "seed-synthetic", "--out", again, "--n-features", "5", "--examples", "400", "--shards",
                 "3", "--seed", "7"}).exit_code, 0);
  EXPECT_TRUE(ReadFile(out + "/train-00001-of-00003.tfrecord") == ReadFile(again + "/train-00001-of-00003.tfrecord"));
  EXPECT_EQ(r.err.find("another conversion"), std::string::npos) << r.err;
  // Into 2 shards where 3 are: the old ones stay and are named.
  Result two = Run({"convert", "seed-synthetic", "--out", out, "--n-features", "5", "--examples", "400", "--shards",
                    "2", "--seed", "7"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.err.find("also holds 3 train file(s) of another conversion (train-00000-of-00003.tfrecord, ...)"),
            std::string::npos)
      << two.err;
}

// Writes a gzip-compressed IDX file: magic, dims, data.
void WriteIdx(const fs::path& path, uint32_t magic, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string bytes;
  auto put = [&](uint32_t v) {
    for (int b = 3; b >= 0; --b) bytes += static_cast<char>((v >> (8 * b)) & 0xff);
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  bytes += data;
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

TEST_F(RecordsCliTest, FashionMnistFromIdxFiles) {
  const fs::path src = dir_ / "src";
  fs::create_directories(src);
  std::string train_images, test_images;
  for (int i = 0; i < 5; ++i) train_images += std::string(784, static_cast<char>(i));
  for (int i = 0; i < 2; ++i) test_images += std::string(784, static_cast<char>(100 + i));
  WriteIdx(src / "train-images-idx3-ubyte.gz", 2051, {5, 28, 28}, train_images);
  WriteIdx(src / "train-labels-idx1-ubyte.gz", 2049, {5}, std::string("\x09\x01\x02\x03\x04", 5));
  WriteIdx(src / "t10k-images-idx3-ubyte.gz", 2051, {2, 28, 28}, test_images);
  WriteIdx(src / "t10k-labels-idx1-ubyte.gz", 2049, {2}, std::string("\x07\x00", 2));
  const std::string out = (dir_ / "out").string();
  Result r = Run({"convert", "fashion-mnist", "--source", src.string(), "--out", out, "--shards", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 4 files, 7 records"), std::string::npos) << r.out;
  Result count = Run({"records", "count", out + "/train-00000-of-00002.tfrecord", out + "/train-00001-of-00002.tfrecord"});
  EXPECT_EQ(count.out, "5\n");
  Result show = Run({"records", "show", out + "/test-00000-of-00002.tfrecord"});
  EXPECT_NE(show.out.find("\"label\": {\"int64_list\": [7]}"), std::string::npos) << show.out;
  auto reader = RecordReader::Open(out + "/train-00000-of-00002.tfrecord");
  ASSERT_TRUE(reader.ok());
  std::string record;
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  tensorflow::Example ex;
  ASSERT_TRUE(ex.ParseFromString(record));
  EXPECT_EQ(ex.features().feature().at("image").bytes_list().value(0), std::string(784, '\0'));
  EXPECT_EQ(ex.features().feature().at("label").int64_list().value(0), 9);

  // A wrong magic number names the file and the offset.
  WriteIdx(src / "t10k-labels-idx1-ubyte.gz", 2051, {2}, std::string("\x07\x00", 2));
  Result bad = Run({"convert", "fashion-mnist", "--source", src.string(), "--out", out});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("t10k-labels-idx1-ubyte.gz: magic number 2051 at offset 0, expected 2049"), std::string::npos)
      << bad.err;
  // A label outside 0-9, and a truncated image file.
  WriteIdx(src / "t10k-labels-idx1-ubyte.gz", 2049, {2}, std::string("\x07\x0c", 2));
  Result label = Run({"convert", "fashion-mnist", "--source", src.string(), "--out", out});
  EXPECT_EQ(label.exit_code, 1);
  EXPECT_NE(label.err.find("label 12 at offset 9"), std::string::npos) << label.err;
  WriteIdx(src / "train-images-idx3-ubyte.gz", 2051, {5, 28, 28}, train_images.substr(0, 1000));
  Result truncated = Run({"convert", "fashion-mnist", "--source", src.string(), "--out", out});
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.err.find("DataLoss"), std::string::npos) << truncated.err;
  EXPECT_NE(truncated.err.find("truncated at offset 1016"), std::string::npos) << truncated.err;
}

}  // namespace
}  // namespace tw
