// The models `towerflow train` and `towerflow eval` build, and the record
// schemas they read.
//
//   mlp   Fashion-MNIST schema (`towerflow convert fashion-mnist`): `image`
//         bytes of 784 uint8 (28x28, row-major), `label` int64 in 0..9. Pixels
//         scaled to [0, 1]; dense layers of --hidden units with ReLU, then 10
//         logits; sparse softmax cross-entropy.
//   cnn   the same schema; the TF tutorial network: conv 5x5x32 + ReLU, max-pool
//         2x2, conv 5x5x64 + ReLU, max-pool 2x2, dense 1024 + ReLU (dropout 0.4
//         while training), dense 10.
//   seed  the seed's schema (`towerflow convert seed-synthetic`): `x` bytes of
//         int32 [2, F], `labels` bytes of int32 [1, 2] one-hot. Entries scaled
//         by 1/15; dense layers of --hidden units with ReLU, then 2 logits;
//         softmax cross-entropy against the one-hot labels (the seed's
//         compute_loss).
//
// Variables are named by the variable scope they are built in ("hidden1/kernel",
// "conv1/kernel", ...), so a training graph's checkpoint restores into an
// evaluation graph built from the same ModelConfig. Initializers and dropout
// draw from the graph's seed (Graph::set_seed). Graph building is
// single-threaded; errors are recorded in the scope.
#ifndef TOWERFLOW_CLI_MODELS_H_
#define TOWERFLOW_CLI_MODELS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "towerflow/towerflow.h"

namespace tw::cli {

struct ModelConfig {
  std::string name;             // "mlp", "cnn" or "seed"
  std::vector<int64_t> hidden;  // mlp and seed: units per hidden layer
  int64_t n_features = 0;       // seed: F (x is int32 [2, F]); found in the data
};

// "256,256" -> {256, 256}; InvalidArgument naming the flag for anything else
// (empty entries, non-numbers, values outside 1..65536, more than 16 layers).
StatusOr<std::vector<int64_t>> ParseHidden(const std::string& text);

// Checks that a serialized Example fits the model's schema (the first record of
// the data): InvalidArgument "<file>: record 0 does not fit --model <m>: ..."
// naming the feature that is missing or of the wrong kind or size. For seed it
// also sets config->n_features from the size of `x`.
Status CheckSchema(const std::string& record, const std::string& file, ModelConfig* config);

// The metadata a checkpoint carries so that eval can rebuild the model.
std::map<std::string, std::string> ModelMetadata(const ModelConfig& config);
// The inverse; InvalidArgument naming the key when it is missing or malformed.
StatusOr<ModelConfig> ModelFromMetadata(const std::map<std::string, std::string>& metadata);

// A batch: {input [n, ...], label [n, ...]} from a vector of serialized Examples
// (training reads them with ReaderReadUpTo; evaluation feeds them through a
// placeholder). Fashion-MNIST's labels stay int64 [n] as parsed; images stay
// bytes (uint8 [n, 784]): BuildModel scales them, in the tower, so that queues
// hold and copy a quarter of the bytes of floats.
// `names` (string [B], optional) are the records' "<file>:<offset>" keys,
// named by a parse error.
tw::Batch DecodeBatch(const Scope& scope, const Output& serialized, const ModelConfig& config,
                      const Output& names = Output());

struct ModelOutputs {
  Output loss;     // scalar: mean cross-entropy (+ L2 when asked)
  Output correct;  // float [n]: 1 where the prediction is right
  Output logits;
};
// Builds the network on a batch from DecodeBatch (with a batch dimension);
// images may also come as floats in [0, 1] ([n, 784]; [n, 28, 28, 1] for the
// cnn), used as they are. `training` adds dropout (cnn). `l2` > 0 adds l2 *
// sum of the kernels' L2Loss to the loss.
ModelOutputs BuildModel(const Scope& scope, const tw::Batch& batch, const ModelConfig& config, bool training,
                        double l2 = 0);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_MODELS_H_
