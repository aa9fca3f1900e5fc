// What rank 0 of a multi-process world hears of the other ranks (world_mpi.cc):
// each rank but 0 sends heartbeats on a communicator of their own, carrying
// its newest issued call on every channel; rank 0 drains them and, when a call
// times out, names the ranks that never issued it and those that fell silent.
// Compiled with MPI only (the *_mpi.cc rule). Thread-safe.
#ifndef TOWERFLOW_DIST_INTERNAL_PEER_REPORTS_H_
#define TOWERFLOW_DIST_INTERNAL_PEER_REPORTS_H_

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tw::dist::internal {

inline constexpr int kNumChannels = 2;
inline constexpr int kReportTag = 7;
// A heartbeat: its number, then each channel's newest issued call (its
// sequence number, -1 for none yet, and its training step).
inline constexpr int kHeartbeatWords = 1 + 2 * kNumChannels;
// A rank silent this long (four heartbeats missed) is named as stopped.
inline constexpr double kSilentSeconds = 2.0;

// A rank's newest issued call on a channel (what rank 0 hears of each).
struct Seen {
  int64_t seq = -1;  // -1: none yet
  int64_t step = 0;
};

class PeerReports {
 public:
  // Rank 0's view of `hosts.size()` ranks, heard on `reports`.
  PeerReports(MPI_Comm reports, std::vector<std::string> hosts);

  // Receives every heartbeat that has arrived (rank 0).
  void Drain();
  // Rank 0, when its call number `seq` on `channel` timed out: the ranks that
  // never issued it ("rank 2 (b) never joined it: its newest call there was
  // at step 41"), and those silent for kSilentSeconds; a sentence when every
  // rank joined and is alive.
  std::string Missing(int channel, int64_t seq);

 private:
  void DrainLocked();  // REQUIRES: mu_

  const MPI_Comm reports_;
  const std::vector<std::string> hosts_;
  std::mutex mu_;
  std::vector<Seen> seen_;  // guarded by mu_: [rank * kNumChannels + channel]
  std::vector<std::chrono::steady_clock::time_point> heard_;  // guarded by mu_: when each rank last sent anything
};

}  // namespace tw::dist::internal

#endif  // TOWERFLOW_DIST_INTERNAL_PEER_REPORTS_H_
