// World::SharedBucket over MPI-3 shared windows (world.h says what a shared
// bucket is; world_mpi.cc runs its reductions). Compiled with MPI only (the
// *_mpi.cc rule).
//
// Memory: one window per bucket on the gradients channel's communicator,
// every rank on this host: each rank's segment holds its block of the
// gradients (count elements); rank 0's also holds the sum. The window is made
// by the bucket's first Reduce, inside that round's call (every rank makes the
// same call in the same round, so the collective MPI_Win_allocate_shared
// meets), and freed by FreeAll at World::Finalize, every rank alike.
//
// One round (Reduce, on the channel's thread):
//   1. The ranks agree (MPI_Allreduce of a flag, MIN): every rank's gradients
//      are in its block, no consumer still reads the sum, and every window
//      was made. This is also the barrier after which each rank's block may
//      be read: its kernels wrote it before the call was submitted.
//   2. If all agree: rank r sums elements [lo_r, hi_r) of every rank's block,
//      in rank order (the same bits whoever computes them), into the sum,
//      dividing for kMean as the MPI path does; then MPI_Barrier, after which
//      every rank reads the whole sum. Shares are whole 64-byte lines, so no
//      two ranks write one cache line.
//   3. Otherwise MPI_Allreduce in place over `fallback`: this rank's block,
//      or the call's packed buffer.
// Why no double buffer is needed: a rank writes its block again only in its
// next step's backward pass, after this round's barrier, which every rank
// passes after reading the blocks; and a rank writes the sum again only after
// the next round's agreement, which every rank reaches after its consumers
// read this sum (a consumer that still holds it says so, and the round falls
// back to MPI). Memory is ordered around each collective by MPI_Win_sync.
#ifndef TOWERFLOW_DIST_INTERNAL_SHARED_BUCKET_H_
#define TOWERFLOW_DIST_INTERNAL_SHARED_BUCKET_H_

#include <mpi.h>

#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/dist/world.h"

namespace tw::dist::internal {

// The least bucket shared: below it MPI's all-reduce (a few microseconds)
// costs no more than the two collectives of a shared round.
inline constexpr size_t kMinSharedBucketBytes = size_t{64} << 10;

class SharedBuckets;

class MpiSharedBucket final : public World::SharedBucket {
 public:
  MpiSharedBucket(SharedBuckets* owner, DataType dtype, int64_t count) : owner_(owner), dtype_(dtype), count_(count) {}
  ~MpiSharedBucket() override = default;  // the window is freed by SharedBuckets::FreeAll

  void* gradients() const override { return gradients_; }
  const void* sum() const override { return sum_; }
  int64_t count() const override { return count_; }
  DataType dtype() const override { return dtype_; }
  bool usable() const override { return everywhere_; }

  // One round over `comm` (`rank` of `size`) on the channel's thread: the
  // first makes the window; `ready` is this rank's flag (its gradients in
  // its block, its sum free). `fallback`: count() elements that MPI reduces
  // in place when some rank is not ready. Sets *shared.
  Status Reduce(MPI_Comm comm, int rank, int size, bool ready, void* fallback, ReduceOp op, bool* shared);

 private:
  friend class SharedBuckets;
  Status MakeWindow(MPI_Comm comm, int size);

  SharedBuckets* const owner_;
  const DataType dtype_;
  const int64_t count_;
  bool tried_ = false;       // the first round made the window (or failed to)
  bool everywhere_ = true;   // every rank's memory was made (known after the first round)
  MPI_Win win_ = MPI_WIN_NULL;
  void* gradients_ = nullptr;
  void* sum_ = nullptr;
  std::vector<const char*> blocks_;  // every rank's block, by rank
};

// The buckets of a world. Windows are freed together at Finalize, in the
// order they were made (the order of the buckets' first rounds on the
// channel's thread, alike on every rank: MPI_Win_free is collective).
class SharedBuckets {
 public:
  // A handle the caller owns; the bucket itself lives until FreeAll.
  std::unique_ptr<World::SharedBucket> New(DataType dtype, int64_t count);
  // The bucket behind a handle of New; null for another SharedBucket.
  static MpiSharedBucket* Of(World::SharedBucket& handle);
  // Frees every window made, once nothing reads their memory (Finalize).
  void FreeAll();

 private:
  friend class MpiSharedBucket;
  void Made(MpiSharedBucket* bucket);

  std::mutex mu_;
  std::vector<std::shared_ptr<MpiSharedBucket>> buckets_;  // guarded by mu_
  std::vector<MpiSharedBucket*> made_;                     // guarded by mu_: windows, in the order made
};

}  // namespace tw::dist::internal

#endif  // TOWERFLOW_DIST_INTERNAL_SHARED_BUCKET_H_
