// SpinUntil: wait for a condition that usually comes true within microseconds
// (the next node of a step, a peer arriving at an all-reduce) by spinning, and
// give up after a budget so that the caller can sleep on its condition variable.
//
// Why spin: a thread asleep on a futex is woken in a few microseconds on an
// idle machine, but on a loaded host, or a virtual machine whose idle virtual
// CPU halted and must be rescheduled by the hypervisor, the wake-up takes
// hundreds of microseconds (measured: 500 to 800 us on the 2-core CI VM, as long
// as a training step's largest MatMul). TF's Eigen pool and OpenMP runtimes spin
// before sleeping for the same reason. The loop issues the CPU's pause hint and
// yields every few microseconds, so a runnable thread sharing the core is not
// starved.
// Header-only; no shared state.
#ifndef TOWERFLOW_CORE_SPIN_WAIT_H_
#define TOWERFLOW_CORE_SPIN_WAIT_H_

#include <chrono>
#include <thread>

namespace tw {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// True as soon as ready() is; false if it is still false after `budget`.
template <typename Ready>
bool SpinUntil(Ready&& ready, std::chrono::nanoseconds budget) {
  if (ready()) return true;
  if (budget <= std::chrono::nanoseconds::zero()) return false;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
    std::this_thread::yield();
  }
}

// How long a thread of towerflow's pools spins for new work, or a step's
// caller for its step, before it sleeps: about the gap between a step's nodes,
// and between steps of a training loop.
inline constexpr std::chrono::microseconds kDefaultSpin{200};

}  // namespace tw

#endif  // TOWERFLOW_CORE_SPIN_WAIT_H_
