#include "towerflow/dist/internal/start_watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace tw::dist::internal {

StartWatchdog::StartWatchdog(int rank, int size, double seconds) {
  if (seconds <= 0 || seconds > 1e9) return;
  thread_ = std::thread([this, rank, size, seconds] {
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return disarmed_; })) return;
    std::fprintf(stderr,
                 "towerflow: rank %d of %d: the job's %d ranks did not all start within %.0f s: a rank hangs "
                 "before it joins (reading its data, say) or was never launched; this rank leaves "
                 "(the longer of --collective-timeout and 60 s)\n",
                 rank, size, size, seconds);
    std::fflush(stderr);
    ::_exit(1);
  });
}

StartWatchdog::~StartWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    disarmed_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace tw::dist::internal
