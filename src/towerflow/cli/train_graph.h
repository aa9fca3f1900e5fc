// The graph `towerflow train` builds (trainer.h's Train): the input, the
// towers over the model, the optimizer's update, the accuracy, the saver and,
// with several processes, the broadcast of rank 0's variables. Internal to
// the command line.
#ifndef TOWERFLOW_CLI_TRAIN_GRAPH_H_
#define TOWERFLOW_CLI_TRAIN_GRAPH_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "towerflow/cli/train_input.h"
#include "towerflow/cli/trainer.h"
#include "towerflow/dist/world.h"
#include "towerflow/train/optimizer.h"
#include "towerflow/train/replicate.h"
#include "towerflow/train/saver.h"

namespace tw::cli {

// The training graph and what the loop fetches from it.
struct TrainGraph {
  Graph graph;
  TrainInput input;
  std::unique_ptr<train::Optimizer> optimizer;
  train::ReplicaStep step;
  Output accuracy;  // over every tower's batch
  std::optional<train::Saver> saver;
  Node* broadcast = nullptr;  // multi-process: every variable set to rank 0's
};

// Builds it for a run resuming at `resume_step` (0: a new run); `world`
// with several processes, else null. The first error of the graph.
Status BuildGraph(const TrainConfig& c, int64_t resume_step, dist::World* world, TrainGraph* g);

// What every rank of a job must agree on besides the graph (dist/consistency.h).
std::vector<std::string> ConfigFingerprint(const TrainConfig& c);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAIN_GRAPH_H_
