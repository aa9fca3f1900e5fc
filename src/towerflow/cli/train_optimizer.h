// The optimizer of `towerflow train` (--optimizer sgd|momentum|adam) and its
// learning-rate schedule (--lr, --lr-schedule constant|linear). Graph
// building, single-threaded.
#ifndef TOWERFLOW_CLI_TRAIN_OPTIMIZER_H_
#define TOWERFLOW_CLI_TRAIN_OPTIMIZER_H_

#include <cstdint>
#include <memory>

#include "towerflow/cli/trainer.h"
#include "towerflow/towerflow.h"

namespace tw::cli {

// The learning rate at global step `step` (also what the summaries report).
double LearningRateAt(const TrainConfig& c, int64_t step);

// --lr-schedule linear: lr * max(0, 1 - global_step / total_steps), computed in
// the graph from the global step (read before the step's updates, which the
// increment waits for), so a resumed run goes on along the same line. A null
// Output for a constant rate.
Output LearningRateTensor(const Scope& root, const TrainConfig& c);

// The optimizer --optimizer names, with the rate `lr` (a tensor, or null for
// c.learning_rate).
std::unique_ptr<train::Optimizer> MakeOptimizer(const TrainConfig& c, const Output& lr);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAIN_OPTIMIZER_H_
