// Shutdown never hangs (issue 8, item 4): queues closed or cancelled while
// queue-runner threads are blocked, on a full queue and on an empty one, at
// random moments (seeded), in many trials. data/queue_runner_test.cc and
// data/queue_test.cc check each way of ending once, at a quiet moment; this
// adds the random timings (including shutdown while the threads are still
// starting their first step), blocking on empty queues, and the four ways of
// ending against both.
//
// Each trial builds a pipeline, starts its runners (tf.train.start_queue_runners)
// and a consumer thread (the training loop), waits a random 0-20 ms, ends it one
// way, then joins everything: the coordinator's Join within a 10 s grace
// period, the consumer within 10 s. A trial runs on a thread of its own and is
// given 30 s; one that does not finish fails the test instead of hanging it (its
// objects are leaked, since its threads may still use them).
//
// Pipelines:
// - full: runners enqueue constants into a queue of capacity 1-3, faster than
//   the consumer (which may not dequeue at all) takes them;
// - empty: queues q0 and q1 feed each other through their runners (q1 -> q0 ->
//   q1) and a third runner moves q1 into q2, which the consumer dequeues; all
//   start empty, so every runner waits on an empty queue; the test puts a few
//   elements into q1 at random times.
// Ways of ending: the coordinator's stop (its cancel threads close the queues
// with cancel_pending_enqueues), the cancel op run directly, Session::Close,
// and a plain close (for the full pipeline with a consumer draining it: TF's
// close waits behind pending enqueues, so without a consumer it would wait for
// ever by design; for the empty pipeline, q1's close cascades through the
// runners' OutOfRange).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/data/register.h"
#include "towerflow/towerflow.h"

namespace tw {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

enum class End { kCoordinatorStop, kCancelOp, kSessionClose, kCloseOp };
const char* EndName(End e) {
  switch (e) {
    case End::kCoordinatorStop:
      return "coordinator stop";
    case End::kCancelOp:
      return "cancel op";
    case End::kSessionClose:
      return "Session::Close";
    case End::kCloseOp:
      return "close op";
  }
  return "?";
}

struct TrialSpec {
  bool empty = false;  // which pipeline
  End end = End::kCoordinatorStop;
  int runners = 1;
  int64_t capacity = 1;
  bool consumer = true;
  int consumer_sleep_us = 0;
  int delay_us = 0;
  int injected = 0;  // elements the test puts into q1 (empty pipeline)
  std::string ToString() const {
    return StrCat(empty ? "empty" : "full", " pipeline, ", EndName(end), ", ", runners,
                  " runner(s), capacity ", capacity,
                  consumer ? StrCat(", consumer sleeping ", consumer_sleep_us, " us") : ", no consumer",
                  ", shutdown after ", delay_us, " us, ", injected, " injected");
  }
};

// Everything a trial builds; leaked when the trial hangs.
struct Trial {
  Graph graph;
  std::unique_ptr<Session> session;
  train::Coordinator coord;
  io::Queue q0, q1, q2;  // full pipeline: q2 only
  Node* close = nullptr;
  Node* cancel = nullptr;
  Node* inject = nullptr;
  Output dequeue;
  std::atomic<bool> consumer_done{false};
  Status consumer_status;  // written by the consumer before consumer_done
};

// Builds the pipeline; "" or what failed.
std::string BuildTrial(const TrialSpec& spec, Trial* t) {
  Scope root(t->graph);
  const io::FIFOQueueOptions scalar = {.shapes = {TensorShape{}}};
  t->q2 = io::FIFOQueue(root.WithOpName("q2"), spec.capacity, {kInt32}, scalar);
  if (!spec.empty) {
    std::vector<Node*> enqueues;
    for (int i = 0; i < spec.runners; ++i) enqueues.push_back(t->q2.Enqueue(root, {Const(root, i)}));
    train::QueueRunner runner(root, t->q2, enqueues);
    train::AddQueueRunner(t->graph, runner);
    t->close = runner.close_op();
    t->cancel = runner.cancel_op();
  } else {
    t->q0 = io::FIFOQueue(root.WithOpName("q0"), spec.capacity, {kInt32}, scalar);
    t->q1 = io::FIFOQueue(root.WithOpName("q1"), spec.capacity + 8, {kInt32}, scalar);
    train::QueueRunner r0(root, t->q0, {t->q0.Enqueue(root, t->q1.Dequeue(root))});
    train::QueueRunner r1(root, t->q1, {t->q1.Enqueue(root, t->q0.Dequeue(root))});
    std::vector<Node*> moves;
    for (int i = 0; i < spec.runners; ++i) moves.push_back(t->q2.Enqueue(root, t->q1.Dequeue(root)));
    train::QueueRunner r2(root, t->q2, moves);
    for (const auto& r : {r0, r1, r2}) train::AddQueueRunner(t->graph, r);
    t->close = r1.close_op();
    t->cancel = r1.cancel_op();
    t->inject = t->q1.Enqueue(root, {Const(root, 7)});
  }
  t->dequeue = t->q2.Dequeue(root)[0];
  if (!root.ok()) return root.status().ToString();
  t->session = std::make_unique<Session>(t->graph);
  return "";
}

// Runs one trial; "" or what went wrong. *shutdown_ms: from the end action to
// everything joined. Sets *hung and returns when threads outlive their deadline
// (the caller must then leak `t`).
std::string RunTrial(const TrialSpec& spec, Trial* t, double* shutdown_ms, bool* hung) {
  if (std::string why = BuildTrial(spec, t); !why.empty()) return why;
  Session& s = *t->session;
  std::vector<std::thread> threads = train::StartQueueRunners(s, t->coord);
  std::atomic<bool>& consumer_done = t->consumer_done;
  Status& consumer_status = t->consumer_status;
  std::thread consumer;
  if (spec.consumer) {
    // Only `t` (leaked if the trial hangs) is shared with this thread.
    consumer = std::thread([t, sleep_us = spec.consumer_sleep_us] {
      Status st;
      for (;;) {
        st = t->session->Run({t->dequeue}).status();
        if (!st.ok()) break;
        if (sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      }
      t->consumer_status = st;
      t->consumer_done = true;
    });
  }
  // The empty pipeline gets a few elements at random moments before the end.
  std::string why;
  for (int i = 0; i < spec.injected; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(spec.delay_us / (spec.injected + 1)));
    Status st = s.Run(t->inject);
    if (!st.ok()) why += "inject: " + st.ToString() + "; ";
  }
  std::this_thread::sleep_for(std::chrono::microseconds(spec.delay_us / (spec.injected + 1)));

  const Clock::time_point ending = Clock::now();
  switch (spec.end) {
    case End::kCoordinatorStop:
      t->coord.RequestStop();
      break;
    case End::kCancelOp: {
      Status st = s.Run(t->cancel);
      if (!st.ok()) why += "cancel op: " + st.ToString() + "; ";
      break;
    }
    case End::kSessionClose:
      s.Close();
      break;
    case End::kCloseOp: {
      Status st = s.Run(t->close);
      if (!st.ok() && !errors::IsCancelled(st)) why += "close op: " + st.ToString() + "; ";
      break;
    }
  }
  // The consumer ends by itself: the queue it reads is closed (OutOfRange) or
  // cancelled, whichever way the pipeline ends.
  if (spec.consumer) {
    const Clock::time_point start = Clock::now();
    while (!consumer_done && Clock::now() - start < 10s) std::this_thread::sleep_for(100us);
    if (!consumer_done) {
      *hung = true;
      consumer.detach();
      return why + "the consumer is still blocked 10 s after the end";
    }
    consumer.join();
    if (!errors::IsOutOfRange(consumer_status) && !errors::IsCancelled(consumer_status)) {
      why += "consumer ended with " + consumer_status.ToString() + "; ";
    }
  }
  t->coord.RequestStop();
  Status joined = t->coord.Join(threads, 10s);
  *shutdown_ms = std::chrono::duration<double, std::milli>(Clock::now() - ending).count();
  if (errors::IsInternal(joined)) {  // "Coordinator stopped with threads still running: ..."
    *hung = true;
    return why + joined.ToString();
  }
  // Runners may stop the coordinator with the error that ended them: a
  // cancelled queue, or (after a plain close or a cancel that did not come from
  // the coordinator) an enqueue refused by the closed queue: Aborted "<queue>
  // is closed.", as TF1 reports it.
  const bool closed = errors::IsAborted(joined) && joined.message().find("is closed.") != std::string::npos;
  if (!joined.ok() && !errors::IsCancelled(joined) && !errors::IsOutOfRange(joined) && !closed) {
    why += "Join: " + joined.ToString();
  }
  return why;
}

TEST(ShutdownTest, ClosingOrCancellingQueuesWithBlockedRunnersNeverHangs) {
  EnsureDataRegistered();
  constexpr int kTrials = 200;
  std::mt19937 rng(4);
  int hung = 0, failed = 0;
  double max_ms = 0, total_ms = 0;
  int per_end[4] = {0, 0, 0, 0};
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kTrials; ++i) {
    TrialSpec spec;
    spec.empty = rng() % 2 == 1;
    spec.end = static_cast<End>(rng() % 4);
    spec.runners = 1 + static_cast<int>(rng() % 4);
    spec.capacity = 1 + static_cast<int64_t>(rng() % 3);
    spec.consumer = spec.empty || spec.end == End::kCloseOp || rng() % 2 == 0;
    spec.consumer_sleep_us = rng() % 3 == 0 ? 0 : static_cast<int>(rng() % 2000);
    spec.delay_us = static_cast<int>(rng() % 20000);
    if (rng() % 8 == 0) spec.delay_us = 0;  // while the threads start their first step
    spec.injected = spec.empty ? static_cast<int>(rng() % 4) : 0;
    ++per_end[static_cast<int>(spec.end)];

    auto trial = std::make_unique<Trial>();
    auto done = std::make_shared<std::promise<std::string>>();
    std::future<std::string> result = done->get_future();
    auto hung_flag = std::make_shared<std::atomic<bool>>(false);
    auto ms = std::make_shared<double>(0);
    Trial* raw = trial.get();
    std::thread runner([spec, raw, done, hung_flag, ms] {
      bool h = false;
      std::string why = RunTrial(spec, raw, ms.get(), &h);
      *hung_flag = h;
      done->set_value(why);
    });
    if (result.wait_for(30s) != std::future_status::ready) {
      ADD_FAILURE() << "trial " << i << " (" << spec.ToString() << ") did not finish in 30 s";
      runner.detach();
      (void)trial.release();  // its threads may still use it
      ++hung;
      continue;
    }
    runner.join();
    const std::string why = result.get();
    if (*hung_flag) {
      ADD_FAILURE() << "trial " << i << " (" << spec.ToString() << ") hung: " << why;
      (void)trial.release();
      ++hung;
      continue;
    }
    if (!why.empty()) {
      ADD_FAILURE() << "trial " << i << " (" << spec.ToString() << "): " << why;
      ++failed;
    }
    max_ms = std::max(max_ms, *ms);
    total_ms += *ms;
  }
  std::printf(
      "[ shutdown ] %d trials in %.1f s (%d coordinator stop, %d cancel op, %d Session::Close, %d close op): "
      "%d hung, %d failed; shutdown to joined: mean %.1f ms, max %.1f ms\n",
      kTrials, std::chrono::duration<double>(Clock::now() - start).count(), per_end[0], per_end[1],
      per_end[2], per_end[3], hung, failed, total_ms / kTrials, max_ms);
}

// Session::Close racing with the first steps of other threads: a step that
// got past the session's closed check before Close, and creates its queue only
// after Close cancelled the queues that existed, must not block on that queue
// for ever. Each trial: a fresh session, a thread whose first step dequeues
// from an empty queue, Close after 0-3 ms; the dequeue must return (Cancelled)
// within 10 s.
TEST(ShutdownTest, SessionCloseDuringAFirstStepNeverLeavesItBlocked) {
  EnsureDataRegistered();
  constexpr int kTrials = 200;
  std::mt19937 rng(5);
  int hung = 0;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kTrials; ++i) {
    auto graph = std::make_shared<Graph>();
    Scope root(*graph);
    // Work before the queue op widens the window a real first step has (its
    // plan's other nodes) between the closed check and the queue's creation.
    Output busy = Sum(root, Fill(root, Const(root, std::vector<int32_t>{1 << 21}), Const(root, 1.0f)), {0});
    io::Queue q = io::FIFOQueue(root.WithOpName("q").WithControlDependencies({busy}), 2, {kInt32},
                                {.shapes = {TensorShape{}}});
    Output dequeue = q.Dequeue(root)[0];
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    auto session = std::make_shared<Session>(*graph);
    auto status = std::make_shared<Status>();
    auto started = std::make_shared<std::atomic<bool>>(false);
    auto step = std::make_shared<std::promise<void>>();
    std::future<void> returned = step->get_future();
    std::thread([graph, session, dequeue, status, started, step] {
      *started = true;
      *status = session->Run({dequeue}).status();
      step->set_value();
    }).detach();
    const int delay_us = static_cast<int>(rng() % 3000);
    while (!*started) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    session->Close();
    if (returned.wait_for(10s) != std::future_status::ready) {
      ADD_FAILURE() << "trial " << i << ": the step is still blocked 10 s after Session::Close (closed "
                    << delay_us << " us after it started)";
      if (++hung == 3) break;  // enough to show it; each costs 10 s
      continue;                // the detached thread keeps the graph and session alive
    }
    EXPECT_TRUE(errors::IsCancelled(*status)) << "trial " << i << ": " << status->ToString();
  }
  std::printf("[ shutdown ] Session::Close during a first step: %d trials in %.1f s, %d hung\n", kTrials,
              std::chrono::duration<double>(Clock::now() - start).count(), hung);
}

}  // namespace
}  // namespace tw
