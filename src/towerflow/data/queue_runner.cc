#include "towerflow/data/queue_runner.h"

#include "towerflow/core/logging.h"

namespace tw::train {

QueueRunner::QueueRunner(const Scope& scope, const io::Queue& queue, std::vector<Node*> enqueue_ops)
    : queue_(queue), enqueue_ops_(std::move(enqueue_ops)) {
  if (!queue.valid()) return;  // the queue's builder recorded why
  close_op_ = queue.Close(scope, false);
  cancel_op_ = queue.Close(scope, true);
}

QueueRunner::QueueRunner(const io::Queue& queue, std::vector<Node*> enqueue_ops, Node* close_op, Node* cancel_op)
    : queue_(queue), enqueue_ops_(std::move(enqueue_ops)), close_op_(close_op), cancel_op_(cancel_op) {}

bool QueueRunner::valid() const {
  if (!queue_.valid() || close_op_ == nullptr || cancel_op_ == nullptr || enqueue_ops_.empty()) return false;
  for (Node* op : enqueue_ops_) {
    if (op == nullptr) return false;
  }
  return true;
}

std::vector<Status> QueueRunner::exceptions_raised() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->exceptions;
}

void QueueRunner::RunEnqueue(Session* session, Node* enqueue_op, Coordinator coord, bool has_coord) const {
  Status status;
  while (!(has_coord && coord.ShouldStop())) {
    status = session->Run(enqueue_op);
    if (!status.ok()) break;
  }
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    last = --shared_->runs[session] == 0;
    if (last) shared_->runs.erase(session);
  }
  if (status.ok()) return;  // stopped by the coordinator
  if (errors::IsOutOfRange(status)) {
    // The input is exhausted: the last thread closes the queue so consumers
    // drain it and then see OutOfRange. Errors (already closed) do not matter.
    if (last) session->Run(close_op_).IgnoreError();
    return;
  }
  if (has_coord) {
    coord.RequestStop(status);
  } else {
    TW_LOG(ERROR) << "Exception in QueueRunner for " << queue_.name() << ": " << status.ToString();
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->exceptions.push_back(status);
  }
}

std::vector<std::thread> QueueRunner::CreateThreads(Session& session, Coordinator* coord) const {
  std::vector<std::thread> threads;
  if (!valid()) {
    TW_LOG(ERROR) << "QueueRunner for '" << queue_.name() << "' is invalid (did building it fail?)";
    return threads;
  }
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    auto it = shared_->runs.find(&session);
    if (it != shared_->runs.end() && it->second > 0) return threads;  // still running for this session
    shared_->runs[&session] = static_cast<int>(enqueue_ops_.size());
  }
  // Threads hold a copy of this runner (its nodes and shared counts) and of the
  // coordinator handle, never pointers into the caller's objects.
  const QueueRunner self = *this;
  const std::string prefix = "QueueRunner:" + queue_.name() + ":";
  Coordinator c = coord != nullptr ? *coord : Coordinator();
  for (size_t i = 0; i < enqueue_ops_.size(); ++i) {
    Node* op = enqueue_ops_[i];
    auto body = [self, &session, op, c, has = coord != nullptr] { self.RunEnqueue(&session, op, c, has); };
    threads.push_back(coord != nullptr ? coord->StartThread(prefix + std::to_string(i), body) : std::thread(body));
  }
  if (coord != nullptr) {
    Node* cancel = cancel_op_;
    threads.push_back(coord->StartThread(prefix + "cancel", [&session, cancel, c] {
      c.WaitForStop();
      // Ends enqueues blocked on a full queue; dequeuers of a closed queue drain it.
      session.Run(cancel).IgnoreError();
    }));
  }
  return threads;
}

void AddQueueRunner(Graph& graph, const QueueRunner& runner) {
  graph.AddToCollection(collections::kQueueRunners, runner);
}

std::vector<QueueRunner> QueueRunners(const Graph& graph) {
  return graph.GetCollection<QueueRunner>(collections::kQueueRunners);
}

std::vector<std::thread> StartQueueRunners(Session& session, Coordinator& coord) {
  std::vector<std::thread> threads;
  for (const QueueRunner& runner : QueueRunners(session.graph())) {
    for (std::thread& t : runner.CreateThreads(session, &coord)) threads.push_back(std::move(t));
  }
  return threads;
}

}  // namespace tw::train
