// RecordReader: reads the records of a TFRecord file (framing in
// record_writer.h; docs/formats.md), plain or ZLIB/GZIP compressed, checking
// both CRCs of every record.
//
// A reader reads a file through one growable window of uncompressed bytes,
// filled in large blocks (and through a bounded input buffer and a streaming
// decoder, ISA-L's or zlib's, when compressed); a record is handed out from the window without per-record
// allocation. Over bytes in memory (tests, fuzzing) an uncompressed reader reads
// the caller's bytes in place. Nothing is global: readers are independent. A
// reader is thread-compatible: one thread at a time (with inflate_ahead its
// decoder runs on a thread of its own, which the reader owns and joins).
//
// Errors (TF's codes and texts; DataLoss messages start with the file name):
//   OutOfRange "eof"                         clean end at a record boundary
//   DataLoss "<file>: truncated record at N"  partial header, data or footer
//   DataLoss "<file>: corrupted record at N"  length or data CRC mismatch
//   DataLoss "<file>: record size too large at N"  above max_record_bytes
//   DataLoss "<file>: corrupted GZIP stream at compressed byte C (uncompressed
//            byte U) while reading the record at N: <the decoder's message>"
//   DataLoss "<file>: truncated GZIP stream: ..."  (likewise ZLIB)
// N is the byte offset of the record's start in the uncompressed stream. A
// compressed stream that ends at a flush point (RecordWriter::Flush) and a record
// boundary ends cleanly, as in TF, so a file still being written reads. A
// failed read consumes nothing (skip_corrupt aside): offset() is unchanged and a
// retry reads the same record again (which succeeds if a truncated file has
// grown since).
#ifndef TOWERFLOW_DATA_RECORD_READER_H_
#define TOWERFLOW_DATA_RECORD_READER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "towerflow/core/status.h"
#include "towerflow/data/record_writer.h"

namespace tw {

// The library that decodes ZLIB and GZIP streams. On whole and flushed streams
// both give the same records and errors; on broken ones both fail with DataLoss,
// possibly a record apart (data/internal/inflater.h says when). kAuto
// is ISA-L (igzip, about twice zlib's speed) when towerflow was built with it
// (CMake TOWERFLOW_ISAL), zlib otherwise. Asking for ISA-L in a build without
// it fails the reader with Unimplemented.
enum class InflateLibrary { kAuto, kZlib, kIsal };
bool InflateLibraryAvailable(InflateLibrary library);
// "zlib" or "isa-l"; kAuto names the library it picks.
std::string_view InflateLibraryName(InflateLibrary library);

struct RecordReaderOptions {
  Compression compression = Compression::kNone;
  // Open only: `compression` is ignored and detected instead, by
  // DetectCompression (record_writer.h) on the file's first bytes and its name.
  // The bytes are read through the reader's own open file and handed to it, so
  // the file is opened once: pipes, FIFOs and /dev/stdin read as streams.
  bool detect_compression = false;
  // Bytes asked of each read(2), and the size of the compressed input buffer. Any
  // value >= 1 works; the window grows to hold the largest record seen.
  size_t buffer_size = 256 << 10;
  // Opt-in: a record whose length or data CRC is wrong is skipped instead of
  // returned as DataLoss. The reader scans forward byte by byte for the next
  // position whose length CRC and data CRC both check, logs a warning naming the
  // file and offsets, and counts the skip. Truncation and broken compressed
  // streams are still errors.
  bool skip_corrupt = false;
  // Records that declare more bytes are DataLoss "record size too large";
  // 0 means no limit beyond what the file holds. Meant for compressed streams
  // (where the file size bounds nothing) and fuzzing.
  uint64_t max_record_bytes = 0;
  // The decoder of compressed streams (above).
  InflateLibrary inflate_library = InflateLibrary::kAuto;
  // Compressed regular files and memory: decode on a thread of the reader's own,
  // up to three buffer_size chunks ahead of the records handed out, so that
  // decompression overlaps the caller's work on the records. The records,
  // errors, offsets and retries are those of a reader without it; it costs a
  // thread per open reader and 3 x buffer_size bytes. Ignored for plain streams
  // and for files that are not regular (a pipe could block the thread).
  bool inflate_ahead = false;
};

class RecordReader {
 public:
  // NotFound / PermissionDenied / ... naming the file when it cannot be opened.
  static StatusOr<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                                      const RecordReaderOptions& options = {});
  // Reads `bytes` as a file named `name`. REQUIRES: `bytes` outlives the reader.
  static std::unique_ptr<RecordReader> FromBytes(std::span<const uint8_t> bytes,
                                                 const RecordReaderOptions& options = {},
                                                 std::string name = "<memory>");
  static std::unique_ptr<RecordReader> FromBytes(std::string_view bytes,
                                                 const RecordReaderOptions& options = {},
                                                 std::string name = "<memory>");
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // Reads the next record into *record, reusing its capacity. OK, OutOfRange
  // "eof", or the errors listed above; on error *record is unspecified.
  [[nodiscard]] Status ReadRecord(std::string* record);

  // As ReadRecord, without a copy: *record points into the reader's window and
  // stays valid until the next call on this reader.
  [[nodiscard]] Status ReadRecordView(std::string_view* record);

  // Offset in the uncompressed stream of the next record to read.
  uint64_t offset() const { return offset_; }
  int64_t records_read() const { return records_read_; }
  // With skip_corrupt: corrupt stretches skipped, and their bytes.
  int64_t skipped_records() const { return skipped_records_; }
  uint64_t skipped_bytes() const { return skipped_bytes_; }
  const std::string& name() const { return name_; }
  // The compression the reader decodes (the detected one with detect_compression).
  Compression compression() const { return options_.compression; }
  // Whether a thread of the reader's own decodes ahead (inflate_ahead was asked
  // for, the stream is compressed and a decoder slot was free).
  bool decoding_ahead() const;

 private:
  // What starts at the window's front.
  enum class Frame {
    kRecord,     // a whole record whose CRCs check
    kEnd,        // no bytes at all: a clean end
    kPartial,    // a partial header, data or footer at the end of the stream
    kTooLong,    // declares more bytes than the rest of the file holds
    kTooLarge,   // declares more than max_record_bytes or than memory can address
    kLengthCrc,  // the length CRC does not check
    kDataCrc,    // the data CRC does not check
  };
  struct Decoder;

  RecordReader(std::string name, int fd, bool size_known, std::span<const uint8_t> bytes,
               const RecordReaderOptions& options, std::string probe = {});
  // Classifies the bytes at the window's front, reading as many as the record
  // needs; consumes nothing. Non-OK only for I/O, memory and decompression
  // errors.
  Status Examine(Frame* frame, uint64_t* length);
  Status FrameError(Frame frame, uint64_t length) const;
  // For a plain reader failing on the first record of a file that starts like
  // a GZIP or ZLIB stream: " (the file starts like a GZIP stream: ...)"; else "".
  std::string CompressionHint() const;
  // The compressed stream's error when it is broken or cut short; OK otherwise.
  Status StreamError() const;
  // Skips from a corrupt record to the next valid one (or the end).
  Status Resync();
  // Tries to have `need` bytes in the window; fewer only at the end of input.
  Status Fill(size_t need);
  // Up to n next bytes of the uncompressed stream; *got == 0 at its end.
  Status Produce(uint8_t* dst, size_t n, size_t* got);
  Status Inflate(uint8_t* dst, size_t n, size_t* got);
  Status ReadFile(uint8_t* dst, size_t n, size_t* got);
  // Bytes the stream still holds from the window's front, when that is known.
  uint64_t KnownRemaining(bool refresh);
  void Consume(size_t n) {
    pos_ += n;
    offset_ += n;
  }
  size_t available() const { return static_cast<size_t>(end_ - pos_); }

  std::string name_;
  int fd_ = -1;  // -1 when reading memory
  RecordReaderOptions options_;
  Status init_status_;
  // Uncompressed bytes [pos_, end_) start at stream offset offset_. They lie in
  // buf_ (capacity cap_), or in the caller's bytes for an uncompressed memory
  // reader, which never reads more.
  std::unique_ptr<uint8_t[]> buf_;
  size_t cap_ = 0;
  const uint8_t* pos_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool in_place_ = false;
  uint64_t offset_ = 0;
  // Uncompressed regular files and memory: the stream's size is known, so a
  // declared length is checked against it before anything is allocated.
  bool size_known_ = false;
  uint64_t file_size_ = 0;           // st_size at the last fstat
  uint64_t file_read_ = 0;           // bytes read from fd_ so far
  // With detect_compression: the first bytes of the file, read to detect its
  // compression, which ReadFile hands out before reading fd_ again.
  std::string probe_;
  size_t probe_pos_ = 0;
  std::span<const uint8_t> memory_;  // a compressed memory reader's input
  std::unique_ptr<Decoder> decoder_;  // compressed streams only
  uint64_t produced_ = 0;  // uncompressed bytes produced so far
  int64_t records_read_ = 0;
  int64_t skipped_records_ = 0;
  uint64_t skipped_bytes_ = 0;
  // Details for FrameError of the last kTooLong.
  uint64_t remaining_ = 0;
};

// Counts the records of a file, checking every CRC; the first error otherwise.
StatusOr<int64_t> CountRecords(const std::string& path, Compression compression);

// What VerifyFile saw.
struct RecordFileStats {
  int64_t records = 0;        // valid records
  uint64_t data_bytes = 0;    // their payload bytes
  uint64_t stream_bytes = 0;  // uncompressed bytes examined
  uint64_t max_record_bytes = 0;
  int64_t skipped_records = 0;  // with skip_corrupt
  uint64_t skipped_bytes = 0;
};

// Reads every record of `path` and checks both CRCs. Returns OK for a clean file,
// else the first error, with *stats (if not null) describing what was read up to
// it. With `skip_corrupt` reading goes on past corrupt records; the result is
// then DataLoss "<file>: N corrupted record(s) skipped (B bytes)" if any were.
Status VerifyFile(const std::string& path, Compression compression, RecordFileStats* stats = nullptr,
                  bool skip_corrupt = false);
// As VerifyFile, reading with `options` (detect_compression, skip_corrupt,
// inflate_ahead and the rest as the caller sets them).
Status VerifyFile(const std::string& path, const RecordReaderOptions& options, RecordFileStats* stats = nullptr);

// DetectCompression (record_writer.h) on the file's first bytes and its name.
// Opens the file and closes it: for regular files (a pipe or FIFO would lose
// the bytes read; open those with RecordReaderOptions::detect_compression).
StatusOr<Compression> DetectFileCompression(const std::string& path);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_RECORD_READER_H_
