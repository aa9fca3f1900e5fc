// RunAhead: worker threads that pull elements from an input iterator and
// transform them ahead of the consumer, into a bounded buffer. Prefetch is
// one worker and the identity; a parallel Map is N workers and the map
// function; a parallel Interleave reads each open dataset through one.
//
// Workers take input elements one at a time (under a lock, numbering them),
// transform them without the lock, and file the result under its number.
// The consumer takes results in input order (ordered) or as they finish. A
// worker pulls only while fewer than `buffer` results wait or are in flight,
// so memory stays bounded. An error, the input's or the transform's, is the
// result of its element, and the elements after it follow (tf.data's rule);
// the input's end (or Cancelled) stops the pulling, and the consumer gets
// every result before it, then the end. Autotune: every 64 GetNexts, if the consumer waited in more than a
// tenth of them, one more worker (up to max_workers), kept only if the next
// 64 come at least 5% faster (else it is retired and the workers are final),
// or, once workers are final, a buffer twice as large (up to max_buffer); the
// choice is reported to the pipeline (Iterator::AutotuneSummary).
//
// Workers start at the first GetNext (so a Restore can refill the buffer
// first). Save pauses the workers, waits for the results in flight, and
// saves the buffered results with the input's position. Thread-safe between
// the consumer and the workers; one consumer. The destructor stops and joins
// the workers; PipelineContext::Cancel wakes them and the consumer.
#ifndef TOWERFLOW_DATA_DATASET_RUN_AHEAD_H_
#define TOWERFLOW_DATA_DATASET_RUN_AHEAD_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "towerflow/data/dataset/dataset_base.h"

namespace tw::data {

class RunAhead {
 public:
  // Transforms input element number `index` (counted from the start of this
  // RunAhead's input; called on worker threads, concurrently).
  using Transform = std::function<Status(int64_t index, Element&& in, Element* out)>;
  struct Options {
    std::string stage;  // "Map", "Prefetch": names autotune reports
    int workers = 1;
    int64_t buffer = 1;  // results waiting or in flight, at most
    bool ordered = true;
    bool tune_workers = false;
    bool tune_buffer = false;
    int max_workers = 1;
    int64_t max_buffer = 1;
  };
  // REQUIRES: `input` outlives this object. A null transform is the identity.
  RunAhead(std::shared_ptr<PipelineContext> ctx, IteratorBase* input, Transform transform, Options options);
  ~RunAhead();
  RunAhead(const RunAhead&) = delete;
  RunAhead& operator=(const RunAhead&) = delete;

  Status GetNext(Element* out, bool* end);
  // True with *ready false when no result is ready now (without waiting);
  // otherwise as GetNext. For unordered consumers (Interleave).
  Status TryGetNext(Element* out, bool* end, bool* ready);
  Status Save(StateWriter& w) const;
  Status Restore(const StateReader& r);

 private:
  struct Result {
    Status status;
    Element element;
    bool end = false;
  };
  void StartLocked();
  void WorkerLoop();
  // The result to hand out next, if one is ready (results_ under mu_).
  std::map<int64_t, Result>::iterator ReadyLocked();
  Status TakeLocked(std::map<int64_t, Result>::iterator it, Element* out, bool* end);
  void MaybeTuneLocked(bool waited);

  std::shared_ptr<PipelineContext> ctx_;
  IteratorBase* input_;
  Transform transform_;
  Options options_;
  int waker_ = -1;

  // How many results the consumer waits for, and how much free room wakes
  // the workers: a quarter of the buffer for cheap elements (a wake-up, a
  // context switch of some 10 us, would cost more than the element), one for
  // elements that take longer than kCheapNs to produce.
  static constexpr int64_t kCheapNs = 20000;
  int64_t Slack() const {
    return element_ns_ > kCheapNs ? 1 : std::max<int64_t>(1, options_.buffer / 4);
  }

  mutable std::mutex mu_;
  mutable std::condition_variable worker_cv_;    // workers wait for room
  mutable std::condition_variable consumer_cv_;  // the consumer (and Save) waits for results
  mutable bool consumer_waiting_ = false;        // guarded by mu_
  int64_t wake_at_ = 1;                          // guarded by mu_: results that wake the consumer
  int workers_waiting_ = 0;                      // guarded by mu_
  std::mutex input_mu_;  // one worker pulls from input_ at a time
  std::map<int64_t, Result> results_;  // guarded by mu_; by input number
  int64_t next_seq_ = 0;               // guarded by input_mu_ and mu_: the next input number
  int64_t next_deliver_ = 0;           // guarded by mu_: results handed out so far (ordered: the next number)
  int64_t end_seq_ = -1;               // guarded by mu_: the number of the end (or Cancelled) result
  int busy_ = 0;                       // guarded by mu_: workers between pull and filing
  bool input_done_ = false;            // guarded by mu_
  bool stop_ = false;                  // guarded by mu_
  mutable bool paused_ = false;        // guarded by mu_ (Save)
  bool started_ = false;               // guarded by mu_
  std::vector<std::thread> threads_;   // guarded by mu_
  int64_t gets_ = 0, waits_ = 0;       // guarded by mu_: autotune's window
  int64_t seq_base_ = 0;               // input number of seq 0 (after a Restore)
  int64_t element_ns_ = 0;             // guarded by mu_: moving average of pull + transform time
  int running_ = 0;                    // guarded by mu_: workers in WorkerLoop
  std::chrono::steady_clock::time_point window_start_;  // guarded by mu_: autotune's window
  double trial_rate_ = 0;              // guarded by mu_: the rate before a trial worker, or 0
};

}  // namespace tw::data

#endif  // TOWERFLOW_DATA_DATASET_RUN_AHEAD_H_
