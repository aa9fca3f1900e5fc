#include "towerflow/data/coordinator.h"

#include <pthread.h>

#include <algorithm>

#include "towerflow/core/logging.h"

namespace tw::train {

Coordinator::Coordinator(std::vector<Code> clean_stop_codes) : state_(std::make_shared<State>()) {
  state_->clean_stop_codes = std::move(clean_stop_codes);
}

void Coordinator::RequestStop(const Status& status) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->stop) return;
  const auto& clean = state_->clean_stop_codes;
  if (!status.ok() && std::find(clean.begin(), clean.end(), status.code()) == clean.end()) {
    if (state_->joined) {
      // Nobody will Join again to see it.
      TW_LOG(ERROR) << "Coordinator: error requested after Join: " << status.ToString();
    }
    state_->error = status;
  }
  state_->stop = true;
  state_->cv.notify_all();
}

bool Coordinator::ShouldStop() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stop;
}

void Coordinator::WaitForStop() const {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [this] { return state_->stop; });
}

bool Coordinator::WaitForStop(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [this] { return state_->stop; });
}

void Coordinator::ClearStop() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stop = false;
  state_->joined = false;
  state_->error = Status::OK();
}

Status Coordinator::error() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->error;
}

std::thread Coordinator::StartThread(std::string name, std::function<void()> fn) {
  auto ts = std::make_shared<ThreadState>();
  ts->name = name;
  std::shared_ptr<State> state = state_;
  std::thread t([state, ts, fn = std::move(fn)] {
    // Linux limits thread names to 15 characters; keep the distinctive tail.
    const std::string& n = ts->name;
    pthread_setname_np(pthread_self(), (n.size() > 15 ? n.substr(n.size() - 15) : n).c_str());
    fn();
    std::lock_guard<std::mutex> lock(state->mu);
    ts->done = true;
    state->cv.notify_all();
  });
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->threads[t.get_id()] = ts;  // replaces any entry of an earlier thread with this id
  return t;
}

Status Coordinator::Join(std::vector<std::thread>& threads, std::chrono::milliseconds stop_grace_period,
                         bool ignore_live_threads) {
  std::vector<std::shared_ptr<ThreadState>> tracked(threads.size());
  std::unique_lock<std::mutex> lock(state_->mu);
  for (size_t i = 0; i < threads.size(); ++i) {
    auto it = state_->threads.find(threads[i].get_id());
    if (it != state_->threads.end()) tracked[i] = it->second;
  }
  // Untracked threads count as running: only a stop ends the first wait then.
  auto all_done = [&] {
    return std::all_of(tracked.begin(), tracked.end(), [](const auto& ts) { return ts && ts->done; });
  };
  auto tracked_done = [&] {
    return std::all_of(tracked.begin(), tracked.end(), [](const auto& ts) { return !ts || ts->done; });
  };
  state_->cv.wait(lock, [&] { return state_->stop || all_done(); });
  state_->cv.wait_for(lock, stop_grace_period, tracked_done);
  std::vector<std::string> stragglers;
  std::vector<bool> finished(threads.size());
  for (size_t i = 0; i < threads.size(); ++i) {
    finished[i] = !tracked[i] || tracked[i]->done;
    if (!finished[i]) stragglers.push_back(tracked[i]->name);
    state_->threads.erase(threads[i].get_id());
  }
  lock.unlock();

  for (size_t i = 0; i < threads.size(); ++i) {
    if (!threads[i].joinable()) continue;
    if (finished[i]) {
      threads[i].join();
    } else {
      threads[i].detach();
    }
  }
  threads.clear();

  lock.lock();
  state_->joined = true;
  if (!state_->error.ok()) return state_->error;
  if (stragglers.empty()) return Status::OK();
  std::string names;
  for (const std::string& n : stragglers) names += (names.empty() ? "" : " ") + n;
  if (ignore_live_threads) {
    TW_LOG(INFO) << "Coordinator stopped with threads still running: " << names;
    return Status::OK();
  }
  return errors::Internal("Coordinator stopped with threads still running: ", names);
}

}  // namespace tw::train
