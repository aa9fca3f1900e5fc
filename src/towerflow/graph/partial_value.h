// Partial values: what graph construction knows of a small int32/int64
// scalar or vector (a shape being computed) before anything runs, element by
// element, as TF's shape inference evaluates shape tensors partially. Read
// by shape functions through InferenceContext::input_partial, so that
// reshape(x, [tf.shape(x)[0], 4]) or zeros([n, 4]) keep their known 4.
#ifndef TOWERFLOW_GRAPH_PARTIAL_VALUE_H_
#define TOWERFLOW_GRAPH_PARTIAL_VALUE_H_

#include <optional>
#include <vector>

#include "towerflow/graph/graph.h"
#include "towerflow/graph/shape_inference.h"

namespace tw::internal {

// What is known of `o`'s value: a Const's elements (int32/int64, at most
// kMaxPartialElements), or the partial value its node recorded.
std::optional<PartialVector> PartialOf(const Output& o);

// The partial value of output 0 of a node of `op` built from `inputs`
// (shape functions have run: `out` is its output 0's shape, `type` its
// dtype); nullopt unless it is one of the ops partial values go through
// (Node::partial_value lists them) and something of it is known.
std::optional<PartialVector> ComputePartial(const std::string& op, const std::vector<Output>& inputs,
                                            const PartialShape& out, DataType type);

// Larger vectors are not tracked: shapes are short.
inline constexpr int64_t kMaxPartialElements = 64;

}  // namespace tw::internal

#endif  // TOWERFLOW_GRAPH_PARTIAL_VALUE_H_
