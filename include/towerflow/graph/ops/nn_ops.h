// Builders for neural-network ops: bias, activations, softmax and losses,
// convolution and pooling (NHWC), dropout. Each returns the node's output, or a
// null Output with the error recorded in the scope (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_NN_OPS_H_
#define TOWERFLOW_GRAPH_OPS_NN_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <string>
#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

// value + bias along the last dimension.
Output BiasAdd(const Scope& scope, const Output& value, const Output& bias);
Output Relu(const Scope& scope, const Output& features);
// relu(value + bias) in one pass over memory: the fused form of the hidden layers
// of an MLP (same result as Relu(BiasAdd(value, bias))).
Output BiasAddRelu(const Scope& scope, const Output& value, const Output& bias);
// Softmax over the last dimension.
Output Softmax(const Scope& scope, const Output& logits);

// Per-example cross-entropy of softmax(logits) against `labels` (a probability
// distribution per row); outputs: loss [batch], backprop [batch, classes].
struct SoftmaxXentResult {
  Output loss;
  Output backprop;
};
SoftmaxXentResult SoftmaxCrossEntropyWithLogits(const Scope& scope, const Output& logits,
                                                const Output& labels);
// Same with integer class labels [batch] (int32 or int64); a label outside
// [0, classes) is InvalidArgument naming the row and value.
SoftmaxXentResult SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, const Output& logits,
                                                      const Output& labels);
// sum(t^2) / 2, a scalar.
Output L2Loss(const Scope& scope, const Output& t);

// The mean cross-entropy of a batch against class indices, as one op (what
// Mean(SparseSoftmaxCrossEntropyWithLogits(..).loss) and its gradient, and the
// accuracy's Cast(Equal(ArgMax(logits, 1), labels)), take about ten kernels
// for): `loss` the scalar mean over the rows, `backprop` d loss / d logits
// ((softmax - onehot) / rows, the bits the separate ops give), `correct` per
// row 1 where the first largest logit is the label's, else 0. Its gradient is
// `backprop`, times the incoming gradient unless that is the loss's own
// OnesLike (Minimize's). Labels outside [0, classes): InvalidArgument on the
// CPU, NaN rows on a GPU (as SparseSoftmaxCrossEntropyWithLogits).
struct SoftmaxXentMeanResult {
  Output loss;      // T scalar
  Output backprop;  // T [rows, classes]
  Output correct;   // T [rows]
};
SoftmaxXentMeanResult SparseSoftmaxCrossEntropyMean(const Scope& scope, const Output& logits, const Output& labels);

struct Conv2DOptions {
  std::vector<int64_t> strides = {1, 1, 1, 1};  // NHWC
  std::string padding = "SAME";                 // or "VALID"
};
// input [N,H,W,C], filter [KH,KW,C,O] -> [N,OH,OW,O].
Output Conv2D(const Scope& scope, const Output& input, const Output& filter, Conv2DOptions options = {});

struct PoolOptions {
  std::vector<int64_t> ksize = {1, 2, 2, 1};
  std::vector<int64_t> strides = {1, 2, 2, 1};
  std::string padding = "SAME";
};
Output MaxPool(const Scope& scope, const Output& input, PoolOptions options = {});
// The mean of each window, over its positions inside the input (SAME padding
// adds nothing to the count), as TF's avg_pool.
Output AvgPool(const Scope& scope, const Output& input, PoolOptions options = {});

// TF's local response normalization (tf.nn.lrn) of an [N,H,W,C] input over
// its depth: output[n,h,w,c] = input[n,h,w,c] / (bias + alpha * sum of
// input[n,h,w,k]^2 for k in [c - depth_radius, c + depth_radius])^beta
// (alpha is not divided by the window's size).
struct LRNOptions {
  int64_t depth_radius = 5;
  double bias = 1.0;
  double alpha = 1.0;
  double beta = 0.5;
};
Output LRN(const Scope& scope, const Output& input, LRNOptions options = {});

// Keeps each element with probability 1 - rate, scaled by 1 / (1 - rate);
// outputs: output and the mask it applied (scaled), from a seeded generator.
struct DropoutResult {
  Output output;
  Output mask;
};
DropoutResult Dropout(const Scope& scope, const Output& x, float rate, int64_t seed = 0);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_NN_OPS_H_
