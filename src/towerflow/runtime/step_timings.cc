// StepTimings (step_timings.h).
#include "towerflow/runtime/step_timings.h"

#include <utility>

namespace tw {
namespace {

// StepStats::NodeTiming::thread: numbered on a thread's first timing, so only
// steps that collect stats pay for it (one thread_local read after that).
int TimingThreadId() {
  static std::atomic<int> next{0};
  thread_local const int id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

}  // namespace

void StepTimings::AddKernel(const ExecutorPlan::Item& item, TimePoint start, TimePoint end) {
  kernel_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count(),
                       std::memory_order_relaxed);
  StepStats::NodeTiming timing{item.node, start.time_since_epoch().count(), end.time_since_epoch().count()};
  timing.device = item.device;
  if (item.fused != nullptr) {
    timing.fused_producer = item.fused->nodes.back();
    timing.fused = item.fused->nodes;
  }
  Add(std::move(timing));
}

void StepTimings::AddTransfer(const ExecutorPlan::Item& item, TimePoint start, TimePoint end) {
  StepStats::NodeTiming timing{item.node, start.time_since_epoch().count(), end.time_since_epoch().count()};
  timing.transfer = true;
  timing.output = item.transfer_output;
  timing.device = item.device;
  timing.transfer_from = item.transfer_from;
  Add(std::move(timing));
}

void StepTimings::Add(StepStats::NodeTiming timing) {
  timing.thread = TimingThreadId();
  std::lock_guard<std::mutex> lock(mu_);
  timings_.push_back(std::move(timing));
}

std::vector<StepStats::NodeTiming> StepTimings::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(timings_);
}

}  // namespace tw
