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
#include "towerflow/dist/world.h"
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

// The checkpoint metadata keys holding a dataset's position (base64 of
// SerializeIteratorState): rank 0's (a single process's) under
// "input_state", rank r's under "input_state.<r>", and the job's ranks
// under "input_state_ranks".
inline constexpr char kInputStateKey[] = "input_state";
inline constexpr char kInputRanksKey[] = "input_state_ranks";
// The positions of every rank take at most this many bytes of a checkpoint's
// header (a safetensors header is at most kSafetensorsMaxHeaderBytes): a
// shuffle buffer larger than that (a very large --min-after-dequeue, many
// ranks) is not saved; the checkpoint then says how large it was under
// "input_state_dropped", and --resume starts the input afresh.
inline constexpr size_t kInputStateMaxBytes = 64'000'000;
inline constexpr char kInputDroppedKey[] = "input_state_dropped";
// The files the positions are in (a fingerprint of --data's matches): a
// position is restored only into an input over the same files.
inline constexpr char kInputFilesKey[] = "input_files";
std::string InputFilesFingerprint(const std::vector<std::string>& files);

// The metadata entries of every rank's position, for rank 0 to write; empty
// on the other ranks and for the queue. Several processes (`world`): a
// collective, which every rank calls at the same step.
StatusOr<std::map<std::string, std::string>> GatherInputStates(Session& session, const TrainInput& input,
                                                               dist::World* world);
// After rank 0 restored a checkpoint whose metadata is `metadata` (null on
// the other ranks, and when there was none), each rank restores its own
// position; a collective with `world`. *restored is false when there was
// nothing to restore (the queue, a checkpoint without positions, or one
// written by another number of ranks or over other files than
// `files_fingerprint`'s), and then rank 0's *why_not says which
// ("the checkpoint holds no input position", "its input positions are for 2
// processes, not 1", ...); DataLoss naming the key for a position that does
// not parse.
Status RestoreInputStates(Session& session, const TrainInput& input, dist::World* world,
                          const std::map<std::string, std::string>* metadata, const std::string& files_fingerprint,
                          bool* restored, std::string* why_not);

// A checkpoint's metadata: the model's (ModelMetadata), where its variables
// live, the input's positions (GatherInputStates) and their files.
std::map<std::string, std::string> CheckpointMetadata(const TrainConfig& c,
                                                      std::map<std::string, std::string> input_states);

// After a --resume: RestoreInputStates over the run's --data `files`, and
// the line rank 0 says of it ("resume: the input continues its epoch ...",
// or why it starts afresh; "" for the queue, or without a checkpoint).
StatusOr<std::string> ResumeInput(Session& session, const TrainInput& input, const std::vector<std::string>& files,
                                  dist::World* world, const std::map<std::string, std::string>* metadata,
                                  bool* resumed);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_TRAIN_INPUT_H_
