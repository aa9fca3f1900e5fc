// CheckpointManager: numbered checkpoints in one directory, the newest few kept
// (TF's tf.train.CheckpointManager, over Saver and safetensors files).
//
// Checkpoint `step` is "<directory>/<prefix>-<step>.safetensors". The index file
// "<directory>/checkpoint" lists the kept ones, oldest first, one file name a line
// after a fixed first line (do not change: on-disk format, docs/formats.md):
//   # towerflow checkpoint index: kept checkpoints, oldest first
//   ckpt-100.safetensors
//   ckpt-200.safetensors
// Every file is written crash-safely (tmp file, fsync, rename, directory fsync),
// and a Save deletes old checkpoints only after the index that drops them is in
// place, so a crash never leaves the index naming a deleted file. Files
// "*.tmp-<pid>" left by a killed writer are ignored, and the next Save removes
// those of dead processes.
//
// The manager holds only its settings: every call reads the directory afresh.
// Reading calls are thread-safe; Saves to one directory must not run concurrently.
#ifndef TOWERFLOW_TRAIN_CHECKPOINT_MANAGER_H_
#define TOWERFLOW_TRAIN_CHECKPOINT_MANAGER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "towerflow/runtime/session.h"
#include "towerflow/train/saver.h"

namespace tw::train {

// What RestoreLatest restored, and what it had to skip to get there.
struct RestoreResult {
  std::string path;
  int64_t step = 0;
  // The errors of the newer checkpoints that could not be read (DataLoss naming
  // the file for a corrupt one), newest first.
  std::vector<Status> rejected;
};

class CheckpointManager {
 public:
  // Keeps the newest `max_to_keep` checkpoints; max_to_keep <= 0 keeps all.
  explicit CheckpointManager(std::string directory, int max_to_keep = 5, std::string prefix = "ckpt");

  // Saves every variable of `saver` as checkpoint `step`, with `metadata` plus
  // "global_step" = step; creates the directory if needed; rewrites the index with
  // this checkpoint as the newest (saving a step again moves it there); then
  // deletes the checkpoints beyond max_to_keep (a failed deletion is only logged).
  // Returns the checkpoint's path. Errors: InvalidArgument for a negative step;
  // Saver::Save's; WriteSafetensors' for the index (the checkpoint file then
  // exists but is not listed).
  StatusOr<std::string> Save(Session& session, const Saver& saver, int64_t step,
                             std::map<std::string, std::string> metadata = {}) const;

  // The kept checkpoints' paths, newest last, from the index; when the index is
  // missing or corrupt, every "<prefix>-<N>.safetensors" in the directory, by N.
  std::vector<std::string> Checkpoints() const;
  // The step of the newest kept checkpoint (the first that RestoreLatest tries),
  // read from its name without opening it; nullopt when there is none.
  std::optional<int64_t> LatestStep() const;

  // Restores the newest checkpoint that reads and validates. A checkpoint that
  // fails to read is logged as a warning, recorded in `rejected`, and the one
  // before it is tried. NotFound naming the directory when there is no checkpoint,
  // or when none reads (the message then carries every rejection). A readable
  // checkpoint that does not fit the variables stops the search with
  // Saver::RestoreFrom's error: an older one would not fit either.
  StatusOr<RestoreResult> RestoreLatest(Session& session, const Saver& saver) const;

  const std::string& directory() const { return directory_; }
  // "<directory>/<prefix>-<step>.safetensors".
  std::string CheckpointPath(int64_t step) const;
  // "<directory>/checkpoint".
  std::string IndexPath() const;

 private:
  // The step of "<prefix>-<step>.safetensors" (decimal, no sign or leading zero),
  // or nullopt for any other name.
  std::optional<int64_t> StepOf(std::string_view file_name) const;
  // The index's file names, oldest first; nullopt if it is missing or corrupt.
  std::optional<std::vector<std::string>> ReadIndex() const;
  // File names of the checkpoints in the directory, by step.
  std::vector<std::string> ScanDirectory() const;
  std::vector<std::string> CheckpointNames() const;
  Status WriteIndex(const std::vector<std::string>& names) const;
  // Deletes "<checkpoint or index>.tmp-<pid>" files whose writer is gone.
  void RemoveStaleTemporaries() const;

  std::string directory_;
  int max_to_keep_;
  std::string prefix_;
};

}  // namespace tw::train

#endif  // TOWERFLOW_TRAIN_CHECKPOINT_MANAGER_H_
