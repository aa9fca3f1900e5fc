#include "towerflow/cli/train_signals.h"

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <thread>

#include "towerflow/cli/trainer.h"

namespace tw::cli {
namespace {

std::atomic<bool> g_clean_stop_armed{false};
std::atomic<int64_t> g_first_signal_ns{0};

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The default action of `sig` (the process ends). Async-signal-safe.
void DieOf(int sig) {
  std::signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
}

// Async-signal-safe: the handler runs it too.
void TakeSignal(int sig) {
  if (!g_clean_stop_armed.load()) return DieOf(sig);
  const int64_t now = MonotonicNs();
  int64_t first = 0;
  if (g_first_signal_ns.compare_exchange_strong(first, now)) {
    g_stop_requested = true;
    return;
  }
  if (now - first >= 1'000'000'000) DieOf(sig);
}

void OnSignal(int sig) { TakeSignal(sig); }

}  // namespace

void TakeSignalsOnOneThread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::thread taker([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) == 0) TakeSignal(sig);
    }
  });
  pthread_setname_np(taker.native_handle(), "tw_signals");
  taker.detach();  // blocked in sigwait until the process ends
}

void ArmCleanStop() { g_clean_stop_armed = true; }

}  // namespace tw::cli
