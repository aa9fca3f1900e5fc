// QueueRunner: TF1's tf.train.QueueRunner. It holds a queue, the enqueue ops that
// fill it, and the two ops that close it: close_op (queue.close()) and cancel_op
// (queue.close(cancel_pending_enqueues=true)). CreateThreads starts, for one
// session:
// - one thread per enqueue op, running it until the coordinator stops. When the
//   op fails with OutOfRange (its input is exhausted, e.g. an epoch limit or a
//   closed upstream queue) the thread ends, and the last such thread of the
//   session runs close_op, so the end of data cascades downstream. Any other
//   error stops the coordinator with that error (without a coordinator it is
//   logged and kept in exceptions_raised());
// - with a coordinator, one thread that waits for the stop and runs cancel_op, so
//   that threads blocked on a full queue end at once.
// Builders (StringInputProducer, Batch, ...) add their runners to the graph
// collection "queue_runners"; StartQueueRunners starts them all.
//
// QueueRunner is a copyable value (the collection stores copies); copies share
// the per-session thread counts. Thread-safe. The session must outlive the
// threads: Coordinator::Join them before destroying it.
#ifndef TOWERFLOW_DATA_QUEUE_RUNNER_H_
#define TOWERFLOW_DATA_QUEUE_RUNNER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "towerflow/data/coordinator.h"
#include "towerflow/data/queue_ops.h"
#include "towerflow/runtime/session.h"

namespace tw::train {

class QueueRunner {
 public:
  QueueRunner() = default;
  // Builds close_op and cancel_op for `queue` in `scope` (errors recorded there).
  QueueRunner(const Scope& scope, const io::Queue& queue, std::vector<Node*> enqueue_ops);
  QueueRunner(const io::Queue& queue, std::vector<Node*> enqueue_ops, Node* close_op, Node* cancel_op);

  bool valid() const;
  const io::Queue& queue() const { return queue_; }
  const std::vector<Node*>& enqueue_ops() const { return enqueue_ops_; }
  Node* close_op() const { return close_op_; }
  Node* cancel_op() const { return cancel_op_; }

  // Starts the threads described above, named "QueueRunner:<queue>:<i>" and
  // "QueueRunner:<queue>:cancel". Returns no threads when this runner's threads
  // for `session` are still running (as TF does), or when the runner is invalid.
  std::vector<std::thread> CreateThreads(Session& session, Coordinator* coord = nullptr) const;
  // Errors of threads that ran without a coordinator.
  std::vector<Status> exceptions_raised() const;

 private:
  struct Shared {
    std::mutex mu;
    std::map<const Session*, int> runs;  // guarded by mu: enqueue threads still running
    std::vector<Status> exceptions;      // guarded by mu
  };
  void RunEnqueue(Session* session, Node* enqueue_op, Coordinator coord, bool has_coord) const;

  io::Queue queue_;
  std::vector<Node*> enqueue_ops_;
  Node* close_op_ = nullptr;
  Node* cancel_op_ = nullptr;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

// Adds `runner` to the graph's collection "queue_runners" (tf.train.add_queue_runner).
void AddQueueRunner(Graph& graph, const QueueRunner& runner);
// The runners in that collection, in the order added.
std::vector<QueueRunner> QueueRunners(const Graph& graph);
// tf.train.start_queue_runners: the threads of every runner in the session's
// graph. Call it before running steps that dequeue, or they wait forever.
std::vector<std::thread> StartQueueRunners(Session& session, Coordinator& coord);

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_QUEUE_RUNNER_H_
