// The World over MPI (world.h): compiled only when towerflow is built with MPI.
//
// After MPI_Init_thread (MPI_THREAD_MULTIPLE), each channel has a thread of its
// own and a communicator of its own (a dup of MPI_COMM_WORLD made at start, in
// the same order on every rank). Callers hand a channel's thread a Call and
// wait; the thread takes calls in bucket order and runs each over MPI: the
// gradients channel's as blocking collectives (OpenMPI's blocking collectives
// progress far faster than its non-blocking ones driven by MPI_Test: a 1 MB
// all-reduce between two local ranks took 180 us blocking and 870 us
// non-blocking, measured here), the control channel's small all-reduces as
// MPI_Iallreduce polled with sleeps, which leaves the cores to training. Two
// channels never wait for each other: their threads block independently.
//
// Timeouts are kept by the callers: a caller that has waited the collective
// timeout gives up with DeadlineExceeded (its call stays inside MPI, which may
// never return, on the call's own buffer), the world is then broken (every
// later call fails at once), and the process is expected to Abort. Every
// rank's monitor thread sends rank 0 a heartbeat twice a second (an MPI_Isend
// on a communicator of its own), and sooner, at most ten times a second, once
// a channel has issued a new call; each heartbeat carries the rank's newest
// issued call on every channel. That is how rank 0 names the ranks that never
// issued a call that timed out (a rank that issued it within the last 100 ms
// before rank 0's deadline may still be named so), and a rank that stopped
// during a transfer (SIGSTOP, a hung machine). The channel threads send
// nothing themselves: a report per call, sent beside a gradient bucket's
// all-reduce, cost 35 us of its 230 us (1 MB, 2 ranks).
//
// The calls and how each runs over MPI: internal/collective_call.h.
//
// Exactness: MPI_SUM on every rank, blocking (MPI_Allreduce) or not
// (MPI_Iallreduce). OpenMPI's algorithms (recursive doubling with commutative
// pairwise sums, ring and Rabenseifner's reduce-scatter + all-gather, linear
// reduce + broadcast, libnbc's schedules) give every rank the same bits, which
// the tests check for 2 and 3 ranks and small and large buffers; the mean then
// divides those identical sums alike everywhere as they are copied out (for a
// power of two ranks a multiplication by the exact inverse: the same bits).
#include <mpi.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

#include "towerflow/dist/internal/collective_call.h"
#include "towerflow/dist/internal/peer_reports.h"
#include "towerflow/dist/internal/shared_bucket.h"
#include "towerflow/dist/internal/mpi_world.h"
#include "towerflow/dist/internal/world_registry.h"

namespace tw::dist::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kSpareBuffers = 8;
constexpr auto kHeartbeatEvery = std::chrono::milliseconds(500);
constexpr auto kReportAtMostEvery = std::chrono::milliseconds(100);

class MpiWorld final : public World {
 public:
  MpiWorld(int rank, int size, int local_rank, int local_size, std::vector<std::string> hosts,
           const WorldOptions& options, MPI_Comm channels[kNumChannels], MPI_Comm reports)
      : World(rank, size, local_rank, local_size, std::move(hosts), options), reports_(reports),
        peers_(reports, World::hosts()) {
    for (int c = 0; c < kNumChannels; ++c) {
      channels_[c].comm = channels[c];
      channels_[c].thread = std::thread([this, c] { Serve(c); });
      // "tw_mpi/gradients" cut to Linux's 15 characters.
      const std::string name = std::string("tw_mpi/") + ChannelName(static_cast<dist::Channel>(c));
      pthread_setname_np(channels_[c].thread.native_handle(), name.substr(0, 15).c_str());
    }
    monitor_ = std::thread([this] { Monitor(); });
    pthread_setname_np(monitor_.native_handle(), "tw_mpi/monitor");
  }

  ~MpiWorld() override { StopThreads(); }

  using World::AllReduce;
  Status AllReduce(const CollectiveTag& tag, DataType dtype, const std::vector<Piece>& pieces,
                   ReduceOp op) override {
    TW_ASSIGN_OR_RETURN(CallPtr call, NewAllReduce(tag, dtype, pieces, op));
    Status s = Run(call);
    if (s.ok()) CopyResult(*call, size(), pieces);
    Release(*call);
    return s;
  }

  Status AllReduceInPlace(const CollectiveTag& tag, DataType dtype, void* data, int64_t count, ReduceOp op,
                          std::shared_ptr<void> keep) override {
    TW_ASSIGN_OR_RETURN(CallPtr call, AllReduceCall(tag, dtype, count, op));
    call->bytes = static_cast<size_t>(count) * DataTypeSize(dtype);
    call->external = static_cast<char*>(data);
    call->keep = std::move(keep);
    Status s = Run(call);
    if (s.ok() && op == ReduceOp::kMean) DivideInPlace(dtype, data, count, size());
    return s;
  }

  std::unique_ptr<SharedBucket> NewSharedBucket(DataType dtype, int64_t count) override {
    if (!options().share_memory || size() < 2 || local_size() != size()) return nullptr;
    if ((dtype != kFloat32 && dtype != kFloat64) || count <= 0 || count > std::numeric_limits<int>::max()) return nullptr;
    if (static_cast<size_t>(count) * DataTypeSize(dtype) < kMinSharedBucketBytes) return nullptr;
    return shared_.New(dtype, count);
  }

  // A task of the channel (shared_bucket.h runs the round); packed pieces
  // travel in the call's buffer, a block is reduced where it is.
  StatusOr<bool> ReduceShared(const CollectiveTag& tag, SharedBucket& handle, bool in_block, bool sum_free,
                              const std::vector<Piece>& pieces, ReduceOp op) override {
    MpiSharedBucket* bucket = SharedBuckets::Of(handle);
    if (bucket == nullptr) return errors::InvalidArgument("ReduceShared of a bucket this world did not make");
    if (op != ReduceOp::kSum && op != ReduceOp::kMean) return errors::InvalidArgument("ReduceShared sums only");
    // One channel makes every window, in one order on every rank (Finalize
    // frees them in that order).
    if (tag.channel != Channel::kGradients) return errors::InvalidArgument("ReduceShared on the gradients channel only");
    if (in_block && bucket->gradients() == nullptr) return errors::FailedPrecondition("the shared bucket has no block");
    const DataType dtype = bucket->dtype();
    CallPtr call;
    if (in_block) {
      TW_ASSIGN_OR_RETURN(call, AllReduceCall(tag, dtype, bucket->count(), op));
      call->bytes = static_cast<size_t>(bucket->count()) * DataTypeSize(dtype);
      call->external = static_cast<char*>(bucket->gradients());  // the window lives until Finalize
    } else {
      TW_ASSIGN_OR_RETURN(call, NewAllReduce(tag, dtype, pieces, op));
      if (call->count != bucket->count()) {
        Release(*call);
        return errors::InvalidArgument("ReduceShared of ", call->count, " elements in a bucket of ", bucket->count());
      }
    }
    call->kind = Kind::kTask;
    Call* raw = call.get();
    const MPI_Comm comm = channels_[static_cast<int>(tag.channel)].comm;
    const bool ready = in_block && sum_free;
    call->work = [this, bucket, raw, comm, ready, op] {
      return bucket->Reduce(comm, rank(), size(), ready, raw->data(), op, &raw->shared);
    };
    Status s = Run(call);
    const bool shared = s.ok() && call->shared;
    if (s.ok() && !shared) {
      if (in_block && op == ReduceOp::kMean) DivideInPlace(dtype, bucket->gradients(), bucket->count(), size());
      if (!in_block) CopyResult(*call, size(), pieces);
    }
    Release(*call);
    TW_RETURN_IF_ERROR(s);
    return shared;
  }

  StatusOr<std::unique_ptr<PendingAllReduce>> StartAllReduce(const CollectiveTag& tag, DataType dtype,
                                                             const void* data, int64_t count, ReduceOp op) override {
    auto pending = std::make_unique<Pending>(this);
    pending->count = count;
    TW_ASSIGN_OR_RETURN(pending->call, NewAllReduce(tag, dtype, {Piece{data, nullptr, count}}, op));
    TW_RETURN_IF_ERROR(Submit(pending->call));
    return std::unique_ptr<PendingAllReduce>(std::move(pending));
  }

  Status Broadcast(const CollectiveTag& tag, void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= size()) return errors::InvalidArgument("broadcast root ", root, " of ", size(), " ranks");
    if (bytes < 0 || bytes > std::numeric_limits<int>::max()) {
      return errors::InvalidArgument("broadcast of ", bytes, " bytes (at most 2^31 - 1)");
    }
    CallPtr call = NewCall(Kind::kBroadcast, tag, data, static_cast<size_t>(bytes));
    call->root = root;
    call->count = bytes;
    Status s = Run(call);
    if (s.ok() && bytes > 0) std::memcpy(data, call->buffer.get(), static_cast<size_t>(bytes));
    Release(*call);
    return s;
  }

  StatusOr<std::vector<std::string>> AllGather(const CollectiveTag& tag, const std::string& mine) override {
    CallPtr call = NewCall(Kind::kAllGather, tag, mine.data(), mine.size());
    Status s = Run(call);
    Release(*call);
    TW_RETURN_IF_ERROR(s);
    return std::move(call->gathered);
  }

  Status RunInOrder(const CollectiveTag& tag, std::function<Status()> work) override {
    CallPtr call = NewCall(Kind::kTask, tag, nullptr, 0);
    call->work = std::move(work);
    return Run(call);
  }

  void Finalize() override {
    // MPI_Win_free, the heartbeats' last sends and MPI_Finalize wait for the
    // other ranks without a timeout: first a timed collective that every rank
    // reaches only on its way out, so that these wait only on ranks already
    // leaving, and a rank that hangs before it leaves ends the job instead.
    int64_t leaving = 0;
    if (Status s = AllReduce({.channel = Channel::kControl, .what = "the ranks' leaving of the job"}, kInt64,
                             &leaving, 1, ReduceOp::kSum);
        !s.ok()) {
      std::fprintf(stderr, "towerflow: rank %d of %d: %s\n", rank(), size(), s.ToString().c_str());
      Abort(1);
    }
    StopThreads();
    SetCurrentWorld(nullptr);
    shared_.FreeAll();
    for (auto& s : heartbeats_) MPI_Wait(&s.request, MPI_STATUS_IGNORE);
    heartbeats_.clear();
    if (rank() == 0) peers_.Drain();
    MPI_Finalize();
  }

  [[noreturn]] void Abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; if it ever did
  }

 private:
  struct Send {
    int64_t message[kHeartbeatWords];
    MPI_Request request = MPI_REQUEST_NULL;
  };

  struct ChannelState {
    MPI_Comm comm = MPI_COMM_NULL;
    std::thread thread;
    std::vector<CallPtr> pending;  // guarded by mu_
    int next_bucket = 0;           // guarded by mu_
    int64_t next_seq = 0;          // guarded by mu_
    Seen issued;                   // guarded by mu_: its newest issued call
  };

  // An issued all-reduce of a copy of the caller's data (StartAllReduce). One
  // never waited for finishes on its own, its buffer owned by its call.
  struct Pending final : PendingAllReduce {
    explicit Pending(MpiWorld* w) : world(w) {}
    Status Wait(void* out) override {
      if (waited) return errors::FailedPrecondition("a pending all-reduce is waited for once");
      waited = true;
      Status s = world->Await(call);
      if (s.ok()) CopyResult(*call, world->size(), {Piece{nullptr, out, count}});
      world->Release(*call);
      return s;
    }
    MpiWorld* world;
    CallPtr call;
    int64_t count = 0;
    bool waited = false;
  };

  // An all-reduce of `count` elements, without its data yet.
  StatusOr<CallPtr> AllReduceCall(const CollectiveTag& tag, DataType dtype, int64_t count, ReduceOp op) {
    TW_RETURN_IF_ERROR(MpiType(dtype).status());
    if (count < 0 || count > std::numeric_limits<int>::max()) {
      return errors::InvalidArgument("all-reduce of ", count, " elements (at most 2^31 - 1)");
    }
    auto call = std::make_shared<Call>();
    call->kind = Kind::kAllReduce;
    call->tag = tag;
    call->dtype = dtype;
    call->op = op;
    call->count = count;
    return call;
  }

  // An all-reduce of `pieces`, their elements copied into the call's buffer.
  StatusOr<CallPtr> NewAllReduce(const CollectiveTag& tag, DataType dtype, const std::vector<Piece>& pieces,
                                 ReduceOp op) {
    int64_t count = 0;
    for (const Piece& p : pieces) {
      if (p.count < 0 || count + p.count > std::numeric_limits<int>::max()) {
        return errors::InvalidArgument("all-reduce of ", count + p.count, " elements (at most 2^31 - 1)");
      }
      count += p.count;
    }
    TW_ASSIGN_OR_RETURN(CallPtr call, AllReduceCall(tag, dtype, count, op));
    Acquire(*call, static_cast<size_t>(count) * DataTypeSize(dtype));
    CopyPieces(*call, pieces);
    return call;
  }

  // A call of `bytes` copied from `data` into its buffer.
  CallPtr NewCall(Kind kind, const CollectiveTag& tag, const void* data, size_t bytes) {
    auto call = std::make_shared<Call>();
    call->kind = kind;
    call->tag = tag;
    Acquire(*call, bytes);
    if (bytes > 0) std::memcpy(call->buffer.get(), data, bytes);
    return call;
  }

  // Gives `c` a buffer of `bytes`: the smallest large enough of those that
  // finished calls gave back, or a new one. Most steps allocate none: a
  // step's gradient buckets reuse the buffers of the step before.
  void Acquire(Call& c, size_t bytes) {
    c.bytes = bytes;
    if (bytes == 0) return;  // nothing to exchange: no buffer (tasks, empty calls)
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto best = spare_.end();
      for (auto it = spare_.begin(); it != spare_.end(); ++it) {
        if (it->second >= bytes && (best == spare_.end() || it->second < best->second)) best = it;
      }
      if (best != spare_.end()) {
        c.buffer = std::move(best->first);
        c.capacity = best->second;
        spare_.erase(best);
        return;
      }
    }
    c.capacity = bytes;
    c.buffer.reset(new char[c.capacity]);  // uninitialized: the caller fills what MPI reads
  }

  // Takes back the buffer of `c` once its caller is done with it, unless the
  // call is still inside MPI (the caller timed out): that one stays the
  // call's. The largest kSpareBuffers are kept.
  void Release(Call& c) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!c.done || c.buffer == nullptr) return;
    spare_.emplace_back(std::move(c.buffer), c.capacity);
    c.capacity = 0;
    if (spare_.size() > kSpareBuffers) {
      spare_.erase(std::min_element(spare_.begin(), spare_.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; }));
    }
  }

  // Submits `call` and waits for it, or for the collective timeout.
  Status Run(const CallPtr& call) {
    TW_RETURN_IF_ERROR(Submit(call));
    return Await(call);
  }

  // Hands `call` to its channel's thread.
  Status Submit(const CallPtr& call) {
    call->step = step();
    if (call->tag.num_buckets < 1 || call->tag.bucket < 0 || call->tag.bucket >= call->tag.num_buckets) {
      return errors::InvalidArgument("bucket ", call->tag.bucket, " of ", call->tag.num_buckets);
    }
    call->submitted = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
    if (stopping_) return errors::FailedPrecondition("the multi-process world has finalized");
    channels_[static_cast<int>(call->tag.channel)].pending.push_back(call);
    work_.notify_all();
    return Status::OK();
  }

  // Waits for a submitted `call`, or for the collective timeout from its submission.
  Status Await(const CallPtr& call) {
    const int ch = static_cast<int>(call->tag.channel);
    const auto submitted = call->submitted;
    std::unique_lock<std::mutex> lock(mu_);
    if (call->done) return call->status;
    if (!broken_.ok()) return broken_;
    const double limit = LimitSeconds();
    // 0, or longer than any job (a deadline past the clock's range): forever.
    if (limit <= 0 || limit > 1e9) {
      done_.wait(lock, [&] { return call->done; });
      return call->status;
    }
    const auto deadline = submitted + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
    if (done_.wait_until(lock, deadline, [&] { return call->done || !broken_.ok(); }) && call->done) {
      return call->status;
    }
    if (!broken_.ok()) return broken_;  // another call timed out first
    // Still pending (behind an earlier bucket) or inside MPI.
    auto& q = channels_[ch].pending;
    const bool issued = std::find(q.begin(), q.end(), call) == q.end();
    const int64_t seq = issued ? call->seq : channels_[ch].next_seq;
    lock.unlock();
    Status timeout = TimeoutError(*call, seq, std::chrono::duration<double>(Clock::now() - submitted).count());
    lock.lock();
    if (call->done) return call->status;  // it completed meanwhile
    if (!broken_.ok()) return broken_;      // another call gave up meanwhile
    broken_ = timeout;
    done_.notify_all();
    lock.unlock();
    if (options().on_timeout) options().on_timeout(timeout);
    return timeout;
  }

  void StopThreads() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      work_.notify_all();
      monitor_wake_.notify_all();
    }
    for (ChannelState& ch : channels_) {
      if (ch.thread.joinable()) ch.thread.join();
    }
    if (monitor_.joinable()) monitor_.join();
  }

  // Ranks but 0 send heartbeats; rank 0 takes them in.
  void Monitor() {
    int64_t beat = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (rank() == 0) {
        lock.unlock();
        peers_.Drain();
        lock.lock();
        monitor_wake_.wait_for(lock, kReportAtMostEvery, [&] { return stopping_; });
        continue;
      }
      heartbeats_.emplace_back();
      Send& s = heartbeats_.back();
      s.message[0] = beat++;
      for (int c = 0; c < kNumChannels; ++c) {
        s.message[1 + 2 * c] = channels_[c].issued.seq;
        s.message[2 + 2 * c] = channels_[c].issued.step;
      }
      last_report_ = Clock::now();
      report_due_ = false;
      lock.unlock();
      MPI_Isend(s.message, kHeartbeatWords, MPI_INT64_T, 0, kReportTag, reports_, &s.request);
      while (!heartbeats_.empty()) {
        int finished = 0;
        MPI_Test(&heartbeats_.front().request, &finished, MPI_STATUS_IGNORE);
        if (!finished) break;
        heartbeats_.pop_front();
      }
      lock.lock();
      // The next heartbeat: kHeartbeatEvery after this one, or sooner when a
      // channel issues a call, though not within kReportAtMostEvery.
      while (!stopping_) {
        const Clock::time_point next = last_report_ + (report_due_ ? kReportAtMostEvery : kHeartbeatEvery);
        if (Clock::now() >= next) break;
        monitor_wake_.wait_until(lock, next);
      }
    }
  }

  // The thread of channel `c`: takes its calls in bucket order, runs each.
  void Serve(int c) {
    ChannelState& ch = channels_[c];
    for (;;) {
      CallPtr call;
      {
        std::unique_lock<std::mutex> lock(mu_);
        auto next = [&] {
          return std::find_if(ch.pending.begin(), ch.pending.end(),
                              [&](const CallPtr& p) { return p->tag.bucket == ch.next_bucket; });
        };
        work_.wait(lock, [&] { return stopping_ || !broken_.ok() || next() != ch.pending.end(); });
        if (stopping_ || !broken_.ok()) return;
        auto it = next();
        call = *it;
        ch.pending.erase(it);
        ch.next_bucket = (call->tag.bucket + 1) % call->tag.num_buckets;
        call->seq = ch.next_seq++;
        ch.issued = {call->seq, call->step};
        if (rank() != 0 && !report_due_) {
          report_due_ = true;  // the monitor tells rank 0, on its own thread
          monitor_wake_.notify_one();
        }
      }
      call->started = Clock::now();
      Status s = RunCollective(ch.comm, size(), *call);
      call->finished = Clock::now();
      std::lock_guard<std::mutex> lock(mu_);
      if (c == static_cast<int>(dist::Channel::kGradients)) Account(call);
      call->status = s;
      call->done = true;
      done_.notify_all();
    }
  }

  // Gradient statistics: a round's overlap is known once its last bucket
  // is done. REQUIRES: mu_ held.
  void Account(const CallPtr& call) {
    if (call->tag.bucket == 0) round_.clear();
    round_.push_back(call);
    if (call->tag.bucket + 1 != call->tag.num_buckets) return;
    Clock::time_point last_submit = round_.front()->submitted;
    for (const CallPtr& c : round_) last_submit = std::max(last_submit, c->submitted);
    for (const CallPtr& c : round_) {
      ++stats_.calls;
      if (c->external != nullptr) ++stats_.in_place_calls;
      if (c->shared) ++stats_.shared_calls;
      stats_.seconds += std::chrono::duration<double>(c->finished - c->started).count();
      stats_.bytes += static_cast<int64_t>(c->bytes);
      if (last_submit > c->started) {
        stats_.overlapped_seconds +=
            std::chrono::duration<double>(std::min(c->finished, last_submit) - c->started).count();
      }
    }
    ++stats_.rounds;
    round_.clear();
  }

  GradientStats gradient_stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  double LimitSeconds() const {
    const double t = options().collective_timeout_seconds;
    if (t <= 0) return 0;
    // Rank 0 gives up first: it is the one that can name the missing ranks.
    return rank() == 0 ? t : t + 2 + 0.05 * t;
  }

  std::string Describe(const Call& c) const {
    std::string what = c.tag.what.empty() ? std::string(c.kind == Kind::kAllReduce   ? "an all-reduce"
                                                        : c.kind == Kind::kBroadcast ? "a broadcast"
                                                        : c.kind == Kind::kAllGather ? "an all-gather"
                                                                                     : "a collective")
                                          : c.tag.what;
    return StrCat(what, " (", ChannelName(c.tag.channel), " channel, bucket ", c.tag.bucket, " of ",
                  c.tag.num_buckets, ") at step ", c.step);
  }

  Status TimeoutError(const Call& c, int64_t seq, double waited) {
    std::string who;
    if (rank() == 0) {
      who = peers_.Missing(static_cast<int>(c.tag.channel), seq);
    } else {
      // Rank 0 gives up first and ends the job naming the missing ranks:
      // that it has not means it is the one held up.
      who = StrCat("rank 0 (", hosts()[0], "), which gives up ", static_cast<int64_t>(LimitSeconds() - options().collective_timeout_seconds),
                   " s earlier and names the missing ranks, has not: rank 0 is most likely the rank that hangs, "
                   "was stopped, or spends longer than the timeout outside the collectives (writing a checkpoint, say)");
    }
    return Status(Code::kDeadlineExceeded,
                  StrCat("rank ", rank(), " (", hosts()[static_cast<size_t>(rank())], "): ", Describe(c),
                         " did not complete within ", static_cast<int64_t>(waited), " s: ", who,
                         ". A rank that crashed, hangs or was stopped holds up every other "
                         "(--collective-timeout sets the wait)"));
  }

  ChannelState channels_[kNumChannels];
  MPI_Comm reports_;
  mutable std::mutex mu_;
  std::condition_variable work_, done_;
  std::vector<CallPtr> round_;  // guarded by mu_: the gradient buckets of the current round
  std::vector<std::pair<std::unique_ptr<char[]>, size_t>> spare_;  // guarded by mu_: buffers and their sizes
  GradientStats stats_;         // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  Status broken_;          // guarded by mu_: a call timed out
  PeerReports peers_;  // rank 0's view of the others
  std::thread monitor_;
  std::condition_variable monitor_wake_;  // with mu_
  bool report_due_ = false;               // guarded by mu_: a channel issued a call since the last heartbeat
  Clock::time_point last_report_;         // guarded by mu_
  std::deque<Send> heartbeats_;  // the monitor's
  SharedBuckets shared_;
};

}  // namespace

std::unique_ptr<World> NewMpiWorld(int rank, int size, int local_rank, int local_size,
                                   std::vector<std::string> hosts, const WorldOptions& options,
                                   MPI_Comm channels[kNumChannels], MPI_Comm reports) {
  return std::unique_ptr<World>(
      new MpiWorld(rank, size, local_rank, local_size, std::move(hosts), options, channels, reports));
}

}  // namespace tw::dist::internal
