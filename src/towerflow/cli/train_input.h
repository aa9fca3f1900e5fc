// The input of `towerflow train` (TrainConfig::input): TF1's queue pipeline
// or a tf.data-style dataset, built on /device:CPU:0 under name scope
// "input", each giving every tower its own batch; and what the trainer
// reads from either: the shuffle buffer's fill (progress line, TensorBoard),
// the dataset's autotune choices, and the dataset's position in checkpoints.
// Graph building and the readers run on the trainer's thread.
#ifndef TOWERFLOW_CLI_TRAIN_INPUT_H_
#define TOWERFLOW_CLI_TRAIN_INPUT_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "towerflow/cli/trainer.h"
#include "towerflow/dist/sharding.h"
#include "towerflow/towerflow.h"

namespace tw::cli {

struct TrainInput {
  std::optional<train::ShuffleBatchSource> queue;  // "queue"
  std::optional<data::GraphIterator> dataset;      // "dataset"
  // Replicate's source: one dequeue or GetNext per tower.
  train::BatchSourceFn Source() const;
};

// Builds the input `c.input` names over this process's shard of the files;
// the scope's error otherwise.
Status BuildTrainInput(const Scope& root, const TrainConfig& c, const dist::InputShard& shard, TrainInput* input);

// The shuffle buffer's fill, 0..1 (-1 when unknown); appends the TensorBoard
// scalars of the input to `summaries` when given: TF's queue fill summaries,
// or "input/shuffle_buffer_fill" for a dataset.
double InputFill(Session& session, const TrainInput& input,
                 std::vector<std::pair<std::string, double>>* summaries);

// A dataset's autotune choices; "" for the queue.
std::string InputAutotune(Session& session, const TrainInput& input);

// The checkpoint metadata key holding a dataset's position (base64 of
// SerializeIteratorState).
inline constexpr char kInputStateKey[] = "input_state";
// Adds the dataset's position to `metadata`; nothing for the queue.
Status AddInputState(Session& session, const TrainInput& input, std::map<std::string, std::string>* metadata);
// Restores the dataset's position from a checkpoint's metadata. *restored is
// false when there is none to restore (the queue, or a checkpoint without
// it); DataLoss naming the key for one that does not parse.
Status RestoreInputState(Session& session, const TrainInput& input,
                         const std::map<std::string, std::string>& metadata, bool* restored);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAIN_INPUT_H_
