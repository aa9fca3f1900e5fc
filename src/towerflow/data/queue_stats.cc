#include "towerflow/data/queue_stats.h"

#include <algorithm>

#include "towerflow/data/queue_internal.h"
#include "towerflow/runtime/session_impl.h"

namespace tw::io {

std::vector<QueueFill> QueueFillStats(Session& session) {
  std::vector<QueueFill> out;
  Graph& graph = session.graph();
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* node = graph.node(id);
    if (node->op() != "FIFOQueue" && node->op() != "RandomShuffleQueue") continue;
    auto spec = queue_internal::SpecFromNode(*node);
    if (!spec.ok()) continue;
    // A queue whose op has not run yet does not exist in this session.
    auto queue = QueueResource::Find(session.impl().resource_mgr(), spec->name);
    if (!queue.ok()) continue;
    QueueFill f;
    f.queue = node->name();
    f.op = node->op();
    f.size = (*queue)->Size();
    f.capacity = spec->capacity;
    f.min_after_dequeue = spec->min_after_dequeue;
    f.closed = (*queue)->IsClosed();
    f.summary_name = queue_internal::FillSummaryName(*node, *spec);
    const int64_t room = f.capacity - f.min_after_dequeue;
    if (f.capacity > 0 && room > 0) {
      f.value = static_cast<double>(std::max<int64_t>(0, f.size - f.min_after_dequeue)) / static_cast<double>(room);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace tw::io
