#include "towerflow/core/threadpool.h"

#include "towerflow/core/denormal.h"
#include "towerflow/core/spin_wait.h"

#include <algorithm>
#include <memory>
#include <pthread.h>

namespace tw {
namespace {
// The pool whose worker this thread is, and its index there.
thread_local const ThreadPool* tls_pool = nullptr;
thread_local int tls_index = 0;
}  // namespace

ThreadPool::ThreadPool(std::string name, int num_threads) {
  num_threads = std::max(1, num_threads);
  threads_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this, i] { WorkerLoop(i); });
    std::string thread_name = (name + "/" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), thread_name.c_str());
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::Schedule(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    queued_.fetch_add(1, std::memory_order_relaxed);
  }
  cv_.notify_one();
}

bool ThreadPool::TryRunOne() {
  std::function<void()> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return false;
    fn = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
  }
  fn();
  return true;
}

int ThreadPool::HomeRange() const { return tls_pool == this ? tls_index : NumThreads(); }

void ThreadPool::WorkerLoop(int index) {
  // Pool threads run kernels only: they flush denormals for their whole life.
  ScopedFlushDenormal flush_denormal;
  tls_pool = this;
  tls_index = index;
  for (;;) {
    SpinUntil([this] { return queued_.load(std::memory_order_relaxed) > 0 || stopping_.load(std::memory_order_relaxed); },
              kDefaultSpin);
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      fn = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    fn();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Below ~20k cycles of work a hand-off to another thread costs more than it saves.
  constexpr int64_t kMinCostPerShard = 20000;
  const int64_t total = n * std::max<int64_t>(cost_per_unit, 1);
  // Up to four shards per thread: a thread that frees up late still finds
  // some to take, and the caller is not left alone with a whole half.
  constexpr int64_t kShardsPerThread = 4;
  const int64_t shards = std::min<int64_t>(
      {n, kShardsPerThread * (NumThreads() + 1), std::max<int64_t>(1, total / kMinCostPerShard)});
  if (shards <= 1) {
    fn(0, n);
    return;
  }
  // Shards are claimed, not assigned: the caller and every helper that gets
  // to run take the next unclaimed shard, from their home range first, until
  // none is left. The caller never waits for a shard that no thread has
  // started (a helper queued behind other work finds nothing left and
  // returns), only for shards in progress.
  struct Work {
    int64_t n, block, shards;
    int ranges;  // range r: shards [r * shards / ranges, (r + 1) * shards / ranges)
    const std::function<void(int64_t, int64_t)>* fn;
    std::unique_ptr<std::atomic<int64_t>[]> next;  // per range, the next shard to claim
    std::atomic<int64_t> done{0};
    std::mutex mu;
    std::condition_variable cv;
    // Runs shards until none is left to claim, starting with range `home`.
    void Run(int home) {
      for (int j = 0; j < ranges; ++j) {
        const int r = (home + j) % ranges;
        const int64_t end = (r + 1) * shards / ranges;
        for (int64_t s = next[r].fetch_add(1, std::memory_order_relaxed); s < end;
             s = next[r].fetch_add(1, std::memory_order_relaxed)) {
          (*fn)(s * block, std::min(n, (s + 1) * block));
          if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == shards) {
            std::lock_guard<std::mutex> lock(mu);
            cv.notify_all();
          }
        }
      }
    }
  };
  auto work = std::make_shared<Work>();
  work->n = n;
  work->block = (n + shards - 1) / shards;
  work->shards = (n + work->block - 1) / work->block;
  work->ranges = NumThreads() + 1;  // one per pool thread, one for threads from outside
  work->next.reset(new std::atomic<int64_t>[static_cast<size_t>(work->ranges)]);
  for (int r = 0; r < work->ranges; ++r) work->next[r].store(r * work->shards / work->ranges, std::memory_order_relaxed);
  work->fn = &fn;  // called only for claimed shards, all finished before this returns
  const int64_t helpers = std::min<int64_t>(NumThreads(), work->shards - 1);
  // A helper may also run on a thread from outside that waits for this
  // pool's work (TryRunOne): its home is then the outsiders' range.
  for (int64_t h = 0; h < helpers; ++h) {
    Schedule([this, work] { work->Run(HomeRange()); });
  }
  work->Run(HomeRange());
  if (work->done.load(std::memory_order_acquire) == work->shards) return;
  if (SpinUntil([&] { return work->done.load(std::memory_order_acquire) == work->shards; }, kDefaultSpin)) return;
  std::unique_lock<std::mutex> lock(work->mu);
  work->cv.wait(lock, [&] { return work->done.load(std::memory_order_acquire) == work->shards; });
}

ElasticThreadPool::~ElasticThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ElasticThreadPool::Schedule(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(fn));
  queued_.fetch_add(1, std::memory_order_relaxed);
  if (idle_ >= static_cast<int>(queue_.size())) {
    cv_.notify_one();
    return;
  }
  threads_.emplace_back([this] { WorkerLoop(); });
  std::string thread_name = (name_ + "/" + std::to_string(threads_.size() - 1)).substr(0, 15);
  pthread_setname_np(threads_.back().native_handle(), thread_name.c_str());
}

int ElasticThreadPool::NumThreads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(threads_.size());
}

void ElasticThreadPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_;
    if (queue_.empty() && !stopping_) {
      lock.unlock();
      SpinUntil([this] { return queued_.load(std::memory_order_relaxed) > 0 || stopping_.load(std::memory_order_relaxed); },
                kDefaultSpin);
      lock.lock();
    }
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping and drained
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    lock.unlock();
    fn();
    lock.lock();
  }
}

void ParallelFor(ThreadPool* pool, int64_t n, int64_t cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (pool == nullptr) {
    if (n > 0) fn(0, n);
    return;
  }
  pool->ParallelFor(n, cost_per_unit, fn);
}

}  // namespace tw
