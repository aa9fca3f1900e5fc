#include "towerflow/data/record_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>

#include "towerflow/core/logging.h"
#include "towerflow/data/crc32c.h"
#include "towerflow/data/internal/inflater.h"
#include "towerflow/data/internal/read_ahead.h"

namespace tw {
namespace {

uint32_t DecodeFixed32(const uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint64_t DecodeFixed64(const uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  return static_cast<uint64_t>(DecodeFixed32(p)) | static_cast<uint64_t>(DecodeFixed32(p + 4)) << 32;
}

// The most a compressed stream may make the reader reserve ahead of the bytes it
// has actually produced: its declared record length is only a promise.
constexpr size_t kMaxUpfrontBytes = 64 << 20;
// A record that large cannot be addressed in memory whatever the file holds
// (TF: "record size too large").
constexpr uint64_t kMaxRecordLength =
    static_cast<uint64_t>(PTRDIFF_MAX) - kRecordHeaderSize - kRecordFooterSize;
// The most compressed input held in memory at once (the decoders count in 32 bits).
constexpr size_t kMaxInputChunk = size_t{1} << 30;

// Decoders running ahead, in the whole process. Each keeps a core busy and
// leaves one to its reader, so at most half the cores (at least one) run them;
// a reader opened beyond that decodes inline (with more readers than cores,
// more threads only add switching: two readers on two cores ran 15% slower
// with a decoder each).
std::atomic<int> ahead_decoders{0};

bool ReserveAheadDecoder() {
  static const int limit = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2));
  int n = ahead_decoders.load(std::memory_order_relaxed);
  while (n < limit) {
    if (ahead_decoders.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

}  // namespace

struct RecordReader::Decoder {
  std::unique_ptr<internal::Inflater> inflater;
  internal::InflateCursor cursor;
  std::unique_ptr<uint8_t[]> in;  // compressed input read from the file
  size_t in_cap = 0;
  size_t memory_pos = 0;  // compressed input taken from memory_ so far
  uint64_t fed = 0;       // compressed bytes handed to the decoder so far
  uint64_t out = 0;       // uncompressed bytes decoded so far
  bool stream_ended = false;
  // The input ended inside a deflate stream, not at a flush point.
  bool truncated = false;
  // A corrupt stream (sticky): the decoder's message and where it happened.
  std::string error;
  uint64_t error_in = 0;
  uint64_t error_out = 0;
  // With inflate_ahead: Inflate runs on this thread, which alone touches the
  // fields above (and fd_, file_read_) until it parks at an end or an error
  // (internal/read_ahead.h). Last, so that it stops first.
  std::unique_ptr<internal::ReadAhead> ahead;
};

RecordReader::RecordReader(std::string name, int fd, bool size_known, std::span<const uint8_t> bytes,
                           const RecordReaderOptions& options, std::string probe)
    : name_(std::move(name)), fd_(fd), options_(options), probe_(std::move(probe)) {
  if (options_.buffer_size == 0) options_.buffer_size = 1;
  if (options_.compression == Compression::kNone) {
    if (fd_ < 0) {
      in_place_ = true;
      pos_ = bytes.data();
      end_ = bytes.data() + bytes.size();
      size_known_ = true;
    } else {
      size_known_ = size_known;
    }
    return;
  }
  memory_ = bytes;
  decoder_ = std::make_unique<Decoder>();
  if (fd_ >= 0) {
    decoder_->in_cap = std::min(options_.buffer_size, kMaxInputChunk);
    decoder_->in.reset(new uint8_t[decoder_->in_cap]);
  }
  auto inflater = internal::Inflater::Create(options_.compression, options_.inflate_library);
  if (!inflater.ok()) {
    init_status_ = Status(inflater.status().code(), StrCat(name_, ": ", inflater.status().message()));
    return;
  }
  decoder_->inflater = std::move(inflater).value();
  if (options_.inflate_ahead && (fd_ < 0 || size_known) && ReserveAheadDecoder()) {
    decoder_->ahead = std::make_unique<internal::ReadAhead>(
        "tw/inflate", [this](uint8_t* dst, size_t n, size_t* got) { return Inflate(dst, n, got); }, options_.buffer_size,
        /*chunks=*/3);
    if (!decoder_->ahead->Start()) {  // no memory or no thread for it: decode inline
      decoder_->ahead.reset();
      ahead_decoders.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

RecordReader::~RecordReader() {
  if (decoder_ && decoder_->ahead) {
    decoder_->ahead.reset();  // it may be reading fd_
    ahead_decoders.fetch_sub(1, std::memory_order_relaxed);
  }
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Reads up to `n` bytes into `dst`, stopping early only at the end of the file;
// *got is how many arrived.
Status ReadUpTo(int fd, const std::string& path, uint8_t* dst, size_t n, size_t* got) {
  *got = 0;
  while (*got < n) {
    const ssize_t r = ::read(fd, dst + *got, n - *got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return internal::FileError(path, "read", errno);
    if (r == 0) break;
    *got += static_cast<size_t>(r);
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(const std::string& path,
                                                           const RecordReaderOptions& options) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return internal::FileError(path, "cannot open for reading", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return internal::FileError(path, "fstat", err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return internal::FileError(path, "cannot read records", EISDIR);
  }
  const bool regular = S_ISREG(st.st_mode);
  if (regular) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  RecordReaderOptions opened = options;
  std::string probe;
  if (options.detect_compression) {
    // Read once, from this descriptor: a second open of a pipe would find
    // these bytes gone, and of a FIFO would wait for a writer forever.
    uint8_t head[kRecordHeaderSize];
    size_t got = 0;
    if (Status s = ReadUpTo(fd, path, head, sizeof(head), &got); !s.ok()) {
      ::close(fd);
      return s;
    }
    opened.compression = DetectCompression(path, std::span<const uint8_t>(head, got));
    probe.assign(reinterpret_cast<const char*>(head), got);
  }
  std::unique_ptr<RecordReader> reader(new RecordReader(path, fd, regular, {}, opened, std::move(probe)));
  reader->file_size_ = regular ? static_cast<uint64_t>(st.st_size) : 0;
  TW_RETURN_IF_ERROR(reader->init_status_);
  return reader;
}

std::unique_ptr<RecordReader> RecordReader::FromBytes(std::span<const uint8_t> bytes,
                                                      const RecordReaderOptions& options, std::string name) {
  return std::unique_ptr<RecordReader>(new RecordReader(std::move(name), -1, true, bytes, options));
}

std::unique_ptr<RecordReader> RecordReader::FromBytes(std::string_view bytes,
                                                      const RecordReaderOptions& options, std::string name) {
  return FromBytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                   options, std::move(name));
}

bool RecordReader::decoding_ahead() const { return decoder_ && decoder_->ahead; }

Status RecordReader::ReadFile(uint8_t* dst, size_t n, size_t* got) {
  if (probe_pos_ < probe_.size()) {
    *got = std::min(n, probe_.size() - probe_pos_);
    std::memcpy(dst, probe_.data() + probe_pos_, *got);
    probe_pos_ += *got;
    file_read_ += *got;
    return Status::OK();
  }
  ssize_t r;
  do {
    r = ::read(fd_, dst, n);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return internal::FileError(name_, StrCat("read at byte ", file_read_), errno);
  *got = static_cast<size_t>(r);
  file_read_ += *got;
  return Status::OK();
}

Status RecordReader::Inflate(uint8_t* dst, size_t n, size_t* got) {
  Decoder& d = *decoder_;
  internal::Inflater& inflater = *d.inflater;
  internal::InflateCursor& c = d.cursor;
  *got = 0;
  if (!d.error.empty()) return Status::OK();
  d.truncated = false;
  c.next_out = dst;
  c.avail_out = n;
  bool input_over = false;  // no more input for now
  while (c.avail_out > 0) {
    if (c.avail_in == 0 && !input_over) {
      size_t fresh = 0;
      if (fd_ >= 0) {
        Status read = ReadFile(d.in.get(), d.in_cap, &fresh);
        if (!read.ok()) {
          if (c.avail_out != n) break;  // hand out what was decoded; the next call retries the read
          return read;
        }
        c.next_in = d.in.get();
      } else if (d.memory_pos < memory_.size()) {
        fresh = std::min(memory_.size() - d.memory_pos, kMaxInputChunk);
        c.next_in = memory_.data() + d.memory_pos;
        d.memory_pos += fresh;
      }
      if (fresh == 0) {
        input_over = true;
      } else {
        c.avail_in = fresh;
        d.fed += fresh;
      }
    }
    if (d.stream_ended) {
      // The input is over after a whole stream: a clean end. (The decoder may
      // still hold bytes it read ahead, which belong to the next member.)
      if (c.avail_in == 0 && inflater.HeldInput() == 0) break;
      // More input after a complete stream: the next member, as in `cat a.gz b.gz`.
      inflater.Reset();
      d.stream_ended = false;
    }
    // Even with the input over the decoder may produce more: bits it has already
    // taken in, or the rest of a match, that an earlier call left undecoded when
    // the output was full. So it runs until it makes no progress before the end
    // is decided; stopping at the end of the input instead lost the records in
    // those bytes when the reader's window was small (found by fuzz_record_reader).
    const size_t in_before = c.avail_in;
    const size_t out_before = c.avail_out;
    const size_t held_before = inflater.HeldInput();
    const internal::Inflater::Result result = inflater.Inflate(c);
    if (result == internal::Inflater::Result::kStreamEnd) {
      d.stream_ended = true;
      continue;
    }
    if (result == internal::Inflater::Result::kOk) {
      const bool progress =
          c.avail_in != in_before || c.avail_out != out_before || inflater.HeldInput() != held_before;
      if (!progress && (input_over || c.avail_in > 0)) {
        // No progress. With the input over, the decoder is drained: that is a
        // clean end before any input, or at a flush point (the decoder waits for
        // the next block header, byte-aligned, and has not seen the last block):
        // the state RecordWriter::Flush leaves, so a file still being written
        // reads as its records so far, as in TF. Anything else is a cut-off
        // stream. (No progress with input left cannot happen with output room;
        // it is treated the same way rather than looping.)
        d.truncated = !inflater.AtFlushPoint();
        break;
      }
      continue;
    }
    if (result == internal::Inflater::Result::kNoMemory) {
      if (c.avail_out != n) break;
      return errors::ResourceExhausted(name_, ": inflate: out of memory");
    }
    d.error = inflater.message();
    d.error_in = d.fed - c.avail_in - std::min<uint64_t>(inflater.HeldInput(), d.fed - c.avail_in);
    d.error_out = d.out + (n - c.avail_out);
    break;
  }
  *got = n - c.avail_out;
  d.out += *got;
  return Status::OK();
}

Status RecordReader::Produce(uint8_t* dst, size_t n, size_t* got) {
  *got = 0;
  if (decoder_ && decoder_->ahead) {
    TW_RETURN_IF_ERROR(decoder_->ahead->Read(dst, n, got));
  } else if (decoder_) {
    TW_RETURN_IF_ERROR(Inflate(dst, n, got));
  } else if (fd_ >= 0) {
    TW_RETURN_IF_ERROR(ReadFile(dst, n, got));
  }
  produced_ += *got;
  return Status::OK();
}

Status RecordReader::Fill(size_t need) {
  size_t have = available();
  if (have >= need || in_place_) return Status::OK();
  while (have < need) {
    const size_t want = std::max(need, options_.buffer_size);
    bool grow = want > cap_;
    // With no file size to check a declared length against, reserve at most
    // kMaxUpfrontBytes ahead, then grow only once the window is full of bytes
    // that actually arrived (doubling).
    if (grow && !size_known_ && have < cap_ && cap_ >= std::min(want, kMaxUpfrontBytes)) {
      grow = false;
    }
    if (grow) {
      size_t new_cap = want;
      if (!size_known_) new_cap = std::min(want, std::max(2 * cap_, kMaxUpfrontBytes));
      uint8_t* grown = new (std::nothrow) uint8_t[new_cap];
      if (grown == nullptr) {
        return errors::ResourceExhausted(name_, ": cannot allocate ", new_cap, " bytes for the record at ",
                                         offset_);
      }
      if (have > 0) std::memcpy(grown, pos_, have);
      buf_.reset(grown);
      cap_ = new_cap;
      pos_ = grown;
      end_ = grown + have;
    } else if (have == 0) {
      pos_ = end_ = buf_.get();
    } else if (pos_ != buf_.get()) {
      // Move the partial record to the front when the room behind it is too
      // small for it or for a large read; each byte moves at most once per fill.
      const size_t room = cap_ - static_cast<size_t>(end_ - buf_.get());
      if (room < need - have || room < options_.buffer_size / 2) {
        std::memmove(buf_.get(), pos_, have);
        pos_ = buf_.get();
        end_ = pos_ + have;
      }
    }
    uint8_t* write = buf_.get() + (end_ - buf_.get());
    size_t got = 0;
    TW_RETURN_IF_ERROR(Produce(write, cap_ - static_cast<size_t>(write - buf_.get()), &got));
    if (got == 0) break;
    end_ += got;
    have += got;
  }
  return Status::OK();
}

uint64_t RecordReader::KnownRemaining(bool refresh) {
  if (in_place_) return available();
  if (refresh) {
    struct stat st;
    if (::fstat(fd_, &st) == 0) file_size_ = static_cast<uint64_t>(st.st_size);
  }
  return available() + (file_size_ > file_read_ ? file_size_ - file_read_ : 0);
}

Status RecordReader::StreamError() const {
  if (!decoder_) return Status::OK();
  const Decoder& zl = *decoder_;
  const std::string_view kind = CompressionName(options_.compression);
  if (!zl.error.empty()) {
    return errors::DataLoss(name_, ": corrupted ", kind, " stream at compressed byte ", zl.error_in,
                            " (uncompressed byte ", zl.error_out, ") while reading the record at ", offset_,
                            ": ", zl.error);
  }
  if (zl.truncated) {
    return errors::DataLoss(name_, ": truncated ", kind, " stream: it ends at compressed byte ", zl.fed,
                            " (uncompressed byte ", produced_, ") while reading the record at ", offset_);
  }
  return Status::OK();
}

Status RecordReader::Examine(Frame* frame, uint64_t* length) {
  *length = 0;
  if (available() < kRecordHeaderSize) {
    TW_RETURN_IF_ERROR(Fill(kRecordHeaderSize));
    if (available() < kRecordHeaderSize) {
      TW_RETURN_IF_ERROR(StreamError());
      *frame = available() == 0 ? Frame::kEnd : Frame::kPartial;
      return Status::OK();
    }
  }
  const uint64_t len = DecodeFixed64(pos_);
  *length = len;
  if (MaskCrc(Crc32cValue(pos_, sizeof(uint64_t))) != DecodeFixed32(pos_ + sizeof(uint64_t))) {
    *frame = Frame::kLengthCrc;
    return Status::OK();
  }
  if (len > kMaxRecordLength || (options_.max_record_bytes != 0 && len > options_.max_record_bytes)) {
    *frame = Frame::kTooLarge;
    return Status::OK();
  }
  const size_t need = kRecordHeaderSize + static_cast<size_t>(len) + kRecordFooterSize;
  if (available() < need) {
    if (size_known_) {
      // Never allocate for bytes the file does not have: a crafted header can
      // declare 2^62 bytes with a valid length CRC.
      remaining_ = KnownRemaining(false);
      if (remaining_ < need) remaining_ = KnownRemaining(true);
      if (remaining_ < need) {
        *frame = Frame::kTooLong;
        return Status::OK();
      }
    }
    TW_RETURN_IF_ERROR(Fill(need));
    if (available() < need) {
      TW_RETURN_IF_ERROR(StreamError());
      *frame = Frame::kPartial;
      return Status::OK();
    }
  }
  const uint8_t* data = pos_ + kRecordHeaderSize;
  if (MaskCrc(Crc32cValue(data, static_cast<size_t>(len))) != DecodeFixed32(data + len)) {
    *frame = Frame::kDataCrc;
    return Status::OK();
  }
  *frame = Frame::kRecord;
  return Status::OK();
}

std::string RecordReader::CompressionHint() const {
  if (options_.compression != Compression::kNone || offset_ != 0 || available() < 2) return "";
  const Compression looks = DetectCompression("", std::span<const uint8_t>(pos_, available()));
  if (looks == Compression::kNone) return "";
  return StrCat(" (the file starts like a ", CompressionName(looks), " stream: read it with compression ",
                CompressionName(looks), ", or with detect_compression)");
}

Status RecordReader::FrameError(Frame frame, uint64_t length) const {
  switch (frame) {
    case Frame::kRecord:
      return Status::OK();
    case Frame::kEnd:
      return errors::OutOfRange("eof");
    case Frame::kPartial:
      if (available() < kRecordHeaderSize) {
        return errors::DataLoss(name_, ": truncated record at ", offset_, ": ", available(),
                                " bytes left, a record header takes ", kRecordHeaderSize);
      }
      return errors::DataLoss(name_, ": truncated record at ", offset_, ": ", available(),
                              " bytes left of a record of ", kRecordHeaderSize + length + kRecordFooterSize);
    case Frame::kTooLong:
      return errors::DataLoss(name_, ": truncated record at ", offset_, ": it declares ", length,
                              " data bytes but the file holds ", remaining_,
                              " bytes from the record's start", CompressionHint());
    case Frame::kTooLarge:
      if (options_.max_record_bytes == 0 || length > kMaxRecordLength) {
        return errors::DataLoss(name_, ": record size too large at ", offset_, ": it declares ", length,
                                " data bytes, more than memory can address");
      }
      return errors::DataLoss(name_, ": record size too large at ", offset_, ": it declares ", length,
                              " data bytes (max_record_bytes ", options_.max_record_bytes, ")");
    case Frame::kLengthCrc:
      return errors::DataLoss(name_, ": corrupted record at ", offset_, ": length CRC mismatch", CompressionHint());
    case Frame::kDataCrc:
      return errors::DataLoss(name_, ": corrupted record at ", offset_, ": data CRC mismatch (", length,
                              " data bytes)");
  }
  return errors::Internal(name_, ": unknown record frame");
}

Status RecordReader::Resync() {
  const uint64_t start = offset_;
  Consume(1);
  Frame frame;
  uint64_t length;
  while (true) {
    TW_RETURN_IF_ERROR(Examine(&frame, &length));
    if (frame == Frame::kRecord || frame == Frame::kEnd) break;
    if (frame == Frame::kPartial && available() < kRecordHeaderSize) {
      Consume(available());  // a tail too short to hold a header
      continue;
    }
    Consume(1);
  }
  ++skipped_records_;
  skipped_bytes_ += offset_ - start;
  if (frame == Frame::kRecord) {
    TW_LOG(WARNING) << name_ << ": skipped a corrupted record at " << start << ": " << offset_ - start
                    << " bytes, reading on at " << offset_;
  } else {
    TW_LOG(WARNING) << name_ << ": skipped a corrupted record at " << start << ": " << offset_ - start
                    << " bytes to the end of the file";
  }
  return Status::OK();
}

Status RecordReader::ReadRecordView(std::string_view* record) {
  TW_RETURN_IF_ERROR(init_status_);
  while (true) {
    Frame frame;
    uint64_t length;
    TW_RETURN_IF_ERROR(Examine(&frame, &length));
    if (frame == Frame::kRecord) {
      *record = std::string_view(reinterpret_cast<const char*>(pos_) + kRecordHeaderSize,
                                 static_cast<size_t>(length));
      Consume(kRecordHeaderSize + static_cast<size_t>(length) + kRecordFooterSize);
      ++records_read_;
      return Status::OK();
    }
    if (options_.skip_corrupt && (frame == Frame::kLengthCrc || frame == Frame::kDataCrc)) {
      TW_RETURN_IF_ERROR(Resync());
      continue;
    }
    return FrameError(frame, length);
  }
}

Status RecordReader::ReadRecord(std::string* record) {
  std::string_view view;
  TW_RETURN_IF_ERROR(ReadRecordView(&view));
  record->assign(view.data(), view.size());
  return Status::OK();
}

StatusOr<int64_t> CountRecords(const std::string& path, Compression compression) {
  RecordFileStats stats;
  TW_RETURN_IF_ERROR(VerifyFile(path, compression, &stats));
  return stats.records;
}

Status VerifyFile(const std::string& path, Compression compression, RecordFileStats* stats,
                  bool skip_corrupt) {
  RecordReaderOptions options;
  options.compression = compression;
  options.skip_corrupt = skip_corrupt;
  options.inflate_ahead = true;
  return VerifyFile(path, options, stats);
}

Status VerifyFile(const std::string& path, const RecordReaderOptions& options, RecordFileStats* stats) {
  RecordFileStats local;
  if (stats == nullptr) stats = &local;
  *stats = RecordFileStats();
  TW_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, RecordReader::Open(path, options));
  std::string_view record;
  Status status;
  while ((status = reader->ReadRecordView(&record)).ok()) {
    stats->data_bytes += record.size();
    stats->max_record_bytes = std::max<uint64_t>(stats->max_record_bytes, record.size());
  }
  stats->records = reader->records_read();
  stats->stream_bytes = reader->offset();
  stats->skipped_records = reader->skipped_records();
  stats->skipped_bytes = reader->skipped_bytes();
  if (!errors::IsOutOfRange(status)) return status;
  if (stats->skipped_records > 0) {
    return errors::DataLoss(path, ": ", stats->skipped_records, " corrupted record(s) skipped (",
                            stats->skipped_bytes, " bytes)");
  }
  return Status::OK();
}

StatusOr<Compression> DetectFileCompression(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return internal::FileError(path, "cannot open for reading", errno);
  uint8_t head[kRecordHeaderSize];
  size_t have = 0;
  Status read = ReadUpTo(fd, path, head, sizeof(head), &have);
  ::close(fd);
  if (!read.ok()) return read;
  return DetectCompression(path, std::span<const uint8_t>(head, have));
}

}  // namespace tw
