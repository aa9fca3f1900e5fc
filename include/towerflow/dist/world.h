// The processes of one multi-process training job, and the collectives they
// run together (MPI underneath: OpenMPI's mpirun launches them, its transports
// carry the data).
//
// World::Start joins the job (MPI_Init_thread) once per process; after it,
// World::Current() is the world until Finalize or Abort. Without a world (a
// single process) the collective ops of collective_ops.h are the identity, so
// a graph built for N processes still runs in one.
//
// Collectives. Every call blocks its caller until every rank has made the same
// call (StartAllReduce: until Wait). Calls travel on one of a few channels,
// each its own MPI communicator and its own thread, which makes the channel's
// MPI calls: the gradients' as MPI's blocking collectives (a waiting rank
// yields its core), the control channel's all-reduces polled with short
// sleeps (they are small and leave the cores to training). On a channel every
// rank must make the same calls in the same order, and a call tagged with
// `bucket` b of `num_buckets` B waits until buckets 0..b-1 of the same round
// were issued on this rank, so that the graph executor may run the buckets of
// a step in any order and every rank still issues them alike. Channels are
// independent of each other: a rank may be inside a gradient reduction while
// another makes a control call, and both complete.
//
// Exactness: every rank gets the same bits of a sum (MPI's algorithms combine
// the same values in the same order everywhere: world_mpi.cc), and the mean
// divides those identical sums alike on every rank.
//
// Faults: a call that has not completed after the collective timeout fails
// with DeadlineExceeded naming this rank, the channel, the bucket and the
// training step (set_step); rank 0 also names the ranks that never issued it
// (every rank's heartbeats tell it, within 100 ms, each call it issued), and
// the other ranks wait a little longer, so that rank 0's diagnosis comes
// first. A rank that fails
// must then Abort (MPI_Abort): the launcher ends every rank. A rank killed by a
// signal makes the launcher end the others.
//
// Thread-safety: every method may be called from any thread; Start, Finalize
// and Abort from one thread while no collective runs.
#ifndef TOWERFLOW_DIST_WORLD_H_
#define TOWERFLOW_DIST_WORLD_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/types.h"

namespace tw::dist {

enum class Channel {
  kControl,    // the trainer's calls: fingerprints, metrics, broadcasts
  kGradients,  // the gradient buckets of a step
};
const char* ChannelName(Channel c);

enum class ReduceOp { kSum, kMean, kMax };

struct CollectiveTag {
  Channel channel = Channel::kControl;
  int bucket = 0;
  int num_buckets = 1;
  std::string what;  // for errors: "gradient bucket 1 (3 tensors, 1.2 MB)"
};

struct WorldOptions {
  // A collective that has not completed after this long fails (0, or more
  // than 1e9 s: wait forever).
  double collective_timeout_seconds = 300;
  // The longest wait at start for every rank to arrive (MPI_Init and the
  // world's first collectives, which no collective timeout covers); past it
  // this rank says so and exits, and the launcher ends the job. Negative:
  // the collective timeout, at least 60 s (start-up under a loaded launcher
  // is slow); 0: forever.
  double start_timeout_seconds = -1;
  // Ranks that all run on one host reduce gradient buckets through memory
  // they share (NewSharedBucket); false: MPI's all-reduce always.
  bool share_memory = true;
  // Called once, on the thread whose collective gave up, with the
  // DeadlineExceeded that call (and every later one) returns, before the
  // call returns (another call waiting meanwhile may return the same error
  // first). The job cannot go on after a timeout, and the caller's way
  // out (its error unwinding a step, its threads joined) can take long: a
  // program says so here, at once, so that rank 0's diagnosis, which comes
  // first, is out before a later rank's timeout ends the job.
  std::function<void(const Status&)> on_timeout = nullptr;
};

class World {
 public:
  virtual ~World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Joins the job this process was launched into (launch.h). Errors:
  // FailedPrecondition when the build has no MPI support or the process was not
  // launched as one of several; Internal when MPI fails to start; AlreadyExists
  // after a first Start.
  static StatusOr<World*> Start(const WorldOptions& options);
  // The started world, or nullptr.
  static World* Current();

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // among the ranks of this host
  int local_size() const { return local_size_; }
  const std::vector<std::string>& hosts() const { return hosts_; }  // per rank
  const WorldOptions& options() const { return options_; }

  // The training step the next collectives belong to (for errors and rank 0's
  // view of the others).
  void set_step(int64_t step) { step_.store(step, std::memory_order_relaxed); }
  int64_t step() const { return step_.load(std::memory_order_relaxed); }

  // A part of an all-reduce: `count` elements read at `in`, their reduction
  // written to `out` (which may be `in`). A null `in` sends zeros and a null
  // `out` drops the result: a gap, which keeps the other pieces where
  // another rank's call has them.
  struct Piece {
    const void* in = nullptr;
    void* out = nullptr;
    int64_t count = 0;
  };
  // One all-reduce of the elements of `pieces` (float, double, int32, int64)
  // laid end to end: the tensor fusion of a gradient bucket, one collective
  // for many tensors. Each piece is read once, on the calling thread, before
  // the call is issued, and written once, on the calling thread, after the
  // call completed (for kMean, divided as it is written); a call that fails
  // writes nothing, and nothing of the caller's is touched once it returned.
  virtual Status AllReduce(const CollectiveTag& tag, DataType dtype, const std::vector<Piece>& pieces,
                           ReduceOp op) = 0;
  // `count` elements of `dtype` at `data`, replaced by the reduction over
  // every rank.
  Status AllReduce(const CollectiveTag& tag, DataType dtype, void* data, int64_t count, ReduceOp op) {
    return AllReduce(tag, dtype, {Piece{data, data, count}}, op);
  }
  // As AllReduce of `count` elements at `data`, reduced where they are: no
  // copy into the call's buffer and out of it (a gradient bucket whose
  // tensors were made end to end in one block: collective_ops.h). `keep`
  // owns that memory: the call holds it until the collective has returned,
  // so that a call whose caller timed out (and which may still write there)
  // never writes freed memory. After an error the caller must not hand the
  // memory to anything else.
  virtual Status AllReduceInPlace(const CollectiveTag& tag, DataType dtype, void* data, int64_t count, ReduceOp op,
                                  std::shared_ptr<void> keep) = 0;
  // A gradient bucket that the ranks reduce through memory they share
  // (MPI-3 shared windows), when every rank runs on this host: each rank's
  // kernels make its gradients in its block, which the other ranks read;
  // each rank sums its share of the elements over every rank's block into
  // one sum, which every rank's consumers then read where it is. MPI's
  // all-reduce of the same bucket copies each half to the other rank and
  // the sum back: three passes over the bucket more. Made by
  // NewSharedBucket; its memory by its first ReduceShared, and freed by
  // Finalize (tensors that view it must be gone by then).
  class SharedBucket {
   public:
    virtual ~SharedBucket() = default;
    // count() elements of this rank's gradients, read by the other ranks
    // during a ReduceShared; null until the first ReduceShared made the
    // memory (and if it could not be made).
    virtual void* gradients() const = 0;
    // The bucket's reduction after a ReduceShared that returned true, until
    // this rank's next ReduceShared of it; written by every rank (each its
    // share): it must not be written by anything else.
    virtual const void* sum() const = 0;
    virtual int64_t count() const = 0;
    virtual DataType dtype() const = 0;
    // False once a round found that some rank has no memory for it (every
    // rank learns it in the same round): its later rounds would all go
    // through MPI, and the caller should stop sharing it.
    virtual bool usable() const = 0;
  };
  // A shared bucket of `count` elements of `dtype`; null when the ranks do
  // not all run on this host, for a type other than float and double, for a
  // bucket too small to gain (under 64 KiB), and in worlds without shared
  // memory.
  virtual std::unique_ptr<SharedBucket> NewSharedBucket(DataType dtype, int64_t count) {
    (void)dtype;
    (void)count;
    return nullptr;
  }
  // One all-reduce of `bucket` (a call of tag's channel, in its bucket order,
  // timed out and counted as the others; every rank makes it in the same
  // round). `in_block`: this rank's gradients are in bucket.gradients();
  // else `pieces` hold them, laid out as the block (the same elements in
  // the same places, gaps as null inputs). `sum_free`: nothing of this
  // rank's reads bucket.sum() any more. When every rank says both, each sums
  // its share, the mean divided as AllReduce does it, into bucket.sum(), and
  // the answer is true. Otherwise MPI reduces every rank's gradients, in
  // the block or from `pieces` into their outputs, and the answer is false.
  // kSum and kMean, on the gradients channel. A first call also makes the
  // bucket's memory.
  virtual StatusOr<bool> ReduceShared(const CollectiveTag& tag, SharedBucket& bucket, bool in_block, bool sum_free,
                                      const std::vector<Piece>& pieces, ReduceOp op) {
    (void)tag;
    (void)bucket;
    (void)in_block;
    (void)sum_free;
    (void)pieces;
    (void)op;
    return errors::Unimplemented("this world shares no memory between its ranks");
  }

  // An all-reduce issued without waiting for it (StartAllReduce).
  class PendingAllReduce {
   public:
    virtual ~PendingAllReduce() = default;  // one not waited for is left to finish on its own
    // Waits for it (or the collective timeout, counted from its start) and
    // writes the result, as many elements as were given, to `out`. Once.
    virtual Status Wait(void* out) = 0;
  };
  // As AllReduce, returning once the call is issued: `data` is copied, and
  // the reduction runs on the channel's thread while the caller goes on (the
  // trainer reduces a step's metrics while the next step runs).
  virtual StatusOr<std::unique_ptr<PendingAllReduce>> StartAllReduce(const CollectiveTag& tag, DataType dtype,
                                                                     const void* data, int64_t count,
                                                                     ReduceOp op) = 0;
  // `bytes` at `data` replaced by rank `root`'s.
  virtual Status Broadcast(const CollectiveTag& tag, void* data, int64_t bytes, int root) = 0;
  // Every rank's `mine`, in rank order.
  virtual StatusOr<std::vector<std::string>> AllGather(const CollectiveTag& tag, const std::string& mine) = 0;
  // Runs `work` on the channel's thread, in the channel's bucket order, as
  // one call of the channel (reported, timed out and counted like the
  // others): for collectives of another library that every rank must issue
  // in the same order (NCCL's, enqueued on a GPU stream). Its Status is the
  // call's.
  virtual Status RunInOrder(const CollectiveTag& tag, std::function<Status()> work) = 0;

  // What the gradient reductions cost so far: a round is one step's buckets
  // 0..B-1; `seconds` the time their collectives ran; `overlapped_seconds`
  // the part of it before the round's last bucket was submitted, i.e. while
  // the backward pass was still producing gradients.
  struct GradientStats {
    int64_t rounds = 0;
    int64_t calls = 0;
    int64_t in_place_calls = 0;  // of `calls`, those of AllReduceInPlace (and ReduceShared in the block)
    int64_t shared_calls = 0;    // of `calls`, those summed through shared memory (ReduceShared)
    int64_t bytes = 0;
    double seconds = 0;
    double overlapped_seconds = 0;
  };
  virtual GradientStats gradient_stats() const = 0;

  // Leaves the job normally (MPI_Finalize), every rank alike; Current() is
  // then null. A collective: it starts with one that has the collective
  // timeout, and a rank that does not arrive in time (or a world already
  // broken by a timeout) makes it print the error and Abort(1).
  virtual void Finalize() = 0;
  // Ends the whole job now with `exit_code` (MPI_Abort): the launcher stops
  // every rank. Does not return.
  [[noreturn]] virtual void Abort(int exit_code) = 0;

 protected:
  World(int rank, int size, int local_rank, int local_size, std::vector<std::string> hosts, WorldOptions options)
      : rank_(rank), size_(size), local_rank_(local_rank), local_size_(local_size), hosts_(std::move(hosts)),
        options_(options) {}

 private:
  const int rank_, size_, local_rank_, local_size_;
  const std::vector<std::string> hosts_;
  const WorldOptions options_;
  std::atomic<int64_t> step_{0};
};

}  // namespace tw::dist

#pragma GCC visibility pop

#endif  // TOWERFLOW_DIST_WORLD_H_
