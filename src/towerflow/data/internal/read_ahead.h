// Internal to data/record_reader: runs a byte source (a RecordReader's decoder)
// on a thread of its own, a few chunks ahead of the caller, so that decoding a
// compressed stream overlaps the parsing of the records already decoded.
//
// The caller sees exactly the bytes, the end and the errors the source would
// have given it called directly, in the same order; only the sizes of the
// pieces differ. A source call that ends its output for now (*got == 0) or
// fails parks the thread: it asks the source again only after the caller has
// taken everything before that end or error and asks for more, as a direct
// caller would retry (a file still being written may have grown; a failed read
// may succeed). So when Read has returned an end or an error, the thread is
// parked and every effect of the source calls so far is visible to the caller:
// it may then look into the source's state (a decoder's error) without a lock.
//
// Memory: `chunks` buffers of `chunk_bytes`, allocated by Start, which also
// starts the thread. The destructor stops it and waits for a source call in
// flight, so a source must return in bounded time (a regular file or memory,
// not a pipe).
//
// ReadAhead is thread-compatible: Read from one thread at a time.
#ifndef TOWERFLOW_DATA_INTERNAL_READ_AHEAD_H_
#define TOWERFLOW_DATA_INTERNAL_READ_AHEAD_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/core/status.h"

namespace tw::internal {

class ReadAhead {
 public:
  // Writes up to n next bytes at dst and sets *got; *got == 0 at the end (of
  // the output so far). A source that fails hands out nothing with its error
  // (bytes it wrote in that call are dropped): it returns what it made first,
  // and the error on its next call. Called on the read-ahead thread, one call
  // at a time.
  using Source = std::function<Status(uint8_t* dst, size_t n, size_t* got)>;

  // REQUIRES: chunk_bytes >= 1, chunks >= 1. `name` names the thread.
  ReadAhead(std::string name, Source source, size_t chunk_bytes, int chunks);
  ~ReadAhead();
  // Allocates the chunks and starts the thread; false when either fails (no
  // memory, no thread), and then the caller reads its source directly.
  [[nodiscard]] bool Start();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Up to n next bytes of the source's output (at most one chunk's), waiting
  // for the thread when nothing is ready; *got == 0 where the source ended, or
  // the source's error where it failed (*got == 0 then). REQUIRES: Start()
  // returned true; n >= 1.
  Status Read(uint8_t* dst, size_t n, size_t* got);

 private:
  struct Chunk {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;   // bytes the source wrote
    size_t taken = 0;  // bytes handed to the caller
    Status status;     // the source's answer
  };

  void Loop();

  const std::string name_;
  const Source source_;
  const size_t chunk_bytes_;
  std::vector<Chunk> chunks_;  // a ring: the thread fills at fill_, the caller reads at read_
  std::mutex mu_;
  std::condition_variable filled_;  // a chunk is ready, for the caller
  std::condition_variable freed_;   // a chunk is free or the thread may go on, for the thread
  // Guarded by mu_:
  size_t ready_ = 0;     // chunks filled and not yet wholly taken
  size_t read_ = 0;      // the caller's chunk
  size_t fill_ = 0;      // the next chunk the thread fills
  bool parked_ = false;  // the last chunk filled is an end or an error
  bool stop_ = false;
  std::thread thread_;  // started by Start
};

}  // namespace tw::internal

#endif  // TOWERFLOW_DATA_INTERNAL_READ_AHEAD_H_
