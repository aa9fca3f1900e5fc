#include "towerflow/data/internal/inflater.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>

#if defined(TOWERFLOW_HAVE_ISAL)
#include <isa-l/igzip_lib.h>
#endif

namespace tw {

bool InflateLibraryAvailable(InflateLibrary library) {
  switch (library) {
    case InflateLibrary::kAuto:
    case InflateLibrary::kZlib:
      return true;
    case InflateLibrary::kIsal:
#if defined(TOWERFLOW_HAVE_ISAL)
      return true;
#else
      return false;
#endif
  }
  return false;
}

std::string_view InflateLibraryName(InflateLibrary library) {
  switch (library) {
    case InflateLibrary::kAuto:
      return InflateLibraryAvailable(InflateLibrary::kIsal) ? "isa-l" : "zlib";
    case InflateLibrary::kZlib:
      return "zlib";
    case InflateLibrary::kIsal:
      return "isa-l";
  }
  return "?";
}

namespace internal {
namespace {

// Both libraries count in 32 bits.
constexpr size_t kMaxStep = size_t{1} << 30;

// Points a library's stream (a z_stream or an inflate_state: the same four
// fields) at the cursor, at most kMaxStep bytes each way, runs `call` and says
// how many bytes it took and made. Advancing the cursor is the caller's.
template <typename Stream, typename Call>
int RunOn(Stream& s, const InflateCursor& c, Call&& call, size_t* took, size_t* made) {
  const auto in = static_cast<decltype(s.avail_in)>(std::min(c.avail_in, kMaxStep));
  const auto out = static_cast<decltype(s.avail_out)>(std::min(c.avail_out, kMaxStep));
  s.next_in = const_cast<decltype(s.next_in)>(c.next_in);
  s.avail_in = in;
  s.next_out = c.next_out;
  s.avail_out = out;
  const int rc = call();
  *took = in - s.avail_in;
  *made = out - s.avail_out;
  return rc;
}

void Advance(InflateCursor& c, size_t took, size_t made) {
  c.next_in += took;
  c.avail_in -= took;
  c.next_out += made;
  c.avail_out -= made;
}

class ZlibInflater final : public Inflater {
 public:
  ~ZlibInflater() override {
    if (initialized_) inflateEnd(&z_);
  }

  Status Init(Compression compression) {
    // As TF's ZlibCompressionOptions: 15 window bits, + 16 for the gzip wrapper.
    const int window_bits = compression == Compression::kGzip ? 15 + 16 : 15;
    const int rc = inflateInit2(&z_, window_bits);
    if (rc == Z_MEM_ERROR) return errors::ResourceExhausted("inflateInit2: out of memory");
    if (rc != Z_OK) return errors::Internal("inflateInit2 failed (", rc, ")");
    initialized_ = true;
    return Status::OK();
  }

  Result Inflate(InflateCursor& c) override {
    size_t took = 0, made = 0;
    const int rc = RunOn(z_, c, [&] { return inflate(&z_, Z_NO_FLUSH); }, &took, &made);
    Advance(c, took, made);
    // z.data_type after a call without progress is no guide: inflate leaves its
    // block-boundary state on entry.
    if (took != 0 || made != 0) data_type_ = z_.data_type;
    if (rc == Z_STREAM_END) return Result::kStreamEnd;
    if (rc == Z_OK || rc == Z_BUF_ERROR) return Result::kOk;
    if (rc == Z_MEM_ERROR) return Result::kNoMemory;
    message_ = z_.msg != nullptr ? z_.msg : zError(rc);
    return Result::kError;
  }

  void Reset() override {
    inflateReset(&z_);
    data_type_ = 0;
  }

  bool AtFlushPoint() const override {
    // data_type: 128 at a block boundary, 64 in the last block, low bits unused.
    const int type = data_type_;
    return z_.total_in == 0 || ((type & 128) != 0 && (type & 64) == 0 && (type & 7) == 0);
  }

  size_t HeldInput() const override { return 0; }  // zlib keeps nothing back
  std::string message() const override { return message_; }

 private:
  z_stream z_{};
  bool initialized_ = false;
  int data_type_ = 0;
  std::string message_;
};

#if defined(TOWERFLOW_HAVE_ISAL)
// ISA-L decodes as zlib does, with three differences this class makes up for:
//   - After a ZLIB member's checksum the decoder may hold up to 4 bytes it read
//     ahead, which belong to the next member. They are handed back: the cursor
//     is rewound when they came in this call, and kept in pending_ (fed first to
//     the next member) otherwise.
//   - On a corrupt block ISA-L returns at once and leaves output it had already
//     decoded in its own buffer; zlib hands out everything before the bad
//     symbol. That output is handed out first, then the error.
//   - Two header checks zlib makes and ISA-L does not: reserved GZIP flag bits
//     ("unknown header flags set") and a ZLIB window above 32 KiB ("invalid
//     window size").
class IsalInflater final : public Inflater {
 public:
  explicit IsalInflater(Compression compression) : gzip_(compression == Compression::kGzip) { Start(); }

  Result Inflate(InflateCursor& c) override {
    if (error_ != 0) return Drain(c);
    if (pending_.empty()) return Step(c, &pending_);
    const std::string feed = std::move(pending_);
    pending_.clear();
    InflateCursor p{reinterpret_cast<const uint8_t*>(feed.data()), feed.size(), c.next_out, c.avail_out};
    std::string leftover;
    const Result result = Step(p, &leftover);
    c.next_out = p.next_out;
    c.avail_out = p.avail_out;
    pending_ = leftover + feed.substr(feed.size() - p.avail_in);
    // The held bytes went in (a header, say) with nothing to show for it yet:
    // go on with the cursor's own input in the same call, so that the caller
    // sees progress wherever zlib would.
    if (result == Result::kOk && pending_.empty() && c.avail_out > 0) return Step(c, &pending_);
    return result;
  }

  void Reset() override { Start(); }  // pending_ stays: it is the next member's

  bool AtFlushPoint() const override {
    // wrapper_flag: the gzip or zlib header has been read. Between blocks the
    // state is NEW_HDR, or HDR once the decoder has looked for the next header
    // and found no input; read_in_length and tmp_in_size count the bits and
    // bytes taken in but not decoded (a partial header among them).
    const bool between_blocks = s_.block_state == ISAL_BLOCK_NEW_HDR || s_.block_state == ISAL_BLOCK_HDR;
    return pending_.empty() && (taken_ == 0 || (s_.wrapper_flag != 0 && between_blocks && s_.bfinal == 0 &&
                                                s_.read_in_length == 0 && s_.tmp_in_size == 0));
  }

  size_t HeldInput() const override {
    return static_cast<size_t>(std::max(s_.read_in_length, 0) / CHAR_BIT) + static_cast<size_t>(s_.tmp_in_size) +
           pending_.size();
  }

  std::string message() const override { return message_; }

 private:
  void Start() {
    isal_inflate_init(&s_);
    s_.crc_flag = gzip_ ? ISAL_GZIP : ISAL_ZLIB;
    taken_ = 0;
  }

  // One isal_inflate call on `c`. At the end of a member, bytes read past it
  // that did not come from `c` in this call go to *leftover.
  Result Step(InflateCursor& c, std::string* leftover) {
    const uint8_t* in_start = c.next_in;
    size_t took = 0, made = 0;
    const int rc = RunOn(s_, c, [&] { return isal_inflate(&s_); }, &took, &made);
    size_t header_at = 0;
    const char* header_error = CheckHeader(in_start, took, &header_at);
    taken_ += took;
    Advance(c, took, 0);
    if (header_error != nullptr) {  // zlib stops at the header: no output
      error_ = ISAL_INVALID_WRAPPER;
      message_ = header_error;
      s_.tmp_out_processed = s_.tmp_out_valid;
      c.next_in = in_start + header_at;  // the error's position: the header's byte
      c.avail_in += took - header_at;
      return Result::kError;
    }
    Advance(c, 0, made);
    if (rc < 0 || rc == ISAL_NEED_DICT) {
      error_ = rc;
      message_ = Describe(rc);
      return Drain(c);
    }
    if (s_.block_state != ISAL_BLOCK_FINISH) return Result::kOk;
    const size_t ahead = static_cast<size_t>(std::max(s_.read_in_length, 0) / CHAR_BIT);
    if (ahead <= took) {
      c.next_in -= ahead;
      c.avail_in += ahead;
    } else {
      for (size_t i = 0; i < ahead; ++i) leftover->push_back(static_cast<char>(s_.read_in >> (CHAR_BIT * i)));
    }
    taken_ -= ahead;
    s_.read_in = 0;
    s_.read_in_length = 0;
    return Result::kStreamEnd;
  }

  // The header checks zlib makes beyond ISA-L's, on the member's bytes
  // [taken_, taken_ + n) that lie at `p`, made when zlib makes them: once the
  // gzip header's FLG byte (3) or the zlib header's second byte (1) is in.
  // *at: the offending byte's index in p.
  const char* CheckHeader(const uint8_t* p, size_t n, size_t* at) {
    if (!gzip_ && taken_ == 0 && n > 0) cmf_ = p[0];
    const uint64_t last = gzip_ ? 3 : 1;
    if (taken_ > last || taken_ + n <= last) return nullptr;
    const uint8_t byte = p[last - taken_];
    *at = static_cast<size_t>(last - taken_);
    if (gzip_) return (byte & 0xe0) != 0 ? "unknown header flags set" : nullptr;
    // zlib: the header check, the method, then the window; ISA-L reports the
    // first two itself.
    const bool checked = (cmf_ * 256 + byte) % 31 == 0 && (cmf_ & 0x0f) == 8;
    if (checked && (cmf_ >> 4) + 8 > 15) {
      if (*at > 0) --*at;  // the CMF byte, when it came in this call
      return "invalid window size";
    }
    return nullptr;
  }

  // Output decoded before the error, then the error.
  Result Drain(InflateCursor& c) {
    const size_t left = static_cast<size_t>(s_.tmp_out_valid - s_.tmp_out_processed);
    if (left == 0) return Result::kError;
    const size_t n = std::min(left, c.avail_out);
    std::memcpy(c.next_out, s_.tmp_out_buffer + s_.tmp_out_processed, n);
    s_.tmp_out_processed += static_cast<int32_t>(n);
    c.next_out += n;
    c.avail_out -= n;
    return Result::kOk;
  }

  static std::string Describe(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK:
        return "invalid block type or block header";
      case ISAL_INVALID_SYMBOL:
        return "invalid literal/length or distance code";
      case ISAL_INVALID_LOOKBACK:
        return "invalid distance too far back";
      case ISAL_INVALID_WRAPPER:
        return "incorrect header check";
      case ISAL_UNSUPPORTED_METHOD:
        return "unknown compression method";
      case ISAL_INCORRECT_CHECKSUM:
        return "incorrect header or data check";
      case ISAL_NEED_DICT:
        return "the stream needs a preset dictionary";
      default:
        return "isal_inflate error " + std::to_string(rc);
    }
  }

  const bool gzip_;
  inflate_state s_{};
  uint64_t taken_ = 0;   // compressed bytes of this member taken so far
  unsigned cmf_ = 0;     // a zlib member's first header byte
  std::string pending_;  // the next member's first bytes, read ahead
  int error_ = 0;        // sticky once set
  std::string message_;
};
#endif

}  // namespace

StatusOr<std::unique_ptr<Inflater>> Inflater::Create(Compression compression, InflateLibrary library) {
  if (compression == Compression::kNone) return errors::InvalidArgument("Inflater: no compression to undo");
  if (library == InflateLibrary::kAuto) {
    library = InflateLibraryAvailable(InflateLibrary::kIsal) ? InflateLibrary::kIsal : InflateLibrary::kZlib;
  }
  if (library == InflateLibrary::kZlib) {
    auto zlib = std::unique_ptr<ZlibInflater>(new (std::nothrow) ZlibInflater);
    if (zlib == nullptr) return errors::ResourceExhausted("cannot allocate a zlib decoder");
    TW_RETURN_IF_ERROR(zlib->Init(compression));
    return std::unique_ptr<Inflater>(std::move(zlib));
  }
#if defined(TOWERFLOW_HAVE_ISAL)
  auto isal = std::unique_ptr<IsalInflater>(new (std::nothrow) IsalInflater(compression));
  if (isal == nullptr) return errors::ResourceExhausted("cannot allocate an ISA-L decoder");
  return std::unique_ptr<Inflater>(std::move(isal));
#else
  return errors::Unimplemented("this towerflow was built without ISA-L (libisal-dev); use zlib");
#endif
}

}  // namespace internal
}  // namespace tw
