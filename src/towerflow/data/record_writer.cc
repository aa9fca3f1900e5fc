#include "towerflow/data/record_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "towerflow/core/logging.h"
#include "towerflow/data/crc32c.h"

namespace tw {

namespace {

void EncodeFixed32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void EncodeFixed64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t DecodeFixed32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// The record header: little-endian length, then the masked CRC of those 8 bytes.
void EncodeHeader(uint64_t length, uint8_t header[kRecordHeaderSize]) {
  EncodeFixed64(header, length);
  EncodeFixed32(header + 8, MaskCrc(Crc32cValue(header, 8)));
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    char c = s[s.size() - suffix.size() + i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != suffix[i]) return false;
  }
  return true;
}

// Window bits as TF's ZlibCompressionOptions: 15 for a zlib header and adler32
// trailer, 15 + 16 for a gzip header and crc32 trailer.
constexpr int kZlibWindowBits = 15;
constexpr int kGzipWindowBits = 15 + 16;
constexpr int kMemLevel = 9;
constexpr size_t kMinBufferSize = 64;

}  // namespace


StatusOr<Compression> ParseCompression(std::string_view name) {
  if (name.empty() || name == "NONE" || name == "none") return Compression::kNone;
  if (name == "ZLIB" || name == "zlib") return Compression::kZlib;
  if (name == "GZIP" || name == "gzip") return Compression::kGzip;
  return errors::InvalidArgument("unknown compression type '", name,
                                 "': expected \"\" (none), \"ZLIB\" or \"GZIP\"");
}

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kGzip:
      return "GZIP";
    case Compression::kNone:
      break;
  }
  return "";
}

Compression DetectCompression(std::string_view path, std::span<const uint8_t> head) {
  if (head.size() >= kRecordHeaderSize &&
      MaskCrc(Crc32cValue(head.data(), 8)) == DecodeFixed32(head.data() + 8)) {
    return Compression::kNone;
  }
  if (head.size() >= 2) {
    if (head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
    // RFC 1950: CM = 8 (deflate), CINFO = 7 (32 KiB window), and the 16-bit
    // header a multiple of 31: 78 01, 78 5e, 78 9c, 78 da.
    if (head[0] == 0x78 && ((head[0] << 8) | head[1]) % 31 == 0) return Compression::kZlib;
  }
  if (EndsWith(path, ".gz") || EndsWith(path, ".gzip")) return Compression::kGzip;
  if (EndsWith(path, ".zlib") || EndsWith(path, ".zz")) return Compression::kZlib;
  return Compression::kNone;
}

void AppendFramedRecord(std::string_view data, std::string* out) {
  uint8_t header[kRecordHeaderSize];
  EncodeHeader(data.size(), header);
  uint8_t footer[kRecordFooterSize];
  EncodeFixed32(footer, MaskCrc(Crc32cValue(data)));
  out->append(reinterpret_cast<const char*>(header), sizeof(header));
  out->append(data);
  out->append(reinterpret_cast<const char*>(footer), sizeof(footer));
}

struct RecordWriter::Zlib {
  z_stream z{};
  bool initialized = false;
};

StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Open(const std::string& path,
                                                           const RecordWriterOptions& options) {
  if (options.compression_level < -1 || options.compression_level > 9) {
    return errors::InvalidArgument(path, ": compression level ", options.compression_level,
                                   " is not -1 (default) or 0..9");
  }
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return internal::FileError(path, "cannot open for writing", errno);
  std::unique_ptr<RecordWriter> writer(new RecordWriter(path, fd, options));
  TW_RETURN_IF_ERROR(writer->InitCompression());
  return writer;
}

RecordWriter::RecordWriter(std::string path, int fd, const RecordWriterOptions& options)
    : path_(std::move(path)), fd_(fd), options_(options) {
  if (options_.buffer_size < kMinBufferSize) options_.buffer_size = kMinBufferSize;
  buf_.reset(new uint8_t[options_.buffer_size]);
}

Status RecordWriter::InitCompression() {
  if (options_.compression == Compression::kNone) return Status::OK();
  zlib_ = std::make_unique<Zlib>();
  out_.reset(new uint8_t[options_.buffer_size]);
  const int window_bits = options_.compression == Compression::kGzip ? kGzipWindowBits : kZlibWindowBits;
  const int rc = deflateInit2(&zlib_->z, options_.compression_level, Z_DEFLATED, window_bits, kMemLevel,
                              Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    return Fail(rc == Z_MEM_ERROR ? errors::ResourceExhausted(path_, ": deflateInit2: out of memory")
                                  : errors::Internal(path_, ": deflateInit2 failed: ", rc));
  }
  zlib_->initialized = true;
  return Status::OK();
}

RecordWriter::~RecordWriter() {
  if (!closed_) {
    Status s = Close();
    if (!s.ok()) TW_LOG(ERROR) << "RecordWriter closed by its destructor: " << s.ToString();
  }
}

Status RecordWriter::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
  return status_;
}

Status RecordWriter::WriteFd(const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Fail(internal::FileError(path_, "write", errno));
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status RecordWriter::Emit(const uint8_t* data, size_t n, int flush) {
  if (!zlib_) return WriteFd(data, n);
  z_stream& z = zlib_->z;
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = 0;
  // avail_in is 32 bits: feed huge records in pieces.
  constexpr size_t kMaxChunk = 1u << 30;
  while (true) {
    if (z.avail_in == 0 && n > 0) {
      const size_t chunk = n < kMaxChunk ? n : kMaxChunk;
      z.avail_in = static_cast<uInt>(chunk);
      n -= chunk;
    }
    const int piece_flush = n > 0 ? Z_NO_FLUSH : flush;
    z.next_out = out_.get();
    z.avail_out = static_cast<uInt>(options_.buffer_size);
    const int rc = deflate(&z, piece_flush);
    // Z_BUF_ERROR: no progress was possible, i.e. nothing left to do (a second
    // flush with no new data).
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      return Fail(errors::Internal(path_, ": deflate failed (", rc, ") ", z.msg ? z.msg : ""));
    }
    TW_RETURN_IF_ERROR(WriteFd(out_.get(), options_.buffer_size - z.avail_out));
    // zlib's contract: call again while the output buffer comes back full; a
    // Z_FINISH that has room left in the output buffer returned Z_STREAM_END.
    if (z.avail_out == 0 || z.avail_in > 0 || n > 0) continue;
    break;
  }
  return Status::OK();
}

Status RecordWriter::EmitBuffer(int flush) {
  if (buf_used_ == 0 && flush == Z_NO_FLUSH) return Status::OK();
  const size_t n = buf_used_;
  buf_used_ = 0;
  return Emit(buf_.get(), n, flush);
}

Status RecordWriter::Append(const uint8_t* data, size_t n) {
  const size_t room = options_.buffer_size - buf_used_;
  if (n <= room) {
    if (n > 0) std::memcpy(buf_.get() + buf_used_, data, n);
    buf_used_ += n;
    return Status::OK();
  }
  TW_RETURN_IF_ERROR(EmitBuffer(Z_NO_FLUSH));
  // Large pieces skip the copy.
  if (n >= options_.buffer_size) return Emit(data, n, Z_NO_FLUSH);
  std::memcpy(buf_.get(), data, n);
  buf_used_ = n;
  return Status::OK();
}

Status RecordWriter::WriteRecord(std::string_view data) {
  if (closed_) return errors::FailedPrecondition(path_, ": WriteRecord after Close");
  if (!status_.ok()) return status_;
  uint8_t header[kRecordHeaderSize];
  EncodeHeader(data.size(), header);
  uint8_t footer[kRecordFooterSize];
  EncodeFixed32(footer, MaskCrc(Crc32cValue(data)));
  TW_RETURN_IF_ERROR(Append(header, sizeof(header)));
  TW_RETURN_IF_ERROR(Append(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  TW_RETURN_IF_ERROR(Append(footer, sizeof(footer)));
  offset_ += kRecordHeaderSize + data.size() + kRecordFooterSize;
  return Status::OK();
}

Status RecordWriter::Flush() {
  if (closed_) return errors::FailedPrecondition(path_, ": Flush after Close");
  if (!status_.ok()) return status_;
  return EmitBuffer(zlib_ ? Z_SYNC_FLUSH : Z_NO_FLUSH);
}

Status RecordWriter::Close() {
  if (closed_) return status_;
  closed_ = true;
  if (status_.ok()) EmitBuffer(zlib_ ? Z_FINISH : Z_NO_FLUSH).IgnoreError();  // kept in status_
  if (zlib_ && zlib_->initialized) {
    deflateEnd(&zlib_->z);
    zlib_->initialized = false;
  }
  if (fd_ >= 0) {
    // close(2) can report a delayed write error (NFS, quotas); EINTR must not be
    // retried on Linux, the descriptor is gone either way.
    if (::close(fd_) != 0 && errno != EINTR) {
      Fail(internal::FileError(path_, "close", errno)).IgnoreError();
    }
    fd_ = -1;
  }
  return status_;
}

}  // namespace tw
