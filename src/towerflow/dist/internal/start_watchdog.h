// A guard over a multi-process job's start, the one wait no collective
// timeout covers: MPI_Init and the world's first collectives wait for every
// rank, so a rank that never comes (it hangs before its start, in a read of
// its data say, or was never launched) would hold the others forever.
//
// While armed, a thread waits `seconds` (WorldOptions::start_timeout_seconds); if the
// guard is still armed then, it writes one line naming this rank and the
// wait to stderr and ends the process with _exit(1), which makes the
// launcher (mpirun) end the job. Destroying the guard disarms it; seconds
// <= 0, or more than 1e9 (wait forever), arms nothing.
#ifndef TOWERFLOW_DIST_INTERNAL_START_WATCHDOG_H_
#define TOWERFLOW_DIST_INTERNAL_START_WATCHDOG_H_

#include <condition_variable>
#include <mutex>
#include <thread>

namespace tw::dist::internal {

class StartWatchdog {
 public:
  StartWatchdog(int rank, int size, double seconds);
  ~StartWatchdog();
  StartWatchdog(const StartWatchdog&) = delete;
  StartWatchdog& operator=(const StartWatchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool disarmed_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace tw::dist::internal

#endif  // TOWERFLOW_DIST_INTERNAL_START_WATCHDOG_H_
