// Internal to data/record_reader: one streaming deflate decoder behind a small
// interface, over zlib or over ISA-L (Intel's igzip, Debian's libisal), which
// decodes the same streams about twice as fast (measured on the Fashion-MNIST
// GZIP records: zlib 230 MB/s of output, ISA-L 455 MB/s, one thread).
//
// The record reader owns the input buffering, the multi-member loop and the
// judgement of where a stream may end; an Inflater only decodes, and answers the
// three questions that judgement needs: did the stream end, is the decoder at a
// flush point, and what went wrong. Both backends read whole and flushed streams
// alike; data/inflate_differential_test.cc and fuzz_record_reader check cut,
// corrupted and concatenated streams against each other. Beyond the text of
// their error messages they differ in two ways, on broken streams only: ISA-L
// accepts some malformed Huffman tables that zlib rejects at the block header
// (it decodes on until a symbol or a checksum fails), and on a stream cut
// mid-block it may hold back the last few bytes zlib decodes.
//
// An Inflater is thread-compatible: one thread at a time.
#ifndef TOWERFLOW_DATA_INTERNAL_INFLATER_H_
#define TOWERFLOW_DATA_INTERNAL_INFLATER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "towerflow/core/status.h"
#include "towerflow/data/record_reader.h"

namespace tw::internal {

// Where the decoder's input and output stand, as in a z_stream: the decoder
// consumes from next_in and writes to next_out, advancing both.
struct InflateCursor {
  const uint8_t* next_in = nullptr;
  size_t avail_in = 0;
  uint8_t* next_out = nullptr;
  size_t avail_out = 0;
};

class Inflater {
 public:
  enum class Result {
    kOk,         // progress, or none possible without more input or output room
    kStreamEnd,  // a whole stream (wrapper, blocks and checksum) ended
    kError,      // a corrupt stream: message() says why
    kNoMemory,
  };

  // A decoder for the wrapper of `compression` (kZlib or kGzip), on `library`.
  // Unimplemented when that library is not built in.
  static StatusOr<std::unique_ptr<Inflater>> Create(Compression compression, InflateLibrary library);
  virtual ~Inflater() = default;

  // Decodes as much as the cursor allows. Large steps are split internally when
  // a count exceeds what the library takes in one call.
  virtual Result Inflate(InflateCursor& cursor) = 0;
  // Starts a new stream with the same wrapper (the next member of `cat a.gz b.gz`).
  virtual void Reset() = 0;
  // True before any input, or when every bit taken so far is decoded and the
  // decoder waits for the next block header after a block that was not the last:
  // where a writer's flush leaves a stream. A stream that stops anywhere else
  // was cut short. Judged after the last call that made progress.
  virtual bool AtFlushPoint() const = 0;
  // Compressed bytes taken from the cursor but not yet decoded (read ahead into
  // the decoder's own buffers), so that an error's position can be told.
  virtual size_t HeldInput() const = 0;
  // After kError: what the library said.
  virtual std::string message() const = 0;
};

}  // namespace tw::internal

#endif  // TOWERFLOW_DATA_INTERNAL_INFLATER_H_
