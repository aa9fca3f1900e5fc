// Queue fill statistics ([input] 8): while training runs, how full each queue of
// a session is, with the summary TF's input pipeline would write for it:
// "<scope>/fraction_of_<capacity>_full" = size / capacity for FIFO queues, and
// "<scope>/fraction_over_<min_after_dequeue>_of_<capacity - min_after_dequeue>_full"
// = max(0, size - min_after_dequeue) / (capacity - min_after_dequeue) for shuffle
// queues, which reads 0 until the queue holds more than min_after_dequeue: a
// value that stays near 0 means the readers are too slow. <scope> is the name
// scope of the producer or batch that built the queue ("shuffle_batch"), or the
// queue's own name for a queue built directly.
//
// Reads the queues' sizes under their locks; no graph op runs. Thread-safe with
// respect to running steps; the graph must not be growing at the same time.
#ifndef TOWERFLOW_DATA_QUEUE_STATS_H_
#define TOWERFLOW_DATA_QUEUE_STATS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/runtime/session.h"

namespace tw::io {

struct QueueFill {
  std::string queue;  // the queue node's name
  std::string op;     // "FIFOQueue" or "RandomShuffleQueue"
  int64_t size = 0;
  int64_t capacity = 0;  // negative: unbounded (value then 0)
  int64_t min_after_dequeue = 0;
  bool closed = false;
  std::string summary_name;  // TF's summary tag
  double value = 0;          // TF's summary value
};

// One entry per queue node of the session's graph whose queue exists in the
// session (its queue op has run), in node order.
std::vector<QueueFill> QueueFillStats(Session& session);

}  // namespace tw::io

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_QUEUE_STATS_H_
