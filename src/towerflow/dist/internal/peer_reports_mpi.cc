#include "towerflow/dist/internal/peer_reports.h"

#include "towerflow/core/status.h"

namespace tw::dist::internal {

using Clock = std::chrono::steady_clock;

PeerReports::PeerReports(MPI_Comm reports, std::vector<std::string> hosts)
    : reports_(reports), hosts_(std::move(hosts)), seen_(hosts_.size() * kNumChannels),
      heard_(hosts_.size(), Clock::now()) {}

void PeerReports::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  DrainLocked();
}

void PeerReports::DrainLocked() {
  const int size = static_cast<int>(hosts_.size());
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, reports_, &flag, &st) != MPI_SUCCESS || !flag) return;
    int64_t m[kHeartbeatWords] = {};
    MPI_Recv(m, kHeartbeatWords, MPI_INT64_T, st.MPI_SOURCE, kReportTag, reports_, MPI_STATUS_IGNORE);
    if (st.MPI_SOURCE < 0 || st.MPI_SOURCE >= size) continue;
    heard_[static_cast<size_t>(st.MPI_SOURCE)] = Clock::now();
    for (int c = 0; c < kNumChannels; ++c) {
      seen_[static_cast<size_t>(st.MPI_SOURCE) * kNumChannels + static_cast<size_t>(c)] = {m[1 + 2 * c],
                                                                                           m[2 + 2 * c]};
    }
  }
}

std::string PeerReports::Missing(int channel, int64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  DrainLocked();
  const int size = static_cast<int>(hosts_.size());
  std::string who;
  for (int r = 1; r < size; ++r) {
    const Seen& s = seen_[static_cast<size_t>(r) * kNumChannels + static_cast<size_t>(channel)];
    if (s.seq >= seq) continue;
    who += StrCat(who.empty() ? "" : "; ", "rank ", r, " (", hosts_[static_cast<size_t>(r)], ") never joined it",
                  s.seq < 0 ? std::string(" and has made no call on this channel")
                            : StrCat(": its newest call there was at step ", s.step));
  }
  const auto now = Clock::now();
  std::string silent;
  for (int r = 1; r < size; ++r) {
    const double quiet = std::chrono::duration<double>(now - heard_[static_cast<size_t>(r)]).count();
    if (quiet < kSilentSeconds) continue;
    silent += StrCat(silent.empty() ? "" : "; ", "rank ", r, " (", hosts_[static_cast<size_t>(r)],
                     ") has been silent for ", static_cast<int64_t>(quiet), " s (stopped, or its machine hangs)");
  }
  if (who.empty() && silent.empty()) who = "every rank joined it and is alive, but the transfer did not finish";
  if (!silent.empty()) who += (who.empty() ? "every rank joined it; " : "; ") + silent;
  return who;
}

}  // namespace tw::dist::internal
