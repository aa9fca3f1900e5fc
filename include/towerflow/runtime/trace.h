// TraceRecorder: collects what steps did (StepStats) and other timed spans and
// writes them as a Chrome trace-event JSON file, the format chrome://tracing and
// Perfetto (ui.perfetto.dev) open:
//   {"traceEvents": [...], "displayTimeUnit": "ms"}
// Each node timing becomes a complete event ("ph": "X") named by the node, with
// ts and dur in microseconds relative to the earliest event recorded. Every
// device is a process (pid; "process_name" metadata: its full name) whose
// threads (tid) are the executor threads that ran its kernels (StepStats::
// NodeTiming::thread; "thread_name" "executor thread N"). Kernels are category
// "kernel" with args {op, device, step} (a fused item, runtime/fusion.h, is
// named by its consumer, with op "Conv2D+BiasAddRelu" and arg "fused" naming
// the nodes it absorbed, comma-separated, the deepest first); cross-device copies are category
// "transfer", named "transfer <tensor>" ("transfer sq:0"), on the destination
// device's process, with args {op: "transfer", tensor, from, to, device, step}.
// Spans (AddSpan: a step's wall time, a dequeue's wait) go to one more process,
// "towerflow", one thread per track name.
//
// The recorder keeps copies of names, never pointers into a graph or session,
// so it may outlive both. Thread-safe (one mutex): queue-runner threads may add
// spans while the training loop adds steps.
#ifndef TOWERFLOW_RUNTIME_TRACE_H_
#define TOWERFLOW_RUNTIME_TRACE_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/step_stats.h"

namespace tw {

class TraceRecorder {
 public:
  // Adds one event per timing of `stats` (a Session::Run with a StepStats). A
  // timing's device is the one it ran on, else the node's placement in
  // `session` (the session that ran the step); a node with neither goes to a
  // process named "unplaced".
  void AddStep(int64_t step, const StepStats& stats, const Session& session);

  // Adds a span [start_ns, end_ns] of steady-clock ns (std::chrono::
  // steady_clock, the clock of StepStats) on the row `track` of the "towerflow"
  // process. An end before the start is drawn with zero duration.
  void AddSpan(const std::string& name, const std::string& category, int64_t start_ns, int64_t end_ns,
               const std::string& track);

  int num_events() const;
  // The steady-clock ns of the earliest event, or INT64_MAX when there is none.
  int64_t earliest_ns() const;

  // The events as Write writes them, as comma-separated JSON objects (no
  // brackets), for merging several recorders' traces into one file: every
  // process is named "<process_prefix><name>" and its pid raised by
  // `pid_offset`; times are relative to `base_ns` (steady-clock ns).
  std::string EventsJson(int pid_offset, const std::string& process_prefix, int64_t base_ns) const;
  // Writes {"traceEvents": [<parts joined>], "displayTimeUnit": "ms"} to
  // `path` as Write does (the same errors).
  [[nodiscard]] static Status WriteEvents(const std::string& path, const std::vector<std::string>& parts);

  // Writes the trace to `path` through `path`.tmp.<pid> and a rename, so a
  // reader never sees half a file. InvalidArgument when `path` exists and is not
  // a regular file (a device or FIFO is never replaced); else the error of the
  // failing file operation, naming the file (NotFound for a missing directory,
  // PermissionDenied, ...).
  [[nodiscard]] Status Write(const std::string& path) const;

 private:
  struct Event {
    std::string name;
    std::string category;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    int pid = 0;
    int tid = 0;
    int64_t step = -1;  // -1: not part of a step
    std::vector<std::pair<std::string, std::string>> args;
  };
  // The pid of the process named `name`, made on first use. REQUIRES: mu_ held.
  int ProcessLocked(const std::string& name);

  mutable std::mutex mu_;
  std::vector<Event> events_;                              // guarded by mu_
  std::map<std::string, int> pids_;                        // guarded by mu_; process name -> pid
  std::map<std::pair<int, int>, std::string> threads_;     // guarded by mu_; (pid, tid) -> name
  std::map<std::string, int> track_tids_;                  // guarded by mu_; span track -> tid
};

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_RUNTIME_TRACE_H_
