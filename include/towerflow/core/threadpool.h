// ThreadPool: a fixed set of worker threads running scheduled closures, with a
// ParallelFor for data-parallel loops inside kernels.
//
// Schedule and ParallelFor are thread-safe. ParallelFor's shards are claimed
// by the calling thread and by the pool threads that are free: the caller runs
// every shard no one else has started and waits only for those in progress, so
// a busy pool never delays it. Shards must not block on other work of the pool.
// Shards are split into NumThreads() + 1 ranges: pool thread i's home is
// range i, any other thread's (the caller from outside, a thread running
// queued work in TryRunOne) the last one. Each thread claims in its home
// range first, then in the others: a loop run every step over the same arrays (an
// update over a variable and its accumulator) gives each part to the same
// core each time while both are free, so that part stays in that core's
// cache, and a thread that is busy elsewhere still has its part taken. The
// destructor runs what is queued, then joins.
// An idle worker spins for kDefaultSpin (core/spin_wait.h) before it sleeps, so
// that work handed over within a step starts at once.
#ifndef TOWERFLOW_CORE_THREADPOOL_H_
#define TOWERFLOW_CORE_THREADPOOL_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tw {

class ThreadPool {
 public:
  // REQUIRES: num_threads >= 1. Threads are named "<name>/<i>" for debuggers.
  ThreadPool(std::string name, int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int NumThreads() const { return static_cast<int>(threads_.size()); }
  void Schedule(std::function<void()> fn);
  // Runs one queued closure on the calling thread, if there is one: a thread
  // that waits for work of this pool helps instead of sleeping. False when the
  // queue was empty.
  bool TryRunOne();
  // Whether closures wait in the queue (a racy hint, for spinning waiters).
  bool HasQueuedWork() const { return queued_.load(std::memory_order_relaxed) > 0; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n). `cost_per_unit` is
  // a rough count of cycles per unit; small loops run inline on the caller.
  void ParallelFor(int64_t n, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop(int index);
  // The calling thread's home range of a ParallelFor: its index in this pool,
  // or NumThreads() for a thread that is not one of the pool's.
  int HomeRange() const;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  std::atomic<int> queued_{0};               // queue_.size(), readable without mu_
  std::atomic<bool> stopping_{false};        // written under mu_
  std::vector<std::thread> threads_;
};

// A pool for closures that may block for a long time (queue operations waiting
// on other steps): Schedule never queues work behind a blocked closure; it hands
// it to an idle thread or starts a new one, so the pool grows to the number of
// closures blocked at once. Idle threads stay for reuse (spinning a little
// before they sleep, as ThreadPool's do). Thread-safe; the
// destructor waits for running closures, which must be unblocked first (a
// Session closes its queues before its pools go).
class ElasticThreadPool {
 public:
  explicit ElasticThreadPool(std::string name) : name_(std::move(name)) {}
  ~ElasticThreadPool();
  ElasticThreadPool(const ElasticThreadPool&) = delete;
  ElasticThreadPool& operator=(const ElasticThreadPool&) = delete;

  void Schedule(std::function<void()> fn);
  int NumThreads() const;

 private:
  void WorkerLoop();

  std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  std::atomic<int> queued_{0};               // queue_.size(), readable without mu_
  int idle_ = 0;                             // guarded by mu_
  std::atomic<bool> stopping_{false};        // written under mu_
  std::vector<std::thread> threads_;         // guarded by mu_
};

// Runs fn(begin, end) over [0, n) on `pool`, or inline when pool is null.
void ParallelFor(ThreadPool* pool, int64_t n, int64_t cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_THREADPOOL_H_
