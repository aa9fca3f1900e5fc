// CancellationManager: how a step tells the kernels that wait on other work of
// the same step (collectives waiting for their peers) that the step failed and
// they must stop waiting.
//
// A callback registered before StartCancel runs once, on the thread that calls
// StartCancel, outside the manager's lock; registering after StartCancel fails
// (the caller is cancelled already and must not wait). A callback may run
// concurrently with its own DeregisterCallback: it must only touch state it
// owns or shares (capture shared_ptrs). Thread-safe.
#ifndef TOWERFLOW_CORE_CANCELLATION_H_
#define TOWERFLOW_CORE_CANCELLATION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace tw {

class CancellationManager {
 public:
  using Token = int64_t;

  CancellationManager() = default;
  CancellationManager(const CancellationManager&) = delete;
  CancellationManager& operator=(const CancellationManager&) = delete;

  // Keeps `callback` until StartCancel runs it or DeregisterCallback drops it.
  // False, with nothing kept, when cancellation has started.
  bool RegisterCallback(Token* token, std::function<void()> callback);
  // Drops a callback that has not run; false when it was not registered (it
  // ran, or is running, or the token is unknown).
  bool DeregisterCallback(Token token);
  // Runs every registered callback once; later calls do nothing.
  void StartCancel();
  bool IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::mutex mu_;
  std::atomic<bool> cancelled_{false};
  Token next_token_ = 0;                                // guarded by mu_
  std::map<Token, std::function<void()>> callbacks_;    // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_CORE_CANCELLATION_H_
