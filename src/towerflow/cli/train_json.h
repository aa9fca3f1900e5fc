// The last line of `towerflow train`'s stdout: one JSON object (train.cc's
// first comment lists its keys). Numbers that may be NaN (a diverged loss)
// are null. Pure; thread-safe.
#ifndef TOWERFLOW_CLI_TRAIN_JSON_H_
#define TOWERFLOW_CLI_TRAIN_JSON_H_

#include <string>

#include "towerflow/cli/evaluate.h"
#include "towerflow/cli/trainer.h"

namespace tw::cli {

// `eval`: the --eval-data result, null without one.
std::string TrainJsonLine(const TrainResult& r, const TrainConfig& c, const EvalResult* eval);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAIN_JSON_H_
