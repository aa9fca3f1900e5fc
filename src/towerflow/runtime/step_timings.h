// StepTimings: what a step that collects stats records of its items (their
// StepStats::NodeTiming, and the time spent inside kernels), from whichever of
// the step's threads runs them. Thread-safe.
#ifndef TOWERFLOW_RUNTIME_STEP_TIMINGS_H_
#define TOWERFLOW_RUNTIME_STEP_TIMINGS_H_

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "towerflow/runtime/plan.h"
#include "towerflow/runtime/step_stats.h"

namespace tw {

class StepTimings {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // A node item's kernel (a fused item names the nodes it absorbed) ran from
  // `start` to `end` on the calling thread.
  void AddKernel(const ExecutorPlan::Item& item, TimePoint start, TimePoint end);
  // A transfer item's copy.
  void AddTransfer(const ExecutorPlan::Item& item, TimePoint start, TimePoint end);
  int64_t kernel_ns() const { return kernel_ns_.load(std::memory_order_relaxed); }
  std::vector<StepStats::NodeTiming> Take();

 private:
  void Add(StepStats::NodeTiming timing);

  std::atomic<int64_t> kernel_ns_{0};
  std::mutex mu_;
  std::vector<StepStats::NodeTiming> timings_;  // guarded by mu_
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_STEP_TIMINGS_H_
