#include "towerflow/core/cancellation.h"

#include <utility>
#include <vector>

namespace tw {

bool CancellationManager::RegisterCallback(Token* token, std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return false;
  *token = next_token_++;
  callbacks_.emplace(*token, std::move(callback));
  return true;
}

bool CancellationManager::DeregisterCallback(Token token) {
  std::lock_guard<std::mutex> lock(mu_);
  return callbacks_.erase(token) > 0;
}

void CancellationManager::StartCancel() {
  std::map<Token, std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.load(std::memory_order_relaxed)) return;
    cancelled_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  for (auto& [token, callback] : callbacks) callback();
}

}  // namespace tw
