// fuzz_record_reader: the input is a TFRecord file, read to the end through
// RecordReader::FromBytes. Its first byte picks the mode, the rest is the file:
//   bits 0-1  compression: 0 and 3 none, 1 ZLIB, 2 GZIP
//   bit 2     skip_corrupt
//   bits 3-4  buffer_size of a second reader of the same stream: 1, 7, 64, 4096
//   bit 5     max_record_bytes = 1 MiB (else none)
//   bit 6     the second reader decodes ahead on a thread (inflate_ahead)
//
// Beyond "no crash, no hang" (libFuzzer's -timeout), each input checks:
//   - the read ends with OutOfRange "eof" or DataLoss, nothing else, and a retry
//     after it fails the same way at the same offset (a failed read consumes
//     nothing);
//   - uncompressed: the records and the error kind and offset equal those of a
//     plain reference reader written here from docs/formats.md (with the portable
//     CRC32C), and no single allocation exceeds the input's size (the reader
//     reads memory in place);
//   - compressed: the second reader (another buffer_size, ReadRecord instead of
//     ReadRecordView, perhaps decoding ahead) reads the same records and fails with the same code, and no
//     allocation exceeds max(64 MiB, 2 x 1032 x input): the reader reserves at
//     most 64 MiB ahead of the bytes inflated, and deflate expands at most 1032x;
//   - compressed, with ISA-L built in (the default decoder): a stream that zlib
//     reads to its end gives the same records, code and offset on ISA-L; one
//     that zlib rejects gives at least zlib's records (ISA-L accepts some
//     malformed Huffman tables that zlib rejects at the block header), or one
//     fewer and DataLoss too (at a cut ISA-L may hold back the last bytes);
//   - without skip_corrupt the records are a prefix of those read with it.
// Run with -malloc_limit_mb=128 -rss_limit_mb=1024 (scripts/fuzz does).
#include <sanitizer/allocator_interface.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "towerflow/data/crc32c.h"
#include "towerflow/data/record_reader.h"

namespace tw {
namespace {

// The largest single allocation made while `tracking` (by any thread: a reader
// that decodes ahead allocates on its own).
std::atomic<bool> tracking{false};
std::atomic<size_t> largest_allocation{0};

void MallocHook(const volatile void*, size_t size) {
  if (!tracking.load(std::memory_order_relaxed)) return;
  size_t seen = largest_allocation.load(std::memory_order_relaxed);
  while (size > seen && !largest_allocation.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}
void FreeHook(const volatile void*) {}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_record_reader: %s\n", what.c_str());
  std::abort();
}

struct Outcome {
  std::vector<std::string> records;
  Status status;          // the error that ended the read
  uint64_t offset = 0;    // offset() after it
  int64_t skipped = 0;
};

Outcome ReadAll(std::span<const uint8_t> file, const RecordReaderOptions& options, bool copy) {
  Outcome out;
  tracking = true;
  std::unique_ptr<RecordReader> reader = RecordReader::FromBytes(file, options, "fuzz.tfrecord");
  std::string record;
  while (true) {
    Status s;
    if (copy) {
      s = reader->ReadRecord(&record);
    } else {
      std::string_view view;
      s = reader->ReadRecordView(&view);
      if (s.ok()) record.assign(view);
    }
    if (!s.ok()) {
      out.status = s;
      break;
    }
    tracking = false;
    out.records.push_back(record);
    tracking = true;
  }
  out.offset = reader->offset();
  out.skipped = reader->skipped_records();
  const Code code = out.status.code();
  if (code != Code::kOutOfRange && code != Code::kDataLoss) Fail("unexpected error: " + out.status.ToString());
  if (code == Code::kOutOfRange && out.status.message() != "eof") Fail("OutOfRange is not eof: " + out.status.ToString());
  if (reader->records_read() != static_cast<int64_t>(out.records.size())) Fail("records_read() is wrong");
  // A failed read consumes nothing: the retry meets the same error at the same offset.
  const Status again = reader->ReadRecord(&record);
  if (again.code() != code || reader->offset() != out.offset) {
    Fail("a retry after " + out.status.ToString() + " at " + std::to_string(out.offset) + " gave " +
         again.ToString() + " at " + std::to_string(reader->offset()));
  }
  tracking = false;
  return out;
}

uint32_t Fixed32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }
uint64_t Fixed64(const uint8_t* p) { return Fixed32(p) | static_cast<uint64_t>(Fixed32(p + 4)) << 32; }
uint32_t PortableMaskedCrc(const uint8_t* p, size_t n) { return MaskCrc(internal::Crc32cExtendPortable(0, p, n)); }

// docs/formats.md, read plainly: uint64 length, masked CRC of it, data, masked
// CRC of the data. `error` is the start of the DataLoss text after "at N".
Outcome ReferenceRead(std::span<const uint8_t> file, uint64_t max_record_bytes, std::string* error) {
  Outcome out;
  size_t pos = 0;
  while (true) {
    const size_t left = file.size() - pos;
    const uint8_t* p = file.data() + pos;
    if (left == 0) {
      out.status = errors::OutOfRange("eof");
      break;
    }
    out.status = errors::DataLoss("reference");
    if (left < 12) {
      *error = "truncated record";
      break;
    }
    const uint64_t length = Fixed64(p);
    if (PortableMaskedCrc(p, 8) != Fixed32(p + 8)) {
      *error = "corrupted record";
      break;
    }
    // Past PTRDIFF_MAX no memory could hold the record, whatever the limit.
    if (length > static_cast<uint64_t>(PTRDIFF_MAX) - 16 || (max_record_bytes != 0 && length > max_record_bytes)) {
      *error = "record size too large";
      break;
    }
    if (length > left - 12 || left - 12 - length < 4) {
      *error = "truncated record";
      break;
    }
    if (PortableMaskedCrc(p + 12, length) != Fixed32(p + 12 + length)) {
      *error = "corrupted record";
      break;
    }
    out.records.emplace_back(reinterpret_cast<const char*>(p + 12), length);
    pos += 12 + length + 4;
  }
  out.offset = pos;
  return out;
}

bool IsPrefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace
}  // namespace tw

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("TOWERFLOW_LOG_LEVEL", "2", 0);  // skip_corrupt warns at every skip
  __sanitizer_install_malloc_and_free_hooks(tw::MallocHook, tw::FreeHook);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::span<const uint8_t> file(data + 1, size - 1);
  RecordReaderOptions options;
  const int kind = mode & 3;
  options.compression = kind == 1 ? Compression::kZlib : kind == 2 ? Compression::kGzip : Compression::kNone;
  options.skip_corrupt = (mode & 4) != 0;
  options.max_record_bytes = (mode & 32) != 0 ? uint64_t{1} << 20 : 0;
  const bool compressed = options.compression != Compression::kNone;

  largest_allocation = 0;
  const Outcome main = ReadAll(file, options, /*copy=*/false);
  const size_t limit = compressed ? std::max<size_t>(size_t{64} << 20, 2 * 1032 * file.size() + (1 << 20))
                                  : file.size() + sizeof(RecordReader) + 256;  // + the reader object, short messages
  if (largest_allocation > limit) {
    Fail("allocated " + std::to_string(largest_allocation) + " bytes at once for a " +
         std::to_string(file.size()) + "-byte input");
  }

  if (compressed) {
    static const size_t kBufferSizes[] = {1, 7, 64, 4096};
    RecordReaderOptions small = options;
    small.buffer_size = kBufferSizes[(mode >> 3) & 3];
    small.inflate_ahead = (mode & 64) != 0;
    const Outcome other = ReadAll(file, small, /*copy=*/true);
    if (other.records != main.records || other.status.code() != main.status.code() ||
        other.skipped != main.skipped) {
      Fail("buffer_size " + std::to_string(small.buffer_size) + " read " + std::to_string(other.records.size()) +
           " records then " + other.status.ToString() + "; the default read " +
           std::to_string(main.records.size()) + " then " + main.status.ToString());
    }
    if (InflateLibraryAvailable(InflateLibrary::kIsal)) {
      // The default decoder is ISA-L; zlib is the reference. A stream zlib reads
      // to its end reads identically; on one zlib rejects, ISA-L (which accepts
      // some malformed Huffman tables) hands out at least zlib's records.
      RecordReaderOptions reference = options;
      reference.inflate_library = InflateLibrary::kZlib;
      const Outcome zlib = ReadAll(file, reference, /*copy=*/false);
      const bool same = zlib.records == main.records && zlib.status.code() == main.status.code() &&
                        zlib.skipped == main.skipped && zlib.offset == main.offset;
      // A cut stream: ISA-L may hold back the last bytes zlib decodes, and so
      // stop one record earlier with the same DataLoss.
      const bool cut_short = zlib.status.code() == Code::kDataLoss && main.status.code() == Code::kDataLoss &&
                             main.records.size() + 1 == zlib.records.size() && IsPrefix(main.records, zlib.records);
      const bool zlib_rejected =
          cut_short || (zlib.status.code() == Code::kDataLoss && IsPrefix(zlib.records, main.records));
      if (!same && !zlib_rejected) {
        Fail("zlib read " + std::to_string(zlib.records.size()) + " records then " + zlib.status.ToString() +
             " at " + std::to_string(zlib.offset) + "; ISA-L " + std::to_string(main.records.size()) + " then " +
             main.status.ToString() + " at " + std::to_string(main.offset));
      }
    }
  } else if (!options.skip_corrupt) {
    std::string error;
    const Outcome want = ReferenceRead(file, options.max_record_bytes, &error);
    bool same = want.records == main.records && want.status.code() == main.status.code() &&
                want.offset == main.offset;
    if (same && !want.status.ok() && want.status.code() == Code::kDataLoss) {
      same = main.status.message().find(": " + error + " at " + std::to_string(want.offset)) != std::string::npos;
    }
    if (!same) {
      Fail("the reference read " + std::to_string(want.records.size()) + " records then " + error + " at " +
           std::to_string(want.offset) + " (" + want.status.ToString() + "); the reader " +
           std::to_string(main.records.size()) + " then " + main.status.ToString() + " at " +
           std::to_string(main.offset));
    }
  }

  RecordReaderOptions flipped = options;
  flipped.skip_corrupt = !options.skip_corrupt;
  const Outcome other = ReadAll(file, flipped, /*copy=*/false);
  const Outcome& strict = options.skip_corrupt ? other : main;
  const Outcome& lenient = options.skip_corrupt ? main : other;
  if (!IsPrefix(strict.records, lenient.records)) {
    Fail("with skip_corrupt the reader read " + std::to_string(lenient.records.size()) +
         " records, not starting with the " + std::to_string(strict.records.size()) + " read without it");
  }
  if (strict.skipped != 0) Fail("skipped records without skip_corrupt");
  return 0;
}
