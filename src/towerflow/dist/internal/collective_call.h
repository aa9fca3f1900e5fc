// One collective call of the multi-process world (world_mpi.cc) and how a
// channel thread runs it over MPI: the call shared by its caller and the
// channel's thread, MPI's status and datatypes as towerflow's, and
// RunCollective, the MPI collective of each kind (blocking, or polled on the
// control channel), and the copies of an all-reduce's pieces in and out (the
// mean divided as it is copied out, alike on every rank). Compiled with MPI
// only (the *_mpi.cc rule).
#ifndef TOWERFLOW_DIST_INTERNAL_COLLECTIVE_CALL_H_
#define TOWERFLOW_DIST_INTERNAL_COLLECTIVE_CALL_H_

#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "towerflow/dist/world.h"

namespace tw::dist::internal {

// Internal naming the call and MPI's error text; OK for MPI_SUCCESS.
Status MpiStatus(const char* call, int rc);
// float, double, int32, int64; InvalidArgument otherwise.
StatusOr<MPI_Datatype> MpiType(DataType t);

enum class Kind { kAllReduce, kBroadcast, kAllGather, kTask };

// One collective call. Shared by the caller and the channel thread: a caller
// that times out leaves, and the call lives on until MPI returns, if ever. MPI
// works on the call's own buffer, or on memory the call holds (`keep`), never
// on memory the caller may free: the caller fills it before submitting the
// call and reads the result once the call is done; the channel thread uses
// it in between.
struct Call {
  Kind kind = Kind::kAllReduce;
  CollectiveTag tag;
  int64_t step = 0;
  DataType dtype = kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  int64_t count = 0;  // kAllReduce: elements; kBroadcast: bytes
  std::unique_ptr<char[]> buffer;  // `capacity` bytes, the first `bytes` in use; none for 0 bytes
  size_t capacity = 0;
  size_t bytes = 0;
  // An in-place all-reduce (World::AllReduceInPlace): MPI works on the
  // caller's `bytes` at `external`, whose memory `keep` holds, not on `buffer`.
  char* external = nullptr;
  std::shared_ptr<void> keep;
  char* data() const { return external != nullptr ? external : buffer.get(); }
  std::vector<std::string> gathered;
  std::function<Status()> work;  // kTask
  bool shared = false;           // a shared bucket's round summed through shared memory (set by `work`)
  std::chrono::steady_clock::time_point submitted, started, finished;
  // Guarded by the world's mutex.
  int64_t seq = -1;  // its place on the channel, once issued
  bool done = false;
  Status status;
};
using CallPtr = std::shared_ptr<Call>;


// Runs `c` on its buffer (its input, replaced by its output) over `comm`
// among `size` ranks: a task runs `c.work` (one rank too); one rank has
// nothing to exchange; an all-reduce leaves the sum for kMean (CopyResult
// divides it); an all-gather fills c.gathered.
Status RunCollective(MPI_Comm comm, int size, Call& c);

// The all-reduce's input: the pieces, end to end, into c.buffer (which holds
// c.bytes); zeros for a gap (a piece without input).
void CopyPieces(Call& c, const std::vector<World::Piece>& pieces);
// The all-reduce's result from c.buffer to the pieces' outputs, for kMean each
// element divided by `size` as it is written: the same division of the same
// bits on every rank.
void CopyResult(const Call& c, int size, const std::vector<World::Piece>& pieces);
// `count` elements of `dtype` at `data` divided by `size` where they are: the
// same bits as CopyResult's division.
void DivideInPlace(DataType dtype, void* data, int64_t count, int size);

}  // namespace tw::dist::internal

#endif  // TOWERFLOW_DIST_INTERNAL_COLLECTIVE_CALL_H_
