#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "towerflow/core/cancellation.h"
#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/core/threadpool.h"

namespace tw {
namespace {

TEST(StatusTest, CodesAndMessages) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  Status s = errors::InvalidArgument("shape ", 3, " is bad");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "InvalidArgument: shape 3 is bad");
  EXPECT_EQ(s.WithContext("node 'x'").message(), "node 'x': shape 3 is bad");
  EXPECT_TRUE(errors::IsDataLoss(errors::DataLoss("x")));
}

TEST(StatusTest, StatusOrCarriesValueOrError) {
  StatusOr<int> v = 3;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
  StatusOr<int> e = errors::NotFound("nope");
  EXPECT_EQ(e.status().code(), Code::kNotFound);
  StatusOr<int> from_ok = Status::OK();  // a bug in the caller, reported as Internal
  EXPECT_EQ(from_ok.status().code(), Code::kInternal);
}

TEST(TensorShapeTest, MakeRejectsNegativeAndOverflow) {
  EXPECT_EQ(TensorShape({2, 3}).num_elements(), 6);
  EXPECT_EQ(TensorShape().num_elements(), 1);
  EXPECT_EQ(TensorShape({4, 0}).num_elements(), 0);
  EXPECT_EQ(TensorShape::Make({2, -1}).status().code(), Code::kInvalidArgument);
  auto huge = TensorShape::Make({INT64_MAX / 2, 3});
  EXPECT_EQ(huge.status().code(), Code::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("int64"), std::string::npos);
}

TEST(PartialShapeTest, CompatibilityAndMerge) {
  PartialShape a({-1, 784});
  EXPECT_EQ(a.ToString(), "[?,784]");
  EXPECT_TRUE(a.IsCompatibleWith(PartialShape({100, 784})));
  EXPECT_FALSE(a.IsCompatibleWith(PartialShape({100, 10})));
  EXPECT_FALSE(a.IsCompatibleWith(PartialShape({784})));
  EXPECT_TRUE(PartialShape::Unknown().IsCompatibleWith(a));
  auto m = a.Merge(PartialShape({100, -1}));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->ToString(), "[100,784]");
  EXPECT_EQ(a.Merge(PartialShape({1, 2})).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(PartialShape::FromDims({-2}).status().code(), Code::kInvalidArgument);
}

TEST(TensorTest, CopiesShareBufferAndDeepCopyDoesNot) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape{2, 2});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  Tensor shared = t;
  EXPECT_TRUE(shared.SharesBufferWith(t));
  shared.data<float>()[0] = 9;
  EXPECT_EQ(t.data<float>()[0], 9);
  Tensor deep = t.DeepCopy();
  EXPECT_FALSE(deep.SharesBufferWith(t));
  deep.data<float>()[1] = 7;
  EXPECT_EQ(t.data<float>()[1], 2);
  auto r = t.Reshaped(TensorShape{4});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->SharesBufferWith(t));
  auto bad = t.Reshaped(TensorShape{3});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[2,2]"), std::string::npos);
  EXPECT_NE(bad.status().message().find("[3]"), std::string::npos);
}

TEST(TensorTest, StringTensorsOwnTheirElements) {
  Tensor t(kString, TensorShape{3});
  t.data<std::string>()[0] = std::string(1000, 'x');
  Tensor c = t.DeepCopy();
  EXPECT_EQ(c.data<std::string>()[0].size(), 1000u);
  EXPECT_EQ(c.data<std::string>()[2], "");
  EXPECT_EQ(Tensor::String("abc").scalar<std::string>(), "abc");
}

TEST(TensorTest, AllocationFailureIsResourceExhausted) {
  class TinyAllocator : public Allocator {
   public:
    std::string Name() const override { return "tiny"; }
    void* Allocate(size_t) override { return nullptr; }
    void Deallocate(void*, size_t) override {}
    size_t BytesInUse() const override { return 0; }
  } tiny;
  auto t = Tensor::Allocate(&tiny, kFloat32, TensorShape{1000, 1000});
  EXPECT_EQ(t.status().code(), Code::kResourceExhausted);
  EXPECT_NE(t.status().message().find("tiny"), std::string::npos);
}

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool("test", 3);
  std::vector<std::atomic<int>> hits(10007);
  pool.ParallelFor(10007, 100000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  int calls = 0;
  ParallelFor(nullptr, 5, 1, [&](int64_t b, int64_t e) { calls += static_cast<int>(e - b); });
  EXPECT_EQ(calls, 5);
}

// Shards are claimed: with every pool thread busy elsewhere, the caller runs
// them all and returns, instead of waiting for a shard queued behind that
// work (which here would wait for this very call: a deadlock). The helpers
// queued meanwhile find nothing left when they run.
TEST(ThreadPoolTest, ParallelForDoesNotWaitForABusyPool) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, covered = false;
  std::vector<std::atomic<int>> hits(4096);
  // Declared after what its thread reads, so that it is destroyed (its thread
  // joined, the blocker's wait returned) before those are.
  ThreadPool pool("test", 1);
  pool.Schedule([&] {  // occupies the pool's only thread until the loop is done
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  std::thread caller([&] {
    pool.ParallelFor(4096, 100000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    std::lock_guard<std::mutex> lock(mu);
    covered = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return covered; }))
        << "ParallelFor waited for the busy pool";
    release = true;
    cv.notify_all();
  }
  caller.join();
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

// Occupies pool threads until released.
struct Blocker {
  std::mutex mu;
  std::condition_variable cv;
  int blocked = 0;  // guarded by mu
  bool release = false;  // guarded by mu
  void Block() {
    std::unique_lock<std::mutex> lock(mu);
    ++blocked;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  }
  bool WaitBlocked(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return blocked == n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  }
};

// Shards are claimed from the claiming thread's home range first (one range
// per pool thread, one for threads from outside), then from the next ranges.
// With every pool thread busy, the order one thread runs the shards in shows
// it: a caller from outside starts with the last range; a pool thread with its
// own, never the outsiders'.
TEST(ThreadPoolTest, ParallelForStartsInTheCallersHomeRange) {
  Blocker both, one;  // outlive the pool, whose threads use them
  ThreadPool pool("test", 2);
  // One shard per index: 12 = 4 per participant (2 threads and a caller), so
  // ranges of 4: thread 0 [0, 4), thread 1 [4, 8), outsiders [8, 12).
  auto order_of_shards = [&pool] {
    std::vector<int64_t> order;
    pool.ParallelFor(12, 1000000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) order.push_back(i);  // one thread runs them all: no race
    });
    return order;
  };
  pool.Schedule([&] { both.Block(); });
  pool.Schedule([&] { both.Block(); });
  ASSERT_TRUE(both.WaitBlocked(2));
  EXPECT_EQ(order_of_shards(), (std::vector<int64_t>{8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7}));
  both.Release();  // the helpers queued meanwhile find nothing left
  // A pool thread calling, the other one busy.
  pool.Schedule([&] { one.Block(); });
  ASSERT_TRUE(one.WaitBlocked(1));
  std::vector<int64_t> inner;
  std::atomic<bool> done{false};
  pool.Schedule([&] {
    inner = order_of_shards();
    done = true;
  });
  while (!done) std::this_thread::yield();
  one.Release();
  const std::vector<int64_t> from0 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::vector<int64_t> from1 = {4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3};
  EXPECT_TRUE(inner == from0 || inner == from1) << "started at shard " << (inner.empty() ? -1 : inner[0]);
}

}  // namespace
TEST(CancellationTest, CallbacksRunOnceAndLateRegistrationFails) {
  CancellationManager cm;
  int ran = 0, dropped = 0;
  CancellationManager::Token a = -1, b = -1, c = -1;
  ASSERT_TRUE(cm.RegisterCallback(&a, [&] { ++ran; }));
  ASSERT_TRUE(cm.RegisterCallback(&b, [&] { ++dropped; }));
  EXPECT_NE(a, b);
  EXPECT_TRUE(cm.DeregisterCallback(b));
  EXPECT_FALSE(cm.DeregisterCallback(b));
  EXPECT_FALSE(cm.IsCancelled());
  cm.StartCancel();
  cm.StartCancel();
  EXPECT_TRUE(cm.IsCancelled());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(dropped, 0);
  EXPECT_FALSE(cm.DeregisterCallback(a)) << "it ran";
  EXPECT_FALSE(cm.RegisterCallback(&c, [&] { ++ran; }));
  EXPECT_EQ(ran, 1);
}

TEST(CancellationTest, WakesAWaiterOnAnotherThread) {
  CancellationManager cm;
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false;
  CancellationManager::Token t;
  ASSERT_TRUE(cm.RegisterCallback(&t, [&] {
    std::lock_guard<std::mutex> lock(mu);
    woken = true;
    cv.notify_all();
  }));
  std::thread canceller([&] { cm.StartCancel(); });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return woken; });
  lock.unlock();
  canceller.join();
  EXPECT_TRUE(cm.IsCancelled());
}

}  // namespace tw
