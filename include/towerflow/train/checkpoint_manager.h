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
// What a checkpoint must prove before it is restored (ReadLatest; docs/formats.md
// and docs/reliability.md): every tensor's CRC32C checks (the Saver writes
// them, safetensors.h verifies them); the step in its name, the "global_step"
// metadata and the "global_step" tensor agree wherever present; and its
// floating-point tensors are finite. A checkpoint that fails is rejected and
// the one before it tried, as for a truncated file. Retention never deletes
// the newest finite checkpoint while every newer one holds NaN or Inf.
//
// The manager holds only its settings: every call reads the directory afresh.
// Reading calls are thread-safe; Saves to one directory must not run concurrently.
#ifndef TOWERFLOW_TRAIN_CHECKPOINT_MANAGER_H_
#define TOWERFLOW_TRAIN_CHECKPOINT_MANAGER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "towerflow/runtime/session.h"
#include "towerflow/train/saver.h"

namespace tw::train {

// The metadata key a checkpoint holding NaN or Inf carries: the name of the
// first such tensor. Absent from finite checkpoints.
inline constexpr char kNonFiniteMetadataKey[] = "nonfinite";

// DataLoss naming `path` when the global step of a checkpoint is said two
// different ways: `step_from_name` (the "<prefix>-<step>" of its file name,
// when it has one), its "global_step" metadata, its "global_step" tensor (an
// integer scalar). Each is checked only when present; a metadata value that is
// not a non-negative decimal, or a "global_step" tensor that is not an integer
// scalar, is DataLoss too.
Status CheckGlobalStep(const std::string& path, const SafetensorsFile& file, std::optional<int64_t> step_from_name);

// FailedPrecondition naming `path`, the tensor and the first bad value's index
// when a floating-point tensor of `file` holds NaN or Inf (the weights of a
// training that diverged: restoring them would train on NaN).
Status CheckFinite(const std::string& path, const SafetensorsFile& file);

// What ReadLatest read.
struct LatestCheckpoint {
  std::string path;
  int64_t step = 0;
  SafetensorsFile file;
  // The newer checkpoints that were rejected, newest first (DataLoss naming
  // the file for a corrupt one).
  std::vector<Status> rejected;
};

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
  // "global_step" = step (and kNonFiniteMetadataKey when a tensor holds NaN or
  // Inf); creates the directory if needed; rewrites the index with this
  // checkpoint as the newest (saving a step again moves it there); then deletes
  // the checkpoints beyond max_to_keep, except the newest finite one while every
  // kept checkpoint is non-finite (a failed deletion is only logged). Returns the
  // checkpoint's path. Errors: InvalidArgument for a negative step, or when a
  // "global_step" variable holds another step (nothing is written); Saver's;
  // WriteSafetensors' for the index (the checkpoint file then exists but is
  // not listed).
  StatusOr<std::string> Save(Session& session, const Saver& saver, int64_t step,
                             std::map<std::string, std::string> metadata = {}) const;

  // The kept checkpoints' paths, newest last, from the index; when the index is
  // missing or corrupt, every "<prefix>-<N>.safetensors" in the directory, by N.
  std::vector<std::string> Checkpoints() const;
  // The step of the newest kept checkpoint (the first that RestoreLatest tries),
  // read from its name without opening it; nullopt when there is none.
  std::optional<int64_t> LatestStep() const;

  // Reads the newest checkpoint that reads and validates (above). A checkpoint
  // that fails is logged as a warning, recorded in `rejected`, and the one
  // before it is tried. NotFound naming the directory when there is no
  // checkpoint, or when none validates (the message then carries every
  // rejection).
  StatusOr<LatestCheckpoint> ReadLatest() const;

  // ReadLatest, then restores it into `saver`'s variables. A checkpoint that
  // validates but does not fit the variables stops the search with
  // Saver::RestoreFrom's error: an older one would not fit either.
  StatusOr<RestoreResult> RestoreLatest(Session& session, const Saver& saver) const;

  // The step of "<prefix>-<step>.safetensors" (decimal, no sign or leading zero),
  // or nullopt for any other name.
  std::optional<int64_t> StepOf(std::string_view file_name) const;

  const std::string& directory() const { return directory_; }
  // "<directory>/<prefix>-<step>.safetensors".
  std::string CheckpointPath(int64_t step) const;
  // "<directory>/checkpoint".
  std::string IndexPath() const;

 private:
  // The index's file names, oldest first; nullopt if it is missing or corrupt.
  std::optional<std::vector<std::string>> ReadIndex() const;
  // File names of the checkpoints in the directory, by step.
  std::vector<std::string> ScanDirectory() const;
  std::vector<std::string> CheckpointNames() const;
  Status WriteIndex(const std::vector<std::string>& names) const;
  // Deletes "<checkpoint or index>.tmp-<pid>" files whose writer is gone.
  void RemoveStaleTemporaries() const;
  // Whether checkpoint `name` is known to be finite (its metadata has no
  // kNonFiniteMetadataKey); false when it cannot be read.
  bool KnownFinite(const std::string& name) const;

  std::string directory_;
  int max_to_keep_;
  std::string prefix_;
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_CHECKPOINT_MANAGER_H_
