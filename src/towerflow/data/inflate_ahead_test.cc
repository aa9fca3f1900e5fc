// RecordReaderOptions::inflate_ahead: decoding on a thread of the reader's own
// (data/internal/read_ahead.h) hands out exactly what decoding inline does:
// records, error texts, offsets, retries after errors, and records appended to
// a file after its end was read. And ReadAhead itself: bytes, ends and errors
// in the source's order, the source asked again only once an end was taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/data/internal/read_ahead.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_test_util.h"
#include "towerflow/data/record_writer.h"

namespace tw {
namespace {

using InflateAheadTest = record_test::TempDirTest;
using record_test::ReadFileBytes;
using record_test::WriteFileBytes;

// Everything a reader did, in order: each record, each error with the offset it
// left, and the retries after an error (a failed read consumes nothing, so a
// retry fails alike unless skip_corrupt moved on).
struct Transcript {
  std::vector<std::string> events;
  bool operator==(const Transcript&) const = default;
};

Transcript ReadThrough(RecordReader* reader) {
  Transcript t;
  std::string record;
  int errors_in_a_row = 0;
  while (errors_in_a_row < 2) {
    const Status s = reader->ReadRecord(&record);
    if (s.ok()) {
      t.events.push_back("record " + record);
      errors_in_a_row = 0;
      continue;
    }
    t.events.push_back(s.ToString() + " @" + std::to_string(reader->offset()));
    ++errors_in_a_row;
    if (errors::IsOutOfRange(s)) break;
  }
  t.events.push_back("skipped " + std::to_string(reader->skipped_records()));
  return t;
}

std::vector<std::string> Records(std::mt19937* rng, int n) {
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i) {
    std::string r(static_cast<size_t>((*rng)() % 3000), '\0');
    // Compressible: runs of a few letters, as real features are.
    for (char& c : r) c = static_cast<char>('a' + (*rng)() % 4);
    records.push_back(std::move(r));
  }
  return records;
}

std::string Compressed(const std::vector<std::string>& records, Compression c, const std::string& path) {
  RecordWriterOptions options;
  options.compression = c;
  auto writer = RecordWriter::Open(path, options).ValueOrDie();
  for (const std::string& r : records) writer->WriteRecord(r).Check();
  writer->Close().Check();
  return ReadFileBytes(path);
}

TEST_F(InflateAheadTest, SameRecordsErrorsAndOffsetsOnDamagedStreams) {
  std::mt19937 rng(7);
  const std::vector<std::string> records = Records(&rng, 40);
  ::testing::internal::CaptureStderr();  // skip_corrupt warnings
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    const std::string clean = Compressed(records, c, Path("clean"));
    for (int iter = 0; iter < 60; ++iter) {
      std::string bytes = clean;
      const int damage = iter % 4;
      if (damage == 0) {
        bytes.resize(iter == 0 ? bytes.size() : rng() % bytes.size());
      } else if (damage == 3) {
        bytes += clean;  // two members, as `cat a.gz b.gz` makes
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
      } else {
        for (int k = 0; k < damage; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
      WriteFileBytes(Path("damaged"), bytes);
      for (size_t buffer : {size_t{1}, size_t{61}, size_t{4096}, size_t{256} << 10}) {
        if (buffer == 1 && iter % 8 != 0) continue;  // one byte at a time is slow
        RecordReaderOptions options;
        options.compression = c;
        options.buffer_size = buffer;
        options.skip_corrupt = (iter & 1) != 0;
        for (int from_file = 0; from_file < 2; ++from_file) {
          SCOPED_TRACE(std::string(CompressionName(c)) + " iteration " + std::to_string(iter) + " buffer " +
                       std::to_string(buffer) + (from_file ? " file" : " memory"));
          auto open = [&](bool ahead) {
            RecordReaderOptions o = options;
            o.inflate_ahead = ahead;
            std::unique_ptr<RecordReader> reader = from_file ? RecordReader::Open(Path("damaged"), o).ValueOrDie()
                                                             : RecordReader::FromBytes(bytes, o, Path("damaged"));
            EXPECT_EQ(ahead, reader->decoding_ahead());
            return reader;
          };
          const Transcript inline_read = ReadThrough(open(false).get());
          const Transcript ahead_read = ReadThrough(open(true).get());
          ASSERT_EQ(inline_read.events, ahead_read.events);
          if (iter == 0) {  // the clean stream: every record, then the end
            ASSERT_EQ(records.size() + 2, ahead_read.events.size());
          }
        }
      }
    }
  }
  ::testing::internal::GetCapturedStderr();
}

// A file still being written: the reader reads up to the writer's last flush,
// ends there, and a later read goes on with what was appended since.
TEST_F(InflateAheadTest, ReadsWhatIsAppendedAfterTheEnd) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    SCOPED_TRACE(std::string(CompressionName(c)));
    RecordWriterOptions woptions;
    woptions.compression = c;
    auto writer = RecordWriter::Open(Path("growing"), woptions).ValueOrDie();
    RecordReaderOptions roptions;
    roptions.compression = c;
    roptions.inflate_ahead = true;
    roptions.buffer_size = 64;
    std::unique_ptr<RecordReader> reader;
    std::vector<std::string> written, got;
    std::string record;
    for (int round = 0; round < 5; ++round) {
      for (int i = 0; i <= round; ++i) {
        written.push_back("round " + std::to_string(round) + " record " + std::to_string(i) +
                          std::string(static_cast<size_t>(37 * i), 'r'));
        ASSERT_TRUE(writer->WriteRecord(written.back()).ok());
      }
      ASSERT_TRUE(writer->Flush().ok());
      if (!reader) {
        reader = RecordReader::Open(Path("growing"), roptions).ValueOrDie();
        ASSERT_TRUE(reader->decoding_ahead());
      }
      Status s;
      while ((s = reader->ReadRecord(&record)).ok()) got.push_back(record);
      EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
      EXPECT_EQ(written, got);
    }
    ASSERT_TRUE(writer->Close().ok());
    EXPECT_TRUE(errors::IsOutOfRange(reader->ReadRecord(&record)));
  }
}

// A reader closed with its decoder running ahead (a full ring, a source call
// in flight) stops at once: nothing leaks, nothing hangs (ASan and TSan runs).
TEST_F(InflateAheadTest, ClosingMidStreamStopsTheDecoder) {
  std::mt19937 rng(11);
  const std::vector<std::string> records = Records(&rng, 200);
  Compressed(records, Compression::kGzip, Path("big.gz"));
  for (size_t buffer : {size_t{1} << 10, size_t{256} << 10}) {
    for (int reads = 0; reads < 4; ++reads) {
      RecordReaderOptions options;
      options.compression = Compression::kGzip;
      options.inflate_ahead = true;
      options.buffer_size = buffer;
      auto reader = RecordReader::Open(Path("big.gz"), options).ValueOrDie();
      std::string record;
      for (int i = 0; i < reads; ++i) {
        ASSERT_TRUE(reader->ReadRecord(&record).ok());
        EXPECT_EQ(records[static_cast<size_t>(i)], record);
      }
    }
  }
}

// Decoders running ahead are capped at half the cores (at least one), process
// wide: readers opened beyond that decode inline, and read the same.
TEST_F(InflateAheadTest, ReadersBeyondTheCapDecodeInline) {
  std::mt19937 rng(5);
  const std::vector<std::string> records = Records(&rng, 30);
  Compressed(records, Compression::kGzip, Path("r.gz"));
  const int cap = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2));
  RecordReaderOptions options;
  options.compression = Compression::kGzip;
  options.inflate_ahead = true;
  std::vector<std::unique_ptr<RecordReader>> readers;
  for (int i = 0; i < cap + 2; ++i) {
    readers.push_back(RecordReader::Open(Path("r.gz"), options).ValueOrDie());
    EXPECT_EQ(i < cap, readers.back()->decoding_ahead()) << "reader " << i;
  }
  for (auto& reader : readers) {
    const Transcript t = ReadThrough(reader.get());
    ASSERT_EQ(records.size() + 2, t.events.size());
    EXPECT_EQ("record " + records.back(), t.events[records.size() - 1]);
  }
  readers.erase(readers.begin());  // frees a slot
  EXPECT_TRUE(RecordReader::Open(Path("r.gz"), options).ValueOrDie()->decoding_ahead());
}

// ReadAhead over a scripted source: pieces, an end, an error, more pieces.
TEST(ReadAheadTest, HandsOutTheSourcesAnswersInOrderAndAsksAgainOnlyAfterAnEnd) {
  struct Answer {
    std::string bytes;
    Status status;
  };
  const std::vector<Answer> script = {{"abc", Status::OK()},
                                      {"defgh", Status::OK()},
                                      {"", Status::OK()},  // an end
                                      {"ij", Status::OK()},
                                      {"", errors::DataLoss("broken")},
                                      {"k", Status::OK()},
                                      {"", Status::OK()}};
  std::atomic<size_t> calls{0};
  internal::ReadAhead ahead(
      "test",
      [&](uint8_t* dst, size_t n, size_t* got) -> Status {
        const size_t i = calls.fetch_add(1);
        if (i >= script.size()) {
          *got = 0;
          return Status::OK();
        }
        EXPECT_GE(n, script[i].bytes.size());
        std::copy(script[i].bytes.begin(), script[i].bytes.end(), dst);
        *got = script[i].status.ok() ? script[i].bytes.size() : 0;
        return script[i].status;
      },
      /*chunk_bytes=*/8, /*chunks=*/2);
  ASSERT_TRUE(ahead.Start());
  // Reads of at most 2 bytes: pieces arrive split, in order.
  auto read_until_stop = [&](std::string* out) -> Status {
    while (true) {
      uint8_t buf[2];
      size_t got = 0;
      Status s = ahead.Read(buf, sizeof(buf), &got);
      if (!s.ok()) return s;
      if (got == 0) return Status::OK();
      out->append(reinterpret_cast<const char*>(buf), got);
    }
  };
  std::string out;
  ASSERT_TRUE(read_until_stop(&out).ok());
  EXPECT_EQ("abcdefgh", out);
  // The thread parked at the end: it does not ask the source before the next Read.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(3u, calls.load());
  out.clear();
  const Status broken = read_until_stop(&out);
  EXPECT_EQ("ij", out);
  EXPECT_EQ(Code::kDataLoss, broken.code());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(5u, calls.load());
  out.clear();
  ASSERT_TRUE(read_until_stop(&out).ok());  // after an error the source is asked again
  EXPECT_EQ("k", out);
}

}  // namespace
}  // namespace tw
