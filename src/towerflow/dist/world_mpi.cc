// The World over MPI (world.h): compiled only when towerflow is built with MPI.
//
// After MPI_Init_thread, one communication thread makes every MPI call.
// Callers hand it a Call and sleep on a condition variable; the thread issues
// calls in each channel's bucket order as non-blocking collectives on the
// channel's own communicator (a dup of MPI_COMM_WORLD made at start, in the
// same order on every rank), drives them with MPI_Test (spinning briefly, then
// sleeping up to half a millisecond: MPI's own blocking calls would spin a core
// that the training needs), and moves multi-phase calls (reduce-scatter then
// all-gather; lengths then bytes) from phase to phase. Every issued call is
// also reported to rank 0 (a three-number MPI_Isend on a communicator of its
// own), which is how rank 0 names the ranks that never issued a call that
// timed out.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <type_traits>

#include "towerflow/dist/internal/world_registry.h"

namespace tw::dist::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kNumChannels = 2;
constexpr int kReportTag = 7;

Status MpiStatus(const char* call, int rc) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return errors::Internal(call, " failed: ", std::string(text, static_cast<size_t>(len)));
}

StatusOr<MPI_Datatype> MpiType(DataType t) {
  switch (t) {
    case kFloat32:
      return MPI_FLOAT;
    case kFloat64:
      return MPI_DOUBLE;
    case kInt32:
      return MPI_INT32_T;
    case kInt64:
      return MPI_INT64_T;
    default:
      return errors::InvalidArgument("no cross-process reduction of ", DataTypeName(t),
                                     " (float, double, int32 and int64 reduce)");
  }
}

enum class Kind { kAllReduce, kBroadcast, kAllGather };

// One collective call, from submission to completion. The submitting thread
// owns it and waits on `done`; the communication thread works on it.
struct Call {
  Kind kind = Kind::kAllReduce;
  CollectiveTag tag;
  int64_t step = 0;
  // kAllReduce: count elements of dtype at data. kBroadcast: count bytes.
  DataType dtype = kFloat32;
  void* data = nullptr;
  int64_t count = 0;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  const std::string* mine = nullptr;              // kAllGather
  std::vector<std::string>* gathered = nullptr;  // kAllGather

  // The communication thread's.
  uint64_t seq = 0;
  int phase = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  Clock::time_point issued;
  std::vector<char> send, recv;
  int64_t per_rank = 0;  // kAllReduce: elements per rank's block
  int64_t my_length = 0;
  std::vector<int64_t> lengths;
  std::vector<int> counts, displs;

  bool done = false;  // guarded by the world's mutex
  Status status;
};

// What rank 0 knows of each rank's newest issued call on each channel.
struct Seen {
  int64_t seq = -1;  // -1: none yet
  int64_t step = 0;
};

class MpiWorld final : public World {
 public:
  MpiWorld(int rank, int size, int local_rank, int local_size, std::vector<std::string> hosts,
           const WorldOptions& options, MPI_Comm channels[kNumChannels], MPI_Comm reports)
      : World(rank, size, local_rank, local_size, std::move(hosts), options), reports_(reports),
        seen_(static_cast<size_t>(size) * kNumChannels) {
    for (int c = 0; c < kNumChannels; ++c) channels_[c] = channels[c];
    thread_ = std::thread([this] { Loop(); });
  }

  ~MpiWorld() override { StopThread(); }

  Status AllReduce(const CollectiveTag& tag, DataType dtype, void* data, int64_t count, ReduceOp op) override {
    TW_ASSIGN_OR_RETURN(MPI_Datatype type, MpiType(dtype));
    (void)type;
    Call call;
    call.kind = Kind::kAllReduce;
    call.tag = tag;
    call.dtype = dtype;
    call.data = data;
    call.count = count;
    call.op = op;
    return Submit(call);
  }

  Status Broadcast(const CollectiveTag& tag, void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= size()) return errors::InvalidArgument("broadcast root ", root, " of ", size(), " ranks");
    Call call;
    call.kind = Kind::kBroadcast;
    call.tag = tag;
    call.data = data;
    call.count = bytes;
    call.root = root;
    return Submit(call);
  }

  StatusOr<std::vector<std::string>> AllGather(const CollectiveTag& tag, const std::string& mine) override {
    std::vector<std::string> out;
    Call call;
    call.kind = Kind::kAllGather;
    call.tag = tag;
    call.mine = &mine;
    call.gathered = &out;
    TW_RETURN_IF_ERROR(Submit(call));
    return out;
  }

  void Finalize() override {
    StopThread();
    SetCurrentWorld(nullptr);
    for (auto& r : sends_) MPI_Wait(&r.request, MPI_STATUS_IGNORE);
    sends_.clear();
    if (rank() == 0) DrainReports();
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
    int64_t message[3];
    MPI_Request request = MPI_REQUEST_NULL;
  };

  Status Submit(Call& call) {
    call.step = step();
    std::unique_lock<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
    if (stopping_) return errors::FailedPrecondition("the multi-process world has finalized");
    if (call.tag.num_buckets < 1 || call.tag.bucket < 0 || call.tag.bucket >= call.tag.num_buckets) {
      return errors::InvalidArgument("bucket ", call.tag.bucket, " of ", call.tag.num_buckets);
    }
    pending_[static_cast<int>(call.tag.channel)].push_back(&call);
    work_.notify_all();
    done_cv_.wait(lock, [&] { return call.done; });
    return call.status;
  }

  void StopThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      work_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  // The communication thread.
  void Loop() {
    std::vector<Call*> active;
    auto backoff = std::chrono::microseconds(0);
    for (;;) {
      std::vector<Call*> issue;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (active.empty()) {
          work_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_ || AnyIssuable(); });
          if (stopping_ && !AnyIssuable()) return;
        }
        TakeIssuable(&issue);
      }
      bool progressed = !issue.empty();
      for (Call* c : issue) {
        Status s = Issue(*c);
        if (!s.ok() || c->phase < 0) {
          Complete(c, s);
        } else {
          active.push_back(c);
        }
      }
      for (size_t i = 0; i < active.size();) {
        Call* c = active[i];
        int finished = 0;
        Status s = MpiStatus("MPI_Test", MPI_Test(&c->request, &finished, MPI_STATUS_IGNORE));
        if (s.ok() && finished) s = Advance(*c);
        if (!s.ok() || c->phase < 0) {
          progressed = true;
          Complete(c, s);
          active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        if (finished) progressed = true;
        if (TimedOut(*c)) {
          Status timeout = TimeoutError(*c);
          {
            std::lock_guard<std::mutex> lock(mu_);
            broken_ = timeout;
          }
          // The request stays pending in MPI, which may still write into the
          // call's buffers: they move to the world. The caller is expected to Abort.
          abandoned_.push_back(std::move(c->send));
          abandoned_.push_back(std::move(c->recv));
          Complete(c, timeout);
          active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
          FailAllPending(timeout);
          continue;
        }
        ++i;
      }
      PollSends();
      if (rank() == 0) DrainReports();
      if (progressed) {
        backoff = std::chrono::microseconds(0);
      } else if (!active.empty()) {
        backoff = std::min(std::chrono::microseconds(500), std::max(std::chrono::microseconds(10), backoff * 2));
        std::this_thread::sleep_for(backoff);
      }
    }
  }

  // The next call of a channel: its bucket follows the last issued one.
  Call* NextOf(int channel) {
    for (Call* c : pending_[channel]) {
      if (c->tag.bucket == next_bucket_[channel]) return c;
    }
    return nullptr;
  }
  bool AnyIssuable() {
    for (int ch = 0; ch < kNumChannels; ++ch) {
      if (!busy_[ch] && NextOf(ch) != nullptr) return true;
    }
    return false;
  }
  // At most one call per channel is in flight: a call's later phases are
  // issued when its earlier ones complete, which happens in a different order
  // on different ranks, and MPI needs every rank to issue a communicator's
  // collectives in one order.
  void TakeIssuable(std::vector<Call*>* out) {
    for (int ch = 0; ch < kNumChannels; ++ch) {
      if (busy_[ch]) continue;
      if (Call* c = NextOf(ch)) {
        busy_[ch] = true;
        auto& q = pending_[ch];
        q.erase(std::find(q.begin(), q.end(), c));
        next_bucket_[ch] = (c->tag.bucket + 1) % c->tag.num_buckets;
        c->seq = next_seq_[ch]++;
        out->push_back(c);
      }
    }
  }

  void FailAllPending(const Status& s) {
    std::vector<Call*> calls;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& q : pending_) {
        calls.insert(calls.end(), q.begin(), q.end());
        q.clear();
      }
    }
    for (Call* c : calls) Complete(c, s);
  }

  void Complete(Call* c, const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    busy_[static_cast<int>(c->tag.channel)] = false;
    c->status = s;
    c->done = true;
    done_cv_.notify_all();
  }

  MPI_Comm Comm(const Call& c) const { return channels_[static_cast<int>(c.tag.channel)]; }

  // Starts the call's first phase; phase -1 when nothing is left to do.
  Status Issue(Call& c) {
    c.issued = Clock::now();
    Report(c);
    if (size() == 1) {
      c.phase = -1;
      return Status::OK();
    }
    const int64_t kIntMax = std::numeric_limits<int>::max();
    switch (c.kind) {
      case Kind::kAllReduce: {
        TW_ASSIGN_OR_RETURN(MPI_Datatype type, MpiType(c.dtype));
        const size_t elem = DataTypeSize(c.dtype);
        c.per_rank = (c.count + size() - 1) / size();
        if (c.per_rank == 0) {
          c.phase = -1;
          return Status::OK();
        }
        if (c.per_rank > kIntMax) return errors::InvalidArgument("all-reduce of ", c.count, " elements: too many");
        c.send.assign(static_cast<size_t>(c.per_rank * size()) * elem, 0);
        std::memcpy(c.send.data(), c.data, static_cast<size_t>(c.count) * elem);
        c.recv.resize(static_cast<size_t>(c.per_rank) * elem);
        c.phase = 1;
        return MpiStatus("MPI_Ireduce_scatter_block",
                         MPI_Ireduce_scatter_block(c.send.data(), c.recv.data(), static_cast<int>(c.per_rank), type,
                                                   c.op == ReduceOp::kMax ? MPI_MAX : MPI_SUM, Comm(c), &c.request));
      }
      case Kind::kBroadcast:
        if (c.count > kIntMax) return errors::InvalidArgument("broadcast of ", c.count, " bytes: too many");
        c.phase = 1;
        return MpiStatus("MPI_Ibcast",
                         MPI_Ibcast(c.data, static_cast<int>(c.count), MPI_BYTE, c.root, Comm(c), &c.request));
      case Kind::kAllGather:
        c.my_length = static_cast<int64_t>(c.mine->size());
        c.lengths.resize(static_cast<size_t>(size()));
        c.phase = 1;
        return MpiStatus("MPI_Iallgather", MPI_Iallgather(&c.my_length, 1, MPI_INT64_T, c.lengths.data(), 1,
                                                          MPI_INT64_T, Comm(c), &c.request));
    }
    return errors::Internal("unknown collective");
  }

  // The current phase completed: starts the next one, or finishes (phase -1).
  Status Advance(Call& c) {
    const int64_t kIntMax = std::numeric_limits<int>::max();
    if (c.kind == Kind::kBroadcast) {
      c.phase = -1;
      return Status::OK();
    }
    if (c.kind == Kind::kAllReduce) {
      TW_ASSIGN_OR_RETURN(MPI_Datatype type, MpiType(c.dtype));
      const size_t elem = DataTypeSize(c.dtype);
      if (c.phase == 1) {
        if (c.op == ReduceOp::kMean) DivideBlock(c);
        c.phase = 2;
        return MpiStatus("MPI_Iallgather", MPI_Iallgather(c.recv.data(), static_cast<int>(c.per_rank), type,
                                                          c.send.data(), static_cast<int>(c.per_rank), type, Comm(c),
                                                          &c.request));
      }
      std::memcpy(c.data, c.send.data(), static_cast<size_t>(c.count) * elem);
      c.phase = -1;
      return Status::OK();
    }
    // kAllGather
    if (c.phase == 1) {
      int64_t total = 0;
      c.counts.resize(static_cast<size_t>(size()));
      c.displs.resize(static_cast<size_t>(size()));
      for (int r = 0; r < size(); ++r) {
        const int64_t n = c.lengths[static_cast<size_t>(r)];
        if (n < 0 || n > kIntMax || total > kIntMax - n) {
          return errors::InvalidArgument("all-gather: rank ", r, " sends ", n, " bytes, past the 2 GiB limit");
        }
        c.counts[static_cast<size_t>(r)] = static_cast<int>(n);
        c.displs[static_cast<size_t>(r)] = static_cast<int>(total);
        total += n;
      }
      c.recv.resize(static_cast<size_t>(std::max<int64_t>(total, 1)));
      c.phase = 2;
      return MpiStatus("MPI_Iallgatherv",
                       MPI_Iallgatherv(c.mine->data(), static_cast<int>(c.my_length), MPI_CHAR, c.recv.data(),
                                       c.counts.data(), c.displs.data(), MPI_CHAR, Comm(c), &c.request));
    }
    c.gathered->clear();
    for (int r = 0; r < size(); ++r) {
      c.gathered->emplace_back(c.recv.data() + c.displs[static_cast<size_t>(r)],
                               static_cast<size_t>(c.counts[static_cast<size_t>(r)]));
    }
    c.phase = -1;
    return Status::OK();
  }

  // The mean of this rank's block: the sum divided by the number of ranks, once.
  void DivideBlock(Call& c) const {
    auto divide = [&](auto* p) {
      using T = std::remove_pointer_t<decltype(p)>;
      const T n = static_cast<T>(size());
      for (int64_t i = 0; i < c.per_rank; ++i) p[i] = static_cast<T>(p[i] / n);
    };
    switch (c.dtype) {
      case kFloat32:
        divide(reinterpret_cast<float*>(c.recv.data()));
        break;
      case kFloat64:
        divide(reinterpret_cast<double*>(c.recv.data()));
        break;
      case kInt32:
        divide(reinterpret_cast<int32_t*>(c.recv.data()));
        break;
      case kInt64:
        divide(reinterpret_cast<int64_t*>(c.recv.data()));
        break;
      default:
        break;
    }
  }

  double LimitSeconds() const {
    const double t = options().collective_timeout_seconds;
    if (t <= 0) return 0;
    // Rank 0 gives up first: it is the one that can name the missing ranks.
    return rank() == 0 ? t : t + 2 + 0.05 * t;
  }

  bool TimedOut(const Call& c) const {
    const double limit = LimitSeconds();
    return limit > 0 && std::chrono::duration<double>(Clock::now() - c.issued).count() > limit;
  }

  std::string Describe(const Call& c) const {
    std::string what = c.tag.what.empty() ? std::string(c.kind == Kind::kAllReduce   ? "an all-reduce"
                                                        : c.kind == Kind::kBroadcast ? "a broadcast"
                                                                                     : "an all-gather")
                                          : c.tag.what;
    return StrCat(what, " (", ChannelName(c.tag.channel), " channel, bucket ", c.tag.bucket, " of ",
                  c.tag.num_buckets, ") at step ", c.step);
  }

  Status TimeoutError(const Call& c) {
    const double waited = std::chrono::duration<double>(Clock::now() - c.issued).count();
    std::string who;
    if (rank() == 0) {
      DrainReports();
      const int ch = static_cast<int>(c.tag.channel);
      for (int r = 0; r < size(); ++r) {
        const Seen& s = seen_[static_cast<size_t>(r) * kNumChannels + static_cast<size_t>(ch)];
        if (s.seq >= static_cast<int64_t>(c.seq)) continue;
        who += StrCat(who.empty() ? "" : "; ", "rank ", r, " (", hosts()[static_cast<size_t>(r)], ") never joined it",
                      s.seq < 0 ? std::string(" and has made no call on this channel")
                                : StrCat(": its newest call there was at step ", s.step));
      }
      if (who.empty()) who = "every rank joined it, and one stopped answering during the transfer";
    } else {
      who = "rank 0 names the missing ranks when it is alive";
    }
    return Status(Code::kDeadlineExceeded,
                  StrCat("rank ", rank(), " (", hosts()[static_cast<size_t>(rank())], "): ", Describe(c),
                         " did not complete within ", static_cast<int64_t>(waited), " s: ", who,
                         ". A rank that crashed, hangs or was stopped holds up every other "
                         "(--collective-timeout sets the wait)"));
  }

  // Tells rank 0 that this rank issued `c`.
  void Report(const Call& c) {
    const int ch = static_cast<int>(c.tag.channel);
    if (rank() == 0) {
      seen_[static_cast<size_t>(ch)] = {static_cast<int64_t>(c.seq), c.step};
      return;
    }
    sends_.emplace_back();
    Send& s = sends_.back();
    s.message[0] = ch;
    s.message[1] = static_cast<int64_t>(c.seq);
    s.message[2] = c.step;
    MPI_Isend(s.message, 3, MPI_INT64_T, 0, kReportTag, reports_, &s.request);
  }

  void PollSends() {
    while (!sends_.empty()) {
      int finished = 0;
      MPI_Test(&sends_.front().request, &finished, MPI_STATUS_IGNORE);
      if (!finished) return;
      sends_.pop_front();
    }
  }

  // Rank 0: receives every report that has arrived.
  void DrainReports() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, reports_, &flag, &st) != MPI_SUCCESS || !flag) return;
      int64_t m[3] = {0, 0, 0};
      MPI_Recv(m, 3, MPI_INT64_T, st.MPI_SOURCE, kReportTag, reports_, MPI_STATUS_IGNORE);
      if (m[0] < 0 || m[0] >= kNumChannels || st.MPI_SOURCE < 0 || st.MPI_SOURCE >= size()) continue;
      seen_[static_cast<size_t>(st.MPI_SOURCE) * kNumChannels + static_cast<size_t>(m[0])] = {m[1], m[2]};
    }
  }

  MPI_Comm channels_[kNumChannels];
  MPI_Comm reports_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable work_, done_cv_;
  std::vector<Call*> pending_[kNumChannels];  // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  Status broken_;                             // guarded by mu_: a timeout happened
  // The communication thread's.
  bool busy_[kNumChannels] = {false, false};  // guarded by mu_: a call of the channel is in flight
  int next_bucket_[kNumChannels] = {0, 0};
  uint64_t next_seq_[kNumChannels] = {0, 0};
  std::deque<Send> sends_;
  std::vector<Seen> seen_;  // rank 0: [rank * kNumChannels + channel]
  std::vector<std::vector<char>> abandoned_;  // buffers of timed-out calls
};

}  // namespace

StatusOr<std::unique_ptr<World>> StartMpiWorld(const Launch& launch, const WorldOptions& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    TW_RETURN_IF_ERROR(MpiStatus("MPI_Init_thread", MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided)));
    if (provided < MPI_THREAD_SERIALIZED) {
      return errors::Internal("MPI provides thread level ", provided,
                              "; towerflow needs MPI_THREAD_SERIALIZED or better");
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != launch.size || rank != launch.rank) {
    return errors::Internal("MPI says rank ", rank, " of ", size, " but the launcher's environment says rank ",
                            launch.rank, " of ", launch.size);
  }
  MPI_Comm local;
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Comm_split_type",
                               MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local)));
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int name_len = 0;
  MPI_Get_processor_name(name, &name_len);
  std::vector<char> names(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Allgather", MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                                                              MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD)));
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) {
    const char* p = names.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    hosts.emplace_back(p, strnlen(p, MPI_MAX_PROCESSOR_NAME));
  }
  MPI_Comm channels[kNumChannels];
  for (auto& comm : channels) {
    TW_RETURN_IF_ERROR(MpiStatus("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &comm)));
  }
  MPI_Comm reports;
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &reports)));
  return std::unique_ptr<World>(
      new MpiWorld(rank, size, local_rank, local_size, std::move(hosts), options, channels, reports));
}

}  // namespace tw::dist::internal
