// Evaluation of a trained model on TFRecord files, shared by `towerflow eval`
// and the end of `towerflow train --eval-data`: every record of every file,
// once, in order, in batches fed through a placeholder to a batched parse
// (ParseExample) and the model built for inference (no dropout), with the
// variables restored from a checkpoint. Loss and accuracy are means over all
// examples (the last, smaller batch weighted by its size).
#ifndef TOWERFLOW_CLI_EVALUATE_H_
#define TOWERFLOW_CLI_EVALUATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/cli/models.h"

namespace tw::cli {

struct EvalResult {
  int64_t examples = 0;
  double loss = 0;
  double accuracy = 0;
  double seconds = 0;
};

struct EvalOptions {
  int64_t batch_size = 1000;
  // Records with bad CRCs are skipped and counted instead of failing.
  bool skip_corrupt = false;
  int intra_op_threads = 0;
  // The variable scope the checkpoint's variables live in ("tower_0" for
  // mirrored variables, whose names are "tower_0/hidden1/kernel"); "": none.
  std::string variable_scope = "";
  // GPUs (SessionOptions): unpinned model ops run on GPU:0 when there is one.
  // 0: CPU only; -1: every visible GPU.
  int max_gpus = -1;
  // SessionOptions::visible_gpus: the evaluation at the end of a training
  // opens the GPUs its rank trained on, not every visible one.
  std::vector<int> visible_gpus = {};
  int64_t gpu_memory_limit_mb = 0;
  bool allow_tf32 = false;
};

// Errors: NotFound/DataLoss from the files (naming file and byte offset), the
// checkpoint's errors (train/saver.h), InvalidArgument when the data does not
// fit the model, and OutOfRange "no records" for empty data.
StatusOr<EvalResult> Evaluate(const std::vector<std::string>& files, const ModelConfig& config,
                              const std::string& checkpoint, const EvalOptions& options = {});

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_EVALUATE_H_
