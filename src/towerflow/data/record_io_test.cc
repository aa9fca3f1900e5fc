// RecordWriter and RecordReader: round trips, TF's corruption cases
// (tensorflow/core/lib/io/recordio_test.cc, record_reader_writer_test.cc),
// truncation at every byte, crafted lengths, compressed streams, skip_corrupt.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "towerflow/data/crc32c.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_test_util.h"
#include "towerflow/data/record_writer.h"

namespace tw {
namespace {

using ::testing::HasSubstr;

using RecordIoTest = record_test::TempDirTest;  // a fresh directory per test
using record_test::ReadFileBytes;
using record_test::WriteFileBytes;

void WriteRecords(const std::string& path, const std::vector<std::string>& records, Compression compression,
                  size_t buffer_size = 256 << 10) {
  RecordWriterOptions options;
  options.compression = compression;
  options.buffer_size = buffer_size;
  auto writer = RecordWriter::Open(path, options).ValueOrDie();
  for (const std::string& r : records) writer->WriteRecord(r).Check();
  writer->Close().Check();
}

// Reads records until an error; returns that error (OutOfRange at a clean end).
Status ReadAll(RecordReader* reader, std::vector<std::string>* out) {
  std::string record;
  while (true) {
    Status s = reader->ReadRecord(&record);
    if (!s.ok()) return s;
    out->push_back(record);
  }
}

std::string RandomString(std::mt19937* rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>((*rng)() & 0xff);
  return s;
}

const Compression kAllCompressions[] = {Compression::kNone, Compression::kZlib, Compression::kGzip};

std::string Name(Compression c) { return c == Compression::kNone ? "none" : std::string(CompressionName(c)); }

// By hand from the format: length 5 as uint64 LE; masked CRC32C of those 8 bytes
// (CRC32C 0xe4094dc0, masked 0x3e04b2ea, stored LE); "hello"; masked CRC32C of
// "hello" (CRC32C 0x9a71bb4c, masked 0x191c1fbb, stored LE). CRCs computed with
// a bit-at-a-time reference independent of crc32c.cc.
const uint8_t kHelloRecord[] = {0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xea, 0xb2, 0x04,
                                0x3e, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0xbb, 0x1f, 0x1c, 0x19};

TEST_F(RecordIoTest, FramingIsByteExact) {
  const std::string expected(reinterpret_cast<const char*>(kHelloRecord), sizeof(kHelloRecord));
  std::string framed;
  AppendFramedRecord("hello", &framed);
  EXPECT_EQ(expected, framed);
  EXPECT_EQ(0x3e04b2eau, MaskCrc(0xe4094dc0u));
  EXPECT_EQ(0x191c1fbbu, MaskCrc(Crc32cValue("hello")));

  WriteRecords(Path("hello"), {"hello"}, Compression::kNone);
  EXPECT_EQ(expected, ReadFileBytes(Path("hello")));

  // An empty record is a header for length 0 and the CRC of nothing.
  std::string empty;
  AppendFramedRecord("", &empty);
  ASSERT_EQ(kRecordHeaderSize + kRecordFooterSize, empty.size());
  EXPECT_EQ(std::string(8, '\0'), empty.substr(0, 8));
  EXPECT_EQ(std::string("\xd8\xea\x82\xa2", 4), empty.substr(12, 4));  // MaskCrc(0) LE
}

TEST_F(RecordIoTest, EmptyFileIsEof) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteRecords(Path("empty"), {}, c);
    RecordReaderOptions options;
    options.compression = c;
    auto reader = RecordReader::Open(Path("empty"), options).ValueOrDie();
    std::string record;
    Status s = reader->ReadRecord(&record);
    EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
    EXPECT_EQ("eof", s.message());
  }
}

TEST_F(RecordIoTest, ReadWriteWithEmptyRecordAndEofTwice) {
  const std::vector<std::string> records = {"abc", "", "0123456789", std::string(70000, 'x'), ""};
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteRecords(Path("rw"), records, c);
    RecordReaderOptions options;
    options.compression = c;
    auto reader = RecordReader::Open(Path("rw"), options).ValueOrDie();
    std::vector<std::string> got;
    Status s = ReadAll(reader.get(), &got);
    EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
    EXPECT_EQ(records, got);
    EXPECT_EQ(5, reader->records_read());
    EXPECT_EQ(5 * 16u + 3 + 10 + 70000, reader->offset());
    std::string record;
    EXPECT_TRUE(errors::IsOutOfRange(reader->ReadRecord(&record)));
    EXPECT_TRUE(errors::IsOutOfRange(reader->ReadRecord(&record)));
  }
}

TEST_F(RecordIoTest, ManyRecords) {
  std::vector<std::string> records;
  for (int i = 0; i < 100000; ++i) records.push_back(std::to_string(i));
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteRecords(Path("many"), records, c);
    RecordReaderOptions options;
    options.compression = c;
    auto reader = RecordReader::Open(Path("many"), options).ValueOrDie();
    std::string record;
    for (int i = 0; i < 100000; ++i) {
      ASSERT_TRUE(reader->ReadRecord(&record).ok()) << i;
      ASSERT_EQ(records[i], record);
    }
    EXPECT_TRUE(errors::IsOutOfRange(reader->ReadRecord(&record)));
    EXPECT_EQ(100000, reader->records_read());
  }
}

TEST_F(RecordIoTest, RandomLengthsUpTo100KB) {
  std::mt19937 rng(301);
  std::vector<std::string> records;
  for (int i = 0; i < 120; ++i) {
    // Skewed as in TF's RandomRead: mostly short, some up to 100 KB.
    const size_t n = (i % 4 == 0) ? rng() % 100001 : rng() % (size_t{1} << (rng() % 12));
    records.push_back(RandomString(&rng, n));
  }
  for (Compression c : kAllCompressions) {
    for (size_t read_buffer : {size_t{1}, size_t{7}, size_t{4096}, size_t{256} << 10}) {
      SCOPED_TRACE(Name(c) + " buffer " + std::to_string(read_buffer));
      WriteRecords(Path("random"), records, c, read_buffer == 1 ? 64 : read_buffer);
      RecordReaderOptions options;
      options.compression = c;
      options.buffer_size = read_buffer;
      auto reader = RecordReader::Open(Path("random"), options).ValueOrDie();
      std::vector<std::string> got;
      EXPECT_TRUE(errors::IsOutOfRange(ReadAll(reader.get(), &got)));
      EXPECT_TRUE(records == got);
    }
  }
}

// TF's TestBasics / TestZlib: buffer sizes 1..20 and 65536, writing and reading.
TEST_F(RecordIoTest, BufferSizeSweep) {
  std::mt19937 rng(5);
  std::vector<std::string> records = {"abc", "defg", "", std::string(100, 'z')};
  for (int i = 0; i < 20; ++i) records.push_back(RandomString(&rng, rng() % 300));
  records.push_back(RandomString(&rng, 5000));
  std::vector<size_t> sizes;
  for (size_t b = 1; b <= 20; ++b) sizes.push_back(b);
  sizes.push_back(65536);
  for (Compression c : kAllCompressions) {
    for (size_t b : sizes) {
      SCOPED_TRACE(Name(c) + " buffer " + std::to_string(b));
      WriteRecords(Path("sweep"), records, c, b);
      RecordReaderOptions options;
      options.compression = c;
      options.buffer_size = b;
      auto reader = RecordReader::Open(Path("sweep"), options).ValueOrDie();
      std::vector<std::string> got;
      EXPECT_TRUE(errors::IsOutOfRange(ReadAll(reader.get(), &got)));
      EXPECT_TRUE(records == got);
    }
  }
}

TEST_F(RecordIoTest, ReaderOverByteSpan) {
  std::string bytes;
  AppendFramedRecord("first", &bytes);
  AppendFramedRecord("", &bytes);
  AppendFramedRecord("third record", &bytes);
  auto reader = RecordReader::FromBytes(bytes, {}, "span");
  std::string_view view;
  ASSERT_TRUE(reader->ReadRecordView(&view).ok());
  EXPECT_EQ("first", view);
  // A view points into the caller's bytes: no copy.
  EXPECT_EQ(bytes.data() + 12, view.data());
  std::string record;
  ASSERT_TRUE(reader->ReadRecord(&record).ok());
  EXPECT_EQ("", record);
  ASSERT_TRUE(reader->ReadRecord(&record).ok());
  EXPECT_EQ("third record", record);
  EXPECT_EQ(bytes.size(), reader->offset());
  EXPECT_TRUE(errors::IsOutOfRange(reader->ReadRecord(&record)));

  // The same bytes compressed, read from memory.
  uLongf size = compressBound(bytes.size());
  std::string compressed(size, '\0');
  ASSERT_EQ(Z_OK, compress2(reinterpret_cast<Bytef*>(compressed.data()), &size,
                            reinterpret_cast<const Bytef*>(bytes.data()), bytes.size(), 6));
  compressed.resize(size);
  RecordReaderOptions zlib;
  zlib.compression = Compression::kZlib;
  auto zreader = RecordReader::FromBytes(compressed, zlib, "span.zz");
  std::vector<std::string> got;
  EXPECT_TRUE(errors::IsOutOfRange(ReadAll(zreader.get(), &got)));
  EXPECT_EQ((std::vector<std::string>{"first", "", "third record"}), got);
}

// TF's recordio_test corruption cases, on a written file of "foo" then "bar"
// (records at offsets 0 and 19).
struct Corruption {
  const char* name;
  int byte;  // index; -1 for the last byte
  int delta;
  uint64_t offset;  // the record named in the error
  int records_before;
};

TEST_F(RecordIoTest, CorruptionIsDataLossNamingOffset) {
  const Corruption cases[] = {
      {"length", 6, 100, 0, 0},
      {"length crc", 10, 1, 0, 0},
      {"data", 14, 1, 0, 0},
      {"data crc", -1, 1, 19, 1},
  };
  for (const Corruption& c : cases) {
    SCOPED_TRACE(c.name);
    WriteRecords(Path("corrupt"), {"foo", "bar"}, Compression::kNone);
    std::string bytes = ReadFileBytes(Path("corrupt"));
    const size_t i = c.byte < 0 ? bytes.size() - 1 : static_cast<size_t>(c.byte);
    bytes[i] = static_cast<char>(bytes[i] + c.delta);
    WriteFileBytes(Path("corrupt"), bytes);

    auto reader = RecordReader::Open(Path("corrupt")).ValueOrDie();
    std::vector<std::string> got;
    Status s = ReadAll(reader.get(), &got);
    EXPECT_EQ(c.records_before, static_cast<int>(got.size()));
    EXPECT_EQ(Code::kDataLoss, s.code()) << s.ToString();
    EXPECT_THAT(s.ToString(), HasSubstr("DataLoss"));
    EXPECT_THAT(s.message(),
                HasSubstr(Path("corrupt") + ": corrupted record at " + std::to_string(c.offset)));
    // A failed read consumes nothing: the retry fails the same way.
    EXPECT_EQ(c.offset, reader->offset());
    std::string record;
    EXPECT_EQ(s, reader->ReadRecord(&record));
  }
}

// Every prefix of a 3-record file reads the whole records it holds, then ends
// with OutOfRange at a record boundary or DataLoss naming the partial record.
TEST_F(RecordIoTest, TruncationAtEveryByte) {
  const std::vector<std::string> records = {"", "hello", std::string(30, 'r')};
  std::string bytes;
  std::vector<size_t> starts;
  for (const std::string& r : records) {
    starts.push_back(bytes.size());
    AppendFramedRecord(r, &bytes);
  }
  starts.push_back(bytes.size());
  ASSERT_EQ((std::vector<size_t>{0, 16, 37, 83}), starts);
  for (size_t len = 0; len <= bytes.size(); ++len) {
    SCOPED_TRACE("prefix " + std::to_string(len));
    size_t whole = 0;
    while (whole < records.size() && starts[whole + 1] <= len) ++whole;
    const bool boundary = starts[whole] == len;
    const std::string prefix = bytes.substr(0, len);
    WriteFileBytes(Path("trunc"), prefix);
    for (int from_file = 0; from_file < 2; ++from_file) {
      std::unique_ptr<RecordReader> reader = from_file ? RecordReader::Open(Path("trunc")).ValueOrDie()
                                                       : RecordReader::FromBytes(prefix, {}, Path("trunc"));
      std::vector<std::string> got;
      Status s = ReadAll(reader.get(), &got);
      ASSERT_EQ(whole, got.size());
      for (size_t i = 0; i < whole; ++i) EXPECT_EQ(records[i], got[i]);
      if (boundary) {
        EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
      } else {
        EXPECT_EQ(Code::kDataLoss, s.code()) << s.ToString();
        EXPECT_THAT(s.message(), HasSubstr(Path("trunc") + ": truncated record at " +
                                           std::to_string(starts[whole]) + ":"));
      }
    }
  }
}

// A header whose length CRC is valid but which declares 2^62 bytes: DataLoss
// before any allocation, from a file, from memory and inside a ZLIB stream.
TEST_F(RecordIoTest, HugeDeclaredLengthFailsFast) {
  const uint64_t length = uint64_t{1} << 62;
  std::string bytes(kRecordHeaderSize, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
  const uint32_t crc = MaskCrc(Crc32cValue(std::string_view(bytes.data(), 8)));
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<char>(crc >> (8 * i));
  bytes += "some data";
  WriteFileBytes(Path("huge"), bytes);

  uLongf size = compressBound(bytes.size());
  std::string compressed(size, '\0');
  ASSERT_EQ(Z_OK, compress2(reinterpret_cast<Bytef*>(compressed.data()), &size,
                            reinterpret_cast<const Bytef*>(bytes.data()), bytes.size(), 6));
  compressed.resize(size);
  WriteFileBytes(Path("huge.zz"), compressed);

  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    const auto start = std::chrono::steady_clock::now();
    RecordReaderOptions options;
    std::unique_ptr<RecordReader> reader;
    if (variant == 0) {
      reader = RecordReader::Open(Path("huge")).ValueOrDie();
    } else if (variant == 1) {
      reader = RecordReader::FromBytes(bytes, {}, Path("huge"));
    } else {
      options.compression = Compression::kZlib;
      reader = RecordReader::Open(Path("huge.zz"), options).ValueOrDie();
    }
    std::string record;
    Status s = reader->ReadRecord(&record);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(Code::kDataLoss, s.code()) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr("truncated record at 0"));
    EXPECT_LT(seconds, 0.5);
    EXPECT_LT(record.capacity(), size_t{1} << 20);
  }

  // max_record_bytes bounds what a record may declare.
  RecordReaderOptions limited;
  limited.max_record_bytes = 1000;
  auto reader = RecordReader::FromBytes(bytes, limited, "limited");
  std::string record;
  Status s = reader->ReadRecord(&record);
  EXPECT_EQ(Code::kDataLoss, s.code());
  EXPECT_THAT(s.message(), HasSubstr("limited: record size too large at 0"));
}

// Every cut of a GZIP file is DataLoss naming the file, except the two cuts
// that are clean flush points: nothing at all, and the bare 10-byte gzip header
// (an empty stream being written), which read as an empty file.
TEST_F(RecordIoTest, TruncatedGzipStreamIsDataLoss) {
  const std::vector<std::string> records = {"alpha", "beta", std::string(40, 'g')};
  WriteRecords(Path("full.gz"), records, Compression::kGzip);
  const std::string bytes = ReadFileBytes(Path("full.gz"));
  ASSERT_GT(bytes.size(), 18u);
  RecordReaderOptions options;
  options.compression = Compression::kGzip;
  for (size_t len = 0; len < bytes.size(); ++len) {
    SCOPED_TRACE("prefix " + std::to_string(len));
    WriteFileBytes(Path("cut.gz"), bytes.substr(0, len));
    auto reader = RecordReader::Open(Path("cut.gz"), options).ValueOrDie();
    std::vector<std::string> got;
    Status s = ReadAll(reader.get(), &got);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(records[i], got[i]);
    if (len == 0 || len == 10) {
      EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
      EXPECT_TRUE(got.empty());
    } else {
      EXPECT_EQ(Code::kDataLoss, s.code()) << s.ToString();
      EXPECT_THAT(s.message(), HasSubstr(Path("cut.gz") + ":"));
    }
  }
  // Only the 8-byte trailer missing: all records read, then DataLoss.
  WriteFileBytes(Path("cut.gz"), bytes.substr(0, bytes.size() - 8));
  auto reader = RecordReader::Open(Path("cut.gz"), options).ValueOrDie();
  std::vector<std::string> got;
  Status s = ReadAll(reader.get(), &got);
  EXPECT_EQ(records, got);
  EXPECT_EQ(Code::kDataLoss, s.code());
  EXPECT_THAT(s.message(), HasSubstr("truncated GZIP stream"));

  // A flipped bit inside the deflate data.
  std::string flipped = bytes;
  flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 0x10);
  WriteFileBytes(Path("flip.gz"), flipped);
  reader = RecordReader::Open(Path("flip.gz"), options).ValueOrDie();
  got.clear();
  s = ReadAll(reader.get(), &got);
  EXPECT_EQ(Code::kDataLoss, s.code()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr(Path("flip.gz") + ":"));
}

// TF's TestFlush / TestZlibSyncFlush: after each Flush the file holds every
// record so far, and a reader sees them and then a clean end.
TEST_F(RecordIoTest, FlushMakesRecordsReadable) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    RecordWriterOptions woptions;
    woptions.compression = c;
    auto writer = RecordWriter::Open(Path("flush"), woptions).ValueOrDie();
    RecordReaderOptions roptions;
    roptions.compression = c;
    std::vector<std::string> written;
    size_t last_size = 0;
    for (int i = 0; i < 4; ++i) {
      written.push_back("record " + std::to_string(i));
      ASSERT_TRUE(writer->WriteRecord(written.back()).ok());
      ASSERT_TRUE(writer->Flush().ok());
      ASSERT_TRUE(writer->Flush().ok());  // a second flush with nothing new
      const size_t size = ReadFileBytes(Path("flush")).size();
      EXPECT_GT(size, last_size);
      last_size = size;
      auto reader = RecordReader::Open(Path("flush"), roptions).ValueOrDie();
      std::vector<std::string> got;
      Status s = ReadAll(reader.get(), &got);
      EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
      EXPECT_EQ(written, got);
    }
    ASSERT_TRUE(writer->Close().ok());
    EXPECT_EQ(Code::kFailedPrecondition, writer->WriteRecord("late").code());
    EXPECT_EQ(CountRecords(Path("flush"), c).ValueOrDie(), 4);
  }
}

TEST_F(RecordIoTest, SkipCorruptSkipsExactlyTheBadRecord) {
  std::mt19937 rng(11);
  std::vector<std::string> records;
  for (int i = 0; i < 5; ++i) records.push_back(RandomString(&rng, 50 + 37 * i));
  std::vector<size_t> starts;
  std::string clean;
  for (const std::string& r : records) {
    starts.push_back(clean.size());
    AppendFramedRecord(r, &clean);
  }
  const std::vector<std::string> expected = {records[0], records[1], records[3], records[4]};
  // Corrupt record 2's data, its length, its data CRC.
  const size_t targets[] = {starts[2] + 12 + 20, starts[2] + 2, starts[3] - 1};
  for (size_t target : targets) {
    SCOPED_TRACE("byte " + std::to_string(target));
    std::string bytes = clean;
    bytes[target] = static_cast<char>(bytes[target] ^ 0x5a);
    WriteFileBytes(Path("skip"), bytes);

    // Without skip_corrupt: DataLoss at record 2.
    auto strict = RecordReader::Open(Path("skip")).ValueOrDie();
    std::vector<std::string> got;
    Status s = ReadAll(strict.get(), &got);
    EXPECT_EQ(2u, got.size());
    EXPECT_THAT(s.message(), HasSubstr("corrupted record at " + std::to_string(starts[2])));

    for (size_t buffer : {size_t{16}, size_t{256} << 10}) {
      RecordReaderOptions options;
      options.skip_corrupt = true;
      options.buffer_size = buffer;
      auto reader = RecordReader::Open(Path("skip"), options).ValueOrDie();
      got.clear();
      s = ReadAll(reader.get(), &got);
      EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
      EXPECT_EQ(expected, got);
      EXPECT_EQ(4, reader->records_read());
      EXPECT_EQ(1, reader->skipped_records());
      EXPECT_EQ(starts[3] - starts[2], reader->skipped_bytes());
    }
  }

  // The last record corrupt: skipped to the end, then a clean end.
  std::string bytes = clean;
  bytes[starts[4] + 15] ^= 1;
  RecordReaderOptions options;
  options.skip_corrupt = true;
  auto reader = RecordReader::FromBytes(bytes, options, "tail");
  std::vector<std::string> got;
  EXPECT_TRUE(errors::IsOutOfRange(ReadAll(reader.get(), &got)));
  EXPECT_EQ(4u, got.size());
  EXPECT_EQ(1, reader->skipped_records());

  WriteFileBytes(Path("tail"), bytes);
  RecordFileStats stats;
  Status s = VerifyFile(Path("tail"), Compression::kNone, &stats, /*skip_corrupt=*/true);
  EXPECT_EQ(Code::kDataLoss, s.code());
  EXPECT_EQ(4, stats.records);
  EXPECT_EQ(1, stats.skipped_records);
  s = VerifyFile(Path("tail"), Compression::kNone, &stats);
  EXPECT_THAT(s.message(), HasSubstr("corrupted record at " + std::to_string(starts[4])));
  EXPECT_EQ(4, stats.records);
}

// A reader that hit a truncated record reads it once the file has grown.
TEST_F(RecordIoTest, RetryAfterTruncationSeesGrowth) {
  std::string bytes;
  AppendFramedRecord("one", &bytes);
  AppendFramedRecord("two", &bytes);
  WriteFileBytes(Path("grow"), bytes.substr(0, 25));
  auto reader = RecordReader::Open(Path("grow")).ValueOrDie();
  std::string record;
  ASSERT_TRUE(reader->ReadRecord(&record).ok());
  Status s = reader->ReadRecord(&record);
  EXPECT_THAT(s.message(), HasSubstr("truncated record at 19"));
  WriteFileBytes(Path("grow"), bytes);  // same inode, now complete
  ASSERT_TRUE(reader->ReadRecord(&record).ok());
  EXPECT_EQ("two", record);
  EXPECT_TRUE(errors::IsOutOfRange(reader->ReadRecord(&record)));
}

TEST_F(RecordIoTest, ConcatenatedGzipMembers) {
  WriteRecords(Path("a.gz"), {"a1", "a2"}, Compression::kGzip);
  WriteRecords(Path("b.gz"), {"b1"}, Compression::kGzip);
  WriteFileBytes(Path("ab.gz"), ReadFileBytes(Path("a.gz")) + ReadFileBytes(Path("b.gz")));
  RecordReaderOptions options;
  options.compression = Compression::kGzip;
  auto reader = RecordReader::Open(Path("ab.gz"), options).ValueOrDie();
  std::vector<std::string> got;
  EXPECT_TRUE(errors::IsOutOfRange(ReadAll(reader.get(), &got)));
  EXPECT_EQ((std::vector<std::string>{"a1", "a2", "b1"}), got);
}

// `bytes` deflated whole into a ZLIB or GZIP stream.
std::string Deflate(std::string_view bytes, Compression c) {
  z_stream z{};
  EXPECT_EQ(Z_OK, deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, c == Compression::kGzip ? 15 + 16 : 15, 8,
                               Z_DEFAULT_STRATEGY));
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(Z_STREAM_END, deflate(&z, Z_FINISH));
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// All that zlib itself gets out of a (possibly cut) stream, in one call.
std::string InflateAll(std::string_view bytes, Compression c) {
  z_stream z{};
  EXPECT_EQ(Z_OK, inflateInit2(&z, c == Compression::kGzip ? 15 + 16 : 15));
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_NO_FLUSH);
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  return out;
}

// Regression (found by fuzz/fuzz_record_reader): a compressed stream, cut short
// anywhere, gives the records of all that decompresses from it, at every buffer
// size, with and without skip_corrupt. A small window used to stop inflating at
// the end of the input while zlib still held decoded bytes (bits taken in, the
// rest of a match) that the full output buffer had cut short, so a reader
// skipping byte by byte past a corrupt record lost the records after it. The
// reference is an uncompressed reader over zlib's one-call inflation of the cut
// stream.
TEST_F(RecordIoTest, CutCompressedStreamGivesTheSameRecordsAtEveryBufferSize) {
  std::mt19937 rng(3);
  // Long runs make long matches, which a full output buffer interrupts; a
  // record equal to an earlier one (framing included) is a single match.
  const std::vector<std::string> records = {"hello", "hello", "hello", "hello", std::string(300, 'm'), "alpha",
                                            std::string(700, 'x') + "y", RandomString(&rng, 40),
                                            std::string(258 * 3, 'z'), "omega", "hello"};
  std::string stream;
  for (const std::string& r : records) AppendFramedRecord(r, &stream);
  std::string damaged = stream;
  damaged[4 * 21 + 16 + 300 + 12 + 2] ^= 1;  // a data byte of "alpha"
  for (Compression c : {Compression::kZlib, Compression::kGzip}) {
    for (const std::string* uncompressed : {&stream, &damaged}) {
      const bool skip = uncompressed == &damaged;
      SCOPED_TRACE(Name(c) + (skip ? " damaged, skip_corrupt" : " clean"));
      const std::string bytes = Deflate(*uncompressed, c);
      for (size_t len = 0; len <= bytes.size(); ++len) {
        SCOPED_TRACE("prefix " + std::to_string(len));
        const std::string prefix = bytes.substr(0, len);
        const std::string inflated = InflateAll(prefix, c);
        RecordReaderOptions plain;
        plain.skip_corrupt = skip;
        std::vector<std::string> want;
        const Status want_status = ReadAll(RecordReader::FromBytes(inflated, plain).get(), &want);
        ASSERT_FALSE(want_status.ok());
        WriteFileBytes(Path("cut"), prefix);
        for (size_t buffer : {size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{256} << 10}) {
          SCOPED_TRACE("buffer_size " + std::to_string(buffer));
          RecordReaderOptions options = plain;
          options.compression = c;
          options.buffer_size = buffer;
          for (int from_file = 0; from_file < 2; ++from_file) {
            std::unique_ptr<RecordReader> reader =
                from_file ? RecordReader::Open(Path("cut"), options).ValueOrDie()
                          : RecordReader::FromBytes(prefix, options);
            std::vector<std::string> got;
            const Status s = ReadAll(reader.get(), &got);
            ASSERT_EQ(want, got) << s.ToString();
            if (len == bytes.size()) {
              EXPECT_TRUE(errors::IsOutOfRange(s)) << s.ToString();
            } else {  // a cut right after the GZIP header is a clean end
              EXPECT_TRUE(s.code() == Code::kDataLoss || (errors::IsOutOfRange(s) && got.empty())) << s.ToString();
            }
          }
        }
      }
    }
  }
}

// The input fuzz_record_reader found (after its mode byte): a ZLIB stream that
// turns to garbage, read with skip_corrupt. A one-byte window found 5 records,
// the default one 7.
TEST_F(RecordIoTest, FuzzFoundZlibGarbageReadsTheSameAtEveryBufferSize) {
  const uint8_t kInput[] = {
      0x78, 0x9c, 0x62, 0x60, 0x80, 0x00, 0x4d, 0xe6, 0xcd, 0xc9, 0xc9, 0x46, 0xdc, 0xe6, 0x2f, 0x99, 0xfc, 0x70,
      0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70, 0x70,
      0x70, 0x70, 0x70, 0x70, 0x09, 0x78, 0x9c, 0x63, 0x60, 0x80, 0x00, 0x4d, 0xe6, 0x19, 0xec, 0x37, 0x5e, 0x35,
      0x2d, 0x62, 0x85, 0xf2, 0x5f, 0x6d, 0x62, 0xb1, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xdf, 0x2d, 0x2f, 0x23, 0xa9,
      0x01, 0x15, 0xfc, 0x5f, 0x20, 0xe6, 0x55, 0x44, 0x24, 0xf8, 0x52, 0x27, 0x7e, 0xcf, 0x1d, 0xaa, 0x6f, 0xd7,
      0xe1, 0xdf, 0xb3, 0xb9, 0x5c, 0xb9, 0x78, 0xb8, 0x18, 0x53, 0x84, 0xd8, 0xa5, 0x58, 0xb9, 0x98, 0xe7, 0x66,
      0x67, 0x46, 0x44, 0xb8, 0x18, 0x13, 0x85, 0xf8, 0xa5, 0x78, 0xb9, 0xb8, 0x99, 0xff, 0xc3, 0x00, 0x23, 0x48,
      0x4d, 0xb2, 0x10, 0x3b, 0x17, 0x50, 0x4d, 0x45, 0x65, 0x15, 0x97, 0x20, 0x17, 0x63, 0x92, 0x10, 0x8f, 0x10,
      0x17, 0x17, 0x07, 0xd0, 0x79, 0x14, 0x7b, 0x06, 0x86, 0x03, 0xf6, 0x0f, 0x1f, 0xdd};
  RecordReaderOptions options;
  options.compression = Compression::kZlib;
  options.skip_corrupt = true;
  std::vector<std::string> want;
  const Status want_status = ReadAll(RecordReader::FromBytes(std::span(kInput), options).get(), &want);
  EXPECT_EQ(Code::kDataLoss, want_status.code()) << want_status.ToString();
  EXPECT_EQ(7u, want.size());
  for (size_t buffer : {1, 2, 3, 5, 8, 13}) {
    options.buffer_size = buffer;
    std::vector<std::string> got;
    const Status s = ReadAll(RecordReader::FromBytes(std::span(kInput), options).get(), &got);
    EXPECT_EQ(want, got) << "buffer_size " << buffer;
    EXPECT_EQ(want_status.code(), s.code()) << s.ToString();
  }
}

// Random damage to plain and compressed streams: every read ends in OK,
// OutOfRange or DataLoss, and reading always terminates.
TEST_F(RecordIoTest, RandomDamageIsAlwaysAStatus) {
  std::mt19937 rng(2024);
  ::testing::internal::CaptureStderr();  // skip_corrupt warnings
  std::vector<std::string> records;
  for (int i = 0; i < 12; ++i) records.push_back(RandomString(&rng, rng() % 200));
  for (Compression c : kAllCompressions) {
    WriteRecords(Path("clean"), records, c);
    const std::string clean = ReadFileBytes(Path("clean"));
    for (int iter = 0; iter < 600; ++iter) {
      std::string bytes = clean;
      const int damage = static_cast<int>(rng() % 4);
      if (damage == 0) {
        bytes.resize(rng() % bytes.size());
      } else {
        for (int k = 0; k < damage; ++k) {
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
        }
      }
      RecordReaderOptions options;
      options.compression = c;
      options.skip_corrupt = (iter & 1) != 0;
      options.buffer_size = 1 + rng() % 64;
      options.max_record_bytes = 1 << 20;
      auto reader = RecordReader::FromBytes(bytes, options, "damaged");
      std::vector<std::string> got;
      Status s = ReadAll(reader.get(), &got);
      ASSERT_TRUE(s.code() == Code::kOutOfRange || s.code() == Code::kDataLoss)
          << Name(c) << " iteration " << iter << ": " << s.ToString();
      ASSERT_LE(got.size(), records.size() + 4);
    }
  }
  ::testing::internal::GetCapturedStderr();
}

TEST_F(RecordIoTest, CompressionNamesAndDetection) {
  EXPECT_EQ(Compression::kNone, ParseCompression("").ValueOrDie());
  EXPECT_EQ(Compression::kZlib, ParseCompression("ZLIB").ValueOrDie());
  EXPECT_EQ(Compression::kGzip, ParseCompression("GZIP").ValueOrDie());
  EXPECT_EQ(Compression::kGzip, ParseCompression("gzip").ValueOrDie());
  EXPECT_EQ(Code::kInvalidArgument, ParseCompression("SNAPPY").status().code());
  EXPECT_EQ("ZLIB", CompressionName(Compression::kZlib));
  EXPECT_EQ("", CompressionName(Compression::kNone));

  for (Compression c : kAllCompressions) {
    WriteRecords(Path("detect"), {"x", "y"}, c);  // no telling extension
    EXPECT_EQ(c, DetectFileCompression(Path("detect")).ValueOrDie()) << Name(c);
  }
  // An uncompressed file whose first record is 376 bytes starts with 78 01,
  // a valid zlib header; its length CRC says otherwise.
  WriteRecords(Path("r376.zz"), {std::string(376, 'q')}, Compression::kNone);
  EXPECT_EQ(Compression::kNone, DetectFileCompression(Path("r376.zz")).ValueOrDie());
  EXPECT_EQ(Compression::kGzip, DetectCompression("train.tfrecord.GZ", {}));
  EXPECT_EQ(Compression::kZlib, DetectCompression("a.zlib", {}));
  EXPECT_EQ(Compression::kNone, DetectCompression("a.tfrecord", {}));
  const uint8_t zlib_head[] = {0x78, 0x9c};
  EXPECT_EQ(Compression::kZlib, DetectCompression("a", zlib_head));
  EXPECT_EQ(Code::kNotFound, DetectFileCompression(Path("missing")).status().code());
}

TEST_F(RecordIoTest, DetectionOnTheReadersOwnOpenAndAHintWhenReadAsPlain) {
  for (Compression c : kAllCompressions) {
    WriteRecords(Path("d"), {"x", "yy", ""}, c);
    RecordReaderOptions options;
    options.detect_compression = true;
    auto reader = RecordReader::Open(Path("d"), options);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    EXPECT_EQ((*reader)->compression(), c) << Name(c);
    std::vector<std::string> got;
    EXPECT_EQ(ReadAll(reader->get(), &got).code(), Code::kOutOfRange) << Name(c);
    EXPECT_EQ(got, (std::vector<std::string>{"x", "yy", ""})) << Name(c);
    if (c == Compression::kNone) continue;
    // Read as plain: DataLoss, saying what the file looks like.
    auto plain = RecordReader::Open(Path("d"));
    ASSERT_TRUE(plain.ok());
    Status s = ReadAll(plain->get(), &got);
    EXPECT_EQ(s.code(), Code::kDataLoss) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr(StrCat("the file starts like a ", CompressionName(c), " stream")));
  }
  // An empty file detects as plain and ends at once.
  WriteFileBytes(Path("empty"), "");
  RecordReaderOptions options;
  options.detect_compression = true;
  auto empty = RecordReader::Open(Path("empty"), options);
  ASSERT_TRUE(empty.ok());
  std::vector<std::string> none;
  EXPECT_EQ(ReadAll(empty->get(), &none).code(), Code::kOutOfRange);
  EXPECT_TRUE(none.empty());
}

TEST_F(RecordIoTest, FileErrorsNameTheFile) {
  auto r = RecordReader::Open(Path("missing"));
  EXPECT_EQ(Code::kNotFound, r.status().code());
  EXPECT_THAT(r.status().message(), HasSubstr(Path("missing")));
  auto w = RecordWriter::Open(Path("no/such/dir/f"));
  EXPECT_EQ(Code::kNotFound, w.status().code());
  EXPECT_THAT(w.status().message(), HasSubstr("no/such/dir/f"));
  auto d = RecordReader::Open(dir_);
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(Code::kNotFound, CountRecords(Path("missing"), Compression::kNone).status().code());
}

}  // namespace
}  // namespace tw
