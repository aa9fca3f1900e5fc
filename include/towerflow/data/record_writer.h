// RecordWriter: writes a TFRecord file, the format TF 1.x's tf.python_io and
// tf.data read.
//
// A TFRecord file is records simply concatenated, with no file header:
//   uint64  length                  little-endian
//   uint32  masked CRC32C of the 8 length bytes
//   byte    data[length]
//   uint32  masked CRC32C of data
// With ZLIB or GZIP compression the WHOLE stream (headers and CRCs included) is
// one deflate stream, as TF writes it. Do not change: on-disk format
// (docs/formats.md; TF tensorflow/core/lib/io/record_writer.h).
//
// The writer owns its file descriptor and its buffers. It is thread-compatible:
// one thread at a time. After any write error every later call returns that
// error. The destructor closes the file; call Close() to see whether that worked.
#ifndef TOWERFLOW_DATA_RECORD_WRITER_H_
#define TOWERFLOW_DATA_RECORD_WRITER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "towerflow/core/status.h"

namespace tw {

// Bytes before and after each record's data.
inline constexpr size_t kRecordHeaderSize = sizeof(uint64_t) + sizeof(uint32_t);  // 12
inline constexpr size_t kRecordFooterSize = sizeof(uint32_t);                     // 4

enum class Compression { kNone, kZlib, kGzip };

// TF's compression_type strings: "", "ZLIB", "GZIP"; also accepted: "NONE" and the
// lowercase names ("zlib", "gzip", "none"). InvalidArgument naming the string
// and the accepted ones otherwise.
StatusOr<Compression> ParseCompression(std::string_view name);
// "", "ZLIB" or "GZIP": the string TF uses for `compression`.
std::string_view CompressionName(Compression compression);

// Guesses how a file is compressed from its first bytes (`head`, any length,
// may be empty) and its name. In order: a head that is a valid uncompressed
// TFRecord header (its length CRC checks) is kNone; gzip magic 1f 8b is kGzip; a
// zlib header (78 01/5e/9c/da, with its check bits) is kZlib; otherwise the
// extension decides (.gz/.gzip kGzip, .zlib/.zz kZlib); otherwise kNone. The
// header check comes first because an uncompressed file whose first record is
// 376 bytes long starts with 78 01.
Compression DetectCompression(std::string_view path, std::span<const uint8_t> head);

// Appends one framed record (header, data, footer) to `out`: the exact bytes an
// uncompressed RecordWriter writes. For tests, fuzz seeds and in-memory files.
void AppendFramedRecord(std::string_view data, std::string* out);

struct RecordWriterOptions {
  Compression compression = Compression::kNone;
  // Bytes buffered before a write(2); for compressed files also the size of the
  // deflate output buffer. Values below 64 are raised to 64.
  size_t buffer_size = 256 << 10;
  // zlib level, -1 (Z_DEFAULT_COMPRESSION) or 0..9.
  int compression_level = -1;
};

class RecordWriter {
 public:
  // Creates (or truncates) `path`. NotFound / PermissionDenied / ... naming the
  // file when it cannot be opened; InvalidArgument for a bad compression level.
  static StatusOr<std::unique_ptr<RecordWriter>> Open(const std::string& path,
                                                      const RecordWriterOptions& options = {});
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Appends one record. The bytes may stay buffered until Flush() or Close().
  // FailedPrecondition after Close(); the file's write error otherwise.
  [[nodiscard]] Status WriteRecord(std::string_view data);

  // Hands everything written so far to the operating system (not fsync). For a
  // compressed file this is a zlib Z_SYNC_FLUSH, so a reader of the file sees
  // every record written so far and then a clean end.
  [[nodiscard]] Status Flush();

  // Flushes, finishes the compressed stream and closes the file. Calling it again
  // returns the first call's result.
  [[nodiscard]] Status Close();

  // Bytes of the uncompressed record stream written so far: the offset at which
  // the next record starts.
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, int fd, const RecordWriterOptions& options);
  Status InitCompression();
  // Appends bytes of the uncompressed stream.
  Status Append(const uint8_t* data, size_t n);
  // Sends bytes of the uncompressed stream on: written out, or deflated with
  // `flush` (a zlib flush mode).
  Status Emit(const uint8_t* data, size_t n, int flush);
  Status EmitBuffer(int flush);
  Status WriteFd(const uint8_t* data, size_t n);
  Status Fail(Status status);

  struct Zlib;
  std::string path_;
  int fd_ = -1;
  RecordWriterOptions options_;
  std::unique_ptr<uint8_t[]> buf_;  // uncompressed bytes not yet emitted
  size_t buf_used_ = 0;
  std::unique_ptr<uint8_t[]> out_;  // deflate output, compressed only
  std::unique_ptr<Zlib> zlib_;
  uint64_t offset_ = 0;
  bool closed_ = false;
  Status status_;  // first error; sticky
};

namespace internal {
// core/status.h's FileError, by the name the data module's files use.
using ::tw::FileError;
}  // namespace internal

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_RECORD_WRITER_H_
