// The two decoders of compressed record streams, ISA-L and zlib, against each
// other: on whole, flushed, cut, corrupted and concatenated GZIP and ZLIB
// streams, at several buffer sizes, a RecordReader on either gives the same
// records and the same error code, and the same message wherever the message
// is towerflow's own (every error but "corrupted ... stream", whose tail is the
// decoder's text). One difference is allowed: on a stream cut mid-block ISA-L
// may hold back the last bytes zlib decodes, and with them the last record. The streams come from RecordWriter (zlib's deflate, as TF
// writes them) and from raw zlib calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_test_util.h"
#include "towerflow/data/record_writer.h"

namespace tw {
namespace {

using ::testing::HasSubstr;

constexpr Compression kCompressions[] = {Compression::kGzip, Compression::kZlib};

struct Outcome {
  std::vector<std::string> records;
  Status status;  // what ended the read
};

Outcome ReadAll(std::string_view bytes, Compression c, InflateLibrary library, size_t buffer_size,
                bool skip_corrupt = false) {
  RecordReaderOptions options;
  options.compression = c;
  options.inflate_library = library;
  options.buffer_size = buffer_size;
  options.skip_corrupt = skip_corrupt;
  Outcome out;
  std::unique_ptr<RecordReader> reader = RecordReader::FromBytes(bytes, options, "stream");
  std::string record;
  while ((out.status = reader->ReadRecord(&record)).ok()) out.records.push_back(record);
  return out;
}

// Both decoders agree on `bytes`; returns ISA-L's outcome. On a stream cut
// mid-block ISA-L may hold back the last few bytes zlib has decoded (it waits
// for the bits of a whole symbol table lookup), so the record those bytes end
// may be missing from its read before the same "truncated" DataLoss.
Outcome ExpectSameOutcome(std::string_view bytes, Compression c, size_t buffer_size, bool skip_corrupt = false) {
  const Outcome zlib = ReadAll(bytes, c, InflateLibrary::kZlib, buffer_size, skip_corrupt);
  const Outcome isal = ReadAll(bytes, c, InflateLibrary::kIsal, buffer_size, skip_corrupt);
  const bool cut = zlib.status.message().find(" stream: it ends at compressed byte ") != std::string::npos;
  std::vector<std::string> want = zlib.records;
  if (cut && isal.records.size() + 1 == want.size()) want.pop_back();
  EXPECT_EQ(want, isal.records) << "zlib: " << zlib.status.ToString() << "\nisa-l: " << isal.status.ToString();
  EXPECT_EQ(zlib.status.code(), isal.status.code())
      << "zlib: " << zlib.status.ToString() << "\nisa-l: " << isal.status.ToString();
  const bool decoder_text = zlib.status.message().find("corrupted ") != std::string::npos &&
                            zlib.status.message().find(" stream at compressed byte ") != std::string::npos;
  if (!decoder_text) {
    // At a cut the counts of bytes decoded may differ (above), nothing else.
    static const std::regex kProduced(R"(\(uncompressed byte \d+\) while reading the record at \d+)");
    EXPECT_EQ(std::regex_replace(zlib.status.message(), kProduced, "(...)"),
              std::regex_replace(isal.status.message(), kProduced, "(...)"));
  }
  return isal;
}

class InflateDifferentialTest : public record_test::TempDirTest {
 protected:
  void SetUp() override {
    if (!InflateLibraryAvailable(InflateLibrary::kIsal)) GTEST_SKIP() << "built without ISA-L";
    TempDirTest::SetUp();
  }

  // The file RecordWriter makes of `records`, flushed after every record whose
  // index is in `flush_after`, closed unless `open`.
  std::string Write(const std::vector<std::string>& records, Compression c, const std::vector<size_t>& flush_after,
                    bool open = false) {
    const std::string path = Path("records");
    RecordWriterOptions options;
    options.compression = c;
    auto writer = RecordWriter::Open(path, options).ValueOrDie();
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_TRUE(writer->WriteRecord(records[i]).ok());
      if (std::find(flush_after.begin(), flush_after.end(), i) != flush_after.end()) {
        EXPECT_TRUE(writer->Flush().ok());
      }
    }
    if (!open) {
      EXPECT_TRUE(writer->Close().ok());
    }
    return record_test::ReadFileBytes(path);  // read while an open writer lives
  }
};

std::vector<std::string> SomeRecords(std::mt19937* rng, int n) {
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i) {
    std::string r = "record " + std::to_string(i) + " ";
    const int len = static_cast<int>((*rng)() % 200);
    for (int j = 0; j < len; ++j) r += static_cast<char>(i % 3 == 0 ? 'a' + (*rng)() % 26 : 'q');
    records.push_back(r);
  }
  return records;
}

// Every prefix of a stream flushed after some records: clean ends exactly at the
// flush points, "truncated ... stream" or "truncated record" elsewhere, the same
// records before, whatever the decoder and the buffer size.
TEST_F(InflateDifferentialTest, FlushedStreamCutAtEveryByte) {
  std::mt19937 rng(5);
  const std::vector<std::string> records = SomeRecords(&rng, 12);
  for (Compression c : kCompressions) {
    SCOPED_TRACE(CompressionName(c));
    const std::string open = Write(records, c, {0, 1, 4, 5, 9}, /*open=*/true);
    const std::string closed = Write(records, c, {0, 1, 4, 5, 9});
    int clean_ends = 0;
    for (const std::string* bytes : {&open, &closed}) {
      for (size_t len = 0; len <= bytes->size(); ++len) {
        SCOPED_TRACE("prefix " + std::to_string(len));
        for (size_t buffer : {size_t{1}, size_t{64}, size_t{256} << 10}) {
          SCOPED_TRACE("buffer_size " + std::to_string(buffer));
          const Outcome isal = ExpectSameOutcome(std::string_view(*bytes).substr(0, len), c, buffer);
          if (buffer == 64 && errors::IsOutOfRange(isal.status)) ++clean_ends;
          if (HasFailure()) return;
        }
      }
      const Outcome whole = ReadAll(*bytes, c, InflateLibrary::kIsal, 1 << 16);
      EXPECT_TRUE(errors::IsOutOfRange(whole.status)) << whole.status.ToString();
    }
    // The open file reads cleanly after its header, after each of its 5 flushes
    // and at its end (the last flush); the closed one after its header, its
    // flushes and its end.
    EXPECT_GE(clean_ends, 2 * 6);
  }
}

// Damage anywhere: a flipped bit in the header, a block, the data or the
// checksum. Every record either decoder hands out passed its CRCs, and both end
// with DataLoss. They may stop at different records: ISA-L accepts Huffman
// tables that are incomplete or oversubscribed, which zlib rejects at the block
// header ("invalid literal/lengths set"), and decodes on until a symbol, a
// record CRC or the stream's checksum fails, so it can hand out records that
// zlib does not (and, when the damage touched only codes the block never uses,
// the whole stream, checksum verified).
TEST_F(InflateDifferentialTest, CorruptedStreamsFailAlike) {
  std::mt19937 rng(7);
  const std::vector<std::string> records = SomeRecords(&rng, 30);
  for (Compression c : kCompressions) {
    SCOPED_TRACE(CompressionName(c));
    const std::string bytes = Write(records, c, {10, 20});
    int data_loss = 0;
    int isal_further = 0;
    for (size_t pos = 0; pos < bytes.size(); ++pos) {
      for (int bit : {0, 5}) {
        SCOPED_TRACE("byte " + std::to_string(pos) + " bit " + std::to_string(bit));
        std::string damaged = bytes;
        damaged[pos] = static_cast<char>(damaged[pos] ^ (1 << bit));
        for (size_t buffer : {size_t{7}, size_t{256} << 10}) {
          const Outcome zlib = ReadAll(damaged, c, InflateLibrary::kZlib, buffer);
          const Outcome isal = ReadAll(damaged, c, InflateLibrary::kIsal, buffer);
          const std::string both = "zlib: " + zlib.status.ToString() + "\nisa-l: " + isal.status.ToString();
          if (zlib.status.code() == Code::kDataLoss) ++data_loss;
          const Outcome& fewer = zlib.records.size() <= isal.records.size() ? zlib : isal;
          const Outcome& more = zlib.records.size() <= isal.records.size() ? isal : zlib;
          EXPECT_TRUE(std::equal(fewer.records.begin(), fewer.records.end(), more.records.begin())) << both;
          if (errors::IsOutOfRange(isal.status) && !errors::IsOutOfRange(zlib.status)) {
            EXPECT_EQ(records, isal.records) << both;  // ISA-L read it all, checksum verified
          } else {
            EXPECT_EQ(zlib.status.code(), isal.status.code()) << both;
          }
          if (zlib.records.size() < isal.records.size()) ++isal_further;
          // The same decoder reads alike at every buffer size.
          const Outcome again = ReadAll(damaged, c, InflateLibrary::kIsal, buffer == 7 ? 64 : 1);
          EXPECT_EQ(isal.records, again.records) << both;
          EXPECT_EQ(isal.status.code(), again.status.code()) << both;
          if (HasFailure()) return;
        }
      }
    }
    EXPECT_GT(data_loss, static_cast<int>(bytes.size()));  // most damage is caught
    // Most damage stops both at the same record.
    EXPECT_LT(isal_further, static_cast<int>(bytes.size()) / 2);
  }
}

// `cat a.gz b.gz`: the members read one after the other, and damage in the
// second member stops both decoders alike.
TEST_F(InflateDifferentialTest, ConcatenatedMembers) {
  std::mt19937 rng(9);
  const std::vector<std::string> first = SomeRecords(&rng, 5);
  const std::vector<std::string> second = SomeRecords(&rng, 7);
  for (Compression c : kCompressions) {
    SCOPED_TRACE(CompressionName(c));
    const std::string a = Write(first, c, {});
    const std::string cat = a + Write(second, c, {2});
    for (size_t buffer : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{7}, size_t{64}, size_t{4096}}) {
      const Outcome isal = ExpectSameOutcome(cat, c, buffer);
      EXPECT_TRUE(errors::IsOutOfRange(isal.status)) << isal.status.ToString();
      std::vector<std::string> want = first;
      want.insert(want.end(), second.begin(), second.end());
      EXPECT_EQ(want, isal.records);
      std::string damaged = cat;
      damaged[a.size() + 3] ^= 0x10;  // the second member's header flags
      const Outcome broken = ExpectSameOutcome(damaged, c, buffer);
      EXPECT_EQ(first, broken.records);
      EXPECT_EQ(Code::kDataLoss, broken.status.code()) << broken.status.ToString();
    }
  }
}

// Two members cut at every byte, at windows small enough that a member's end
// (and the bytes ISA-L reads past a ZLIB checksum) falls between calls: the
// same records and the same clean or truncated end as zlib.
TEST_F(InflateDifferentialTest, ConcatenatedMembersCutAtEveryByte) {
  std::mt19937 rng(17);
  const std::vector<std::string> first = SomeRecords(&rng, 3);
  const std::vector<std::string> second = SomeRecords(&rng, 4);
  for (Compression c : kCompressions) {
    SCOPED_TRACE(CompressionName(c));
    const std::string cat = Write(first, c, {}) + Write(second, c, {1});
    for (size_t len = 0; len <= cat.size(); ++len) {
      SCOPED_TRACE("prefix " + std::to_string(len));
      for (size_t buffer : {size_t{1}, size_t{3}, size_t{5}, size_t{64}}) {
        SCOPED_TRACE("buffer_size " + std::to_string(buffer));
        ExpectSameOutcome(std::string_view(cat).substr(0, len), c, buffer);
        if (HasFailure()) return;
      }
    }
  }
}

// Megabytes of mixed data, in records larger and smaller than the buffers, read
// alike; and skip_corrupt skips the same records on either decoder.
TEST_F(InflateDifferentialTest, LargeStreamsAndSkipCorrupt) {
  std::mt19937 rng(11);
  std::vector<std::string> records;
  for (int i = 0; i < 60; ++i) {
    std::string r(static_cast<size_t>(rng() % 100000), '\0');
    for (size_t j = 0; j < r.size(); ++j) r[j] = static_cast<char>(i % 2 ? rng() : j / 97);
    records.push_back(r);
  }
  std::string uncompressed;
  for (const std::string& r : records) AppendFramedRecord(r, &uncompressed);
  uncompressed[uncompressed.size() / 2] ^= 1;  // one record's data CRC fails
  for (Compression c : kCompressions) {
    SCOPED_TRACE(CompressionName(c));
    const std::string bytes = Write(records, c, {30});
    for (size_t buffer : {size_t{4096}, size_t{256} << 10}) {
      const Outcome isal = ExpectSameOutcome(bytes, c, buffer);
      EXPECT_EQ(records, isal.records);
      EXPECT_TRUE(errors::IsOutOfRange(isal.status)) << isal.status.ToString();
    }
    // The damaged stream, deflated by hand (RecordWriter frames what it is given).
    z_stream z{};
    ASSERT_EQ(Z_OK, deflateInit2(&z, 6, Z_DEFLATED, c == Compression::kGzip ? 31 : 15, 8, Z_DEFAULT_STRATEGY));
    std::string deflated(deflateBound(&z, uncompressed.size()), '\0');
    z.next_in = reinterpret_cast<Bytef*>(uncompressed.data());
    z.avail_in = static_cast<uInt>(uncompressed.size());
    z.next_out = reinterpret_cast<Bytef*>(deflated.data());
    z.avail_out = static_cast<uInt>(deflated.size());
    ASSERT_EQ(Z_STREAM_END, deflate(&z, Z_FINISH));
    deflated.resize(deflated.size() - z.avail_out);
    deflateEnd(&z);
    const Outcome skipped = ExpectSameOutcome(deflated, c, 1 << 16, /*skip_corrupt=*/true);
    EXPECT_EQ(records.size() - 1, skipped.records.size());
  }
}

// The decoder's own words reach the error: a corrupt GZIP header.
TEST_F(InflateDifferentialTest, CorruptStreamMessagesNameTheDecoderReason) {
  std::mt19937 rng(13);
  std::string bytes = Write(SomeRecords(&rng, 3), Compression::kGzip, {});
  bytes[2] = 9;  // compression method: not deflate
  for (InflateLibrary library : {InflateLibrary::kZlib, InflateLibrary::kIsal}) {
    SCOPED_TRACE(InflateLibraryName(library));
    const Outcome out = ReadAll(bytes, Compression::kGzip, library, 4096);
    EXPECT_EQ(Code::kDataLoss, out.status.code());
    EXPECT_THAT(out.status.message(), HasSubstr("stream: corrupted GZIP stream at compressed byte"));
    EXPECT_THAT(out.status.message(), HasSubstr("unknown compression method"));
  }
}

TEST(InflateLibraryTest, NamesAndAvailability) {
  EXPECT_TRUE(InflateLibraryAvailable(InflateLibrary::kZlib));
  EXPECT_TRUE(InflateLibraryAvailable(InflateLibrary::kAuto));
  EXPECT_EQ("zlib", InflateLibraryName(InflateLibrary::kZlib));
  EXPECT_EQ("isa-l", InflateLibraryName(InflateLibrary::kIsal));
  const bool isal = InflateLibraryAvailable(InflateLibrary::kIsal);
  EXPECT_EQ(isal ? "isa-l" : "zlib", InflateLibraryName(InflateLibrary::kAuto));
  if (!isal) {
    RecordReaderOptions options;
    options.compression = Compression::kGzip;
    options.inflate_library = InflateLibrary::kIsal;
    std::string record;
    const Status s = RecordReader::FromBytes(std::string_view("x"), options, "f.gz")->ReadRecord(&record);
    EXPECT_EQ(Code::kUnimplemented, s.code()) << s.ToString();
    EXPECT_THAT(s.message(), HasSubstr("f.gz: "));
  }
}

}  // namespace
}  // namespace tw
