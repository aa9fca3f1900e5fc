// What the ranks of a multi-process `towerflow train` agree on while they
// train (trainer.cc): each step's metrics and flags, reduced while the next
// step runs; why an input stopped; that the replicas are the same bits at the
// end. Every call here is a collective of the world's control channel: every
// rank makes the same calls in the same order.
#ifndef TOWERFLOW_CLI_RANK_AGREEMENT_H_
#define TOWERFLOW_CLI_RANK_AGREEMENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "towerflow/core/status.h"
#include "towerflow/data/coordinator.h"
#include "towerflow/dist/world.h"
#include "towerflow/graph/graph.h"
#include "towerflow/runtime/session.h"

namespace tw::cli {

// The collective tag of the trainer's own calls (dist/world.h).
dist::CollectiveTag ControlTag(const std::string& what);

// One step's flags and metrics, this rank's (Start) or summed over the ranks
// (Take: the loss and accuracy their means; a flag set when any rank set it).
struct StepFlags {
  double loss = 0, accuracy = 0;
  bool stop = false;           // a stop was asked for (Ctrl-C): a clean end
  bool checkpoint = false;     // rank 0 asks for a checkpoint by time
  bool input_stopped = false;  // the input's coordinator stopped: an error
};

// The reduction of one step's flags at a time, in flight while the next
// step runs.
class StepAgreement {
 public:
  explicit StepAgreement(dist::World& world) : world_(world) {}
  bool in_flight() const { return in_flight_ != nullptr; }
  // Issues this rank's flags. REQUIRES: !in_flight().
  Status Start(const StepFlags& mine);
  // Waits for the flags of the step last started.
  StatusOr<StepFlags> Take();

 private:
  dist::World& world_;
  std::unique_ptr<dist::World::PendingAllReduce> in_flight_;
};

// After the ranks agreed that some input stopped: every rank's reason
// gathered (its coordinator's error), and Aborted naming the first rank that
// gave one and `step`, on every rank alike.
Status InputStoppedError(dist::World& world, const train::Coordinator& coord, int64_t step);

// Every rank's variables must be the same bits (the cross-process mean is
// exact): the line to report, or Internal naming the first that differs.
StatusOr<std::string> CheckReplicas(dist::World& world, Session& session, const Graph& graph, int64_t step);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_RANK_AGREEMENT_H_
