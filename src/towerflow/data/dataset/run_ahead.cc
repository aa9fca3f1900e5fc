#include "towerflow/data/dataset/run_ahead.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

namespace tw::data {

RunAhead::RunAhead(std::shared_ptr<PipelineContext> ctx, IteratorBase* input, Transform transform, Options options)
    : ctx_(std::move(ctx)), input_(input), transform_(std::move(transform)), options_(std::move(options)) {
  options_.workers = std::max(1, options_.workers);
  options_.buffer = std::max<int64_t>(options_.buffer, options_.workers);
  waker_ = ctx_->AddWaker([this] {
    std::lock_guard<std::mutex> lock(mu_);
    worker_cv_.notify_all();
    consumer_cv_.notify_all();
  });
}

RunAhead::~RunAhead() {
  ctx_->RemoveWaker(waker_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    worker_cv_.notify_all();
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void RunAhead::StartLocked() {
  started_ = true;
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  if (options_.tune_workers) ctx_->SetTuned(options_.stage, std::to_string(options_.workers) + " parallel calls");
  if (options_.tune_buffer) ctx_->SetTuned(options_.stage, std::to_string(options_.buffer) + " elements");
}

void RunAhead::WorkerLoop() {
  // "tw_data/Map" in debuggers and profiles (15 characters at most).
  pthread_setname_np(pthread_self(), ("tw_data/" + options_.stage).substr(0, 15).c_str());
  bool input_exhausted_seen = false;
  std::unique_lock<std::mutex> lock(mu_);
  ++running_;
  while (true) {
    ++workers_waiting_;
    worker_cv_.wait(lock, [&] {
      return stop_ || ctx_->cancelled.load() || input_done_ || running_ > options_.workers ||
             (!paused_ && next_seq_ - next_deliver_ < options_.buffer);
    });
    --workers_waiting_;
    if (stop_ || ctx_->cancelled.load() || input_done_ || input_exhausted_seen) break;
    if (running_ > options_.workers) break;  // autotune retired a worker
    ++busy_;
    lock.unlock();
    const auto started = std::chrono::steady_clock::now();
    Element in;
    bool end = false;
    Status pulled;
    int64_t seq = -1;
    {
      std::lock_guard<std::mutex> input_lock(input_mu_);
      // Another worker may have reached the end while this one waited.
      bool done;
      {
        std::lock_guard<std::mutex> l(mu_);
        done = end_seq_ >= 0;
      }
      if (!done) {
        pulled = input_->GetNext(&in, &end);
        std::lock_guard<std::mutex> l(mu_);
        seq = next_seq_++;
        // An input's error is its element's (tf.data's rule: the next one
        // follows); only the end, or a closed pipeline, ends the input.
        if (end || errors::IsCancelled(pulled)) end_seq_ = seq;
      }
    }
    Result r;
    bool ends = false;
    if (seq >= 0) {
      ends = end || errors::IsCancelled(pulled);
      if (!pulled.ok() || end) {
        r.status = pulled;
        r.end = end;
      } else if (transform_) {
        r.status = transform_(seq + seq_base_, std::move(in), &r.element);
      } else {
        r.element = std::move(in);
      }
    }
    const int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
    lock.lock();
    --busy_;
    element_ns_ = element_ns_ == 0 ? ns : (7 * element_ns_ + ns) / 8;
    if (seq < 0) {
      input_exhausted_seen = true;
    } else {
      if (ends) {
        input_done_ = true;
        end_seq_ = end_seq_ < 0 ? seq : std::min(end_seq_, seq);
      }
      results_[seq] = std::move(r);
    }
    // Wake the consumer once enough is ready (not for every result: each
    // wake-up costs a context switch), or at the end, or for Save.
    if (consumer_waiting_ &&
        (static_cast<int64_t>(results_.size()) >= wake_at_ || input_done_ || (paused_ && busy_ == 0))) {
      consumer_cv_.notify_one();
    }
  }
  --running_;
}

std::map<int64_t, RunAhead::Result>::iterator RunAhead::ReadyLocked() {
  if (options_.ordered) return results_.find(next_deliver_);
  for (auto it = results_.begin(); it != results_.end(); ++it) {
    if (!it->second.end) return it;
  }
  // Only the end is left: it comes once nothing is in flight.
  if (!results_.empty() && busy_ == 0) return results_.begin();
  return results_.end();
}

Status RunAhead::TakeLocked(std::map<int64_t, Result>::iterator it, Element* out, bool* end) {
  Result r = std::move(it->second);
  results_.erase(it);
  ++next_deliver_;
  // Workers pull again once a quarter of the buffer is free.
  if (workers_waiting_ > 0 && options_.buffer - (next_seq_ - next_deliver_) >= Slack()) worker_cv_.notify_all();
  *end = r.end;
  if (r.status.ok() && !r.end) *out = std::move(r.element);
  return r.status;
}

void RunAhead::MaybeTuneLocked(bool waited) {
  if (!options_.tune_workers && !options_.tune_buffer) return;
  const auto now = std::chrono::steady_clock::now();
  if (gets_ == 0) window_start_ = now;
  ++gets_;
  waits_ += waited ? 1 : 0;
  if (gets_ < 64) return;
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  const double rate = seconds > 0 ? static_cast<double>(gets_) / seconds : 0;
  const bool starved = waits_ * 10 > gets_;
  gets_ = waits_ = 0;
  if (trial_rate_ > 0) {
    // The window after a worker was added: keep it only if the consumer got
    // 5% more elements a second (on busy cores another thread can slow the
    // whole process down); otherwise retire it and tune workers no more.
    if (rate < 1.05 * trial_rate_) {
      --options_.workers;
      options_.tune_workers = false;
      ctx_->SetTuned(options_.stage, std::to_string(options_.workers) + " parallel calls");
      worker_cv_.notify_all();  // the one past options_.workers exits
    }
    trial_rate_ = 0;
    return;
  }
  if (!starved) return;
  if (options_.tune_workers && options_.workers < options_.max_workers) {
    trial_rate_ = rate;
    ++options_.workers;
    options_.buffer = std::max<int64_t>(options_.buffer, 2 * options_.workers);
    threads_.emplace_back([this] { WorkerLoop(); });
    ctx_->SetTuned(options_.stage, std::to_string(options_.workers) + " parallel calls");
  } else if (options_.tune_buffer && options_.buffer < options_.max_buffer) {
    options_.buffer = std::min(options_.max_buffer, options_.buffer * 2);
    ctx_->SetTuned(options_.stage, std::to_string(options_.buffer) + " elements");
  }
  worker_cv_.notify_all();
}

Status RunAhead::GetNext(Element* out, bool* end) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_) StartLocked();
  bool waited = false;
  while (true) {
    if (ctx_->cancelled.load()) return errors::Cancelled(options_.stage, ": the iterator was closed");
    auto it = ReadyLocked();
    if (it != results_.end()) {
      MaybeTuneLocked(waited);
      return TakeLocked(it, out, end);
    }
    if (input_done_ && busy_ == 0 && (results_.empty() || next_deliver_ > end_seq_)) {
      *end = true;
      return Status::OK();
    }
    waited = true;
    // Nothing ready: workers with room must be running, and the consumer
    // sleeps until a quarter of the buffer is ready.
    if (workers_waiting_ > 0 && next_seq_ - next_deliver_ < options_.buffer) worker_cv_.notify_all();
    wake_at_ = std::max<int64_t>(1, std::min<int64_t>(Slack(), options_.buffer - busy_));
    consumer_waiting_ = true;
    consumer_cv_.wait(lock);
    consumer_waiting_ = false;
  }
}

Status RunAhead::TryGetNext(Element* out, bool* end, bool* ready) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_) StartLocked();
  if (ctx_->cancelled.load()) return errors::Cancelled(options_.stage, ": the iterator was closed");
  auto it = ReadyLocked();
  *ready = it != results_.end() || (input_done_ && busy_ == 0 && (results_.empty() || next_deliver_ > end_seq_));
  if (!*ready) return Status::OK();
  if (it != results_.end()) return TakeLocked(it, out, end);
  *end = true;
  return Status::OK();
}

Status RunAhead::Save(StateWriter& w) const {
  std::unique_lock<std::mutex> lock(mu_);
  paused_ = true;
  consumer_waiting_ = true;
  consumer_cv_.wait(lock, [&] { return busy_ == 0; });
  consumer_waiting_ = false;
  int64_t n = 0;
  bool end_pending = false;
  for (const auto& [seq, r] : results_) {
    if (r.end) {
      end_pending = true;
      break;
    }
    if (!r.status.ok()) {
      // A failed element is a result like any other (its error comes back
      // after a restore, in its place).
      w.WriteInt("error_code_" + std::to_string(n), static_cast<int64_t>(r.status.code()));
      w.WriteString("error_" + std::to_string(n++), r.status.message());
      continue;
    }
    w.WriteElement("result_" + std::to_string(n++), r.element);
  }
  w.WriteInt("buffered", n);
  // The input number of the first buffered result, so that errors after a
  // restore name elements as they would have been named.
  w.WriteInt("index", seq_base_ + next_seq_ - (end_pending ? 1 : 0));
  w.WriteInt("end", (end_pending || (input_done_ && results_.empty())) ? 1 : 0);
  Status s = SaveInput(*input_, w);
  paused_ = false;
  worker_cv_.notify_all();
  return s;
}

Status RunAhead::Restore(const StateReader& r) {
  std::unique_lock<std::mutex> lock(mu_);
  if (started_) return errors::FailedPrecondition(options_.stage, ": Restore after GetNext");
  int64_t n = 0, end = 0;
  TW_RETURN_IF_ERROR(r.ReadInt("buffered", &n));
  TW_RETURN_IF_ERROR(r.ReadInt("end", &end));
  if (n < 0 || n > (int64_t{1} << 30)) return errors::DataLoss(options_.stage, ": saved ", n, " buffered results");
  results_.clear();
  for (int64_t i = 0; i < n; ++i) {
    const std::string k = std::to_string(i);
    if (r.Contains("error_code_" + k)) {
      int64_t code = 0;
      std::string message;
      TW_RETURN_IF_ERROR(r.ReadInt("error_code_" + k, &code));
      TW_RETURN_IF_ERROR(r.ReadString("error_" + k, &message));
      if (code <= 0 || code > static_cast<int64_t>(Code::kDataLoss)) {
        return errors::DataLoss(options_.stage, ": saved result ", i, " has error code ", code);
      }
      results_[i].status = Status(static_cast<Code>(code), std::move(message));
      continue;
    }
    TW_RETURN_IF_ERROR(r.ReadElement("result_" + k, &results_[i].element));
  }
  next_seq_ = n;
  next_deliver_ = 0;
  int64_t base = 0;
  TW_RETURN_IF_ERROR(r.ReadInt("index", &base));
  if (base < n) return errors::DataLoss(options_.stage, ": saved input number ", base, " before its ", n, " results");
  seq_base_ = base - n;
  if (end != 0) {
    results_[n].end = true;
    end_seq_ = n;
    next_seq_ = n + 1;
    input_done_ = true;
  }
  // Not under mu_: restoring the input may destroy a RunAhead inside it, whose
  // RemoveWaker waits for the context's wake lock, which a Cancel holds
  // while it calls this RunAhead's waker, which takes mu_. No worker runs
  // before the first GetNext, on this thread.
  lock.unlock();
  return RestoreInput(*input_, r);
}

}  // namespace tw::data
