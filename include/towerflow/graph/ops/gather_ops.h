// Builders for the ops that pick and place elements by index or condition:
// GatherV2 (tf.gather, embedding lookups), UnsortedSegmentSum, OneHot,
// SelectV2 (tf.where with three arguments) and InTopKV2 (tf.nn.in_top_k).
// Names, inputs, attrs, semantics and errors are TensorFlow's. Each returns the
// node's output, or a null Output with the error recorded in the scope
// (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_GATHER_OPS_H_
#define TOWERFLOW_GRAPH_OPS_GATHER_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include "towerflow/graph/scope.h"

namespace tw {

// params's slices at `indices` (int32 or int64, any shape) along `axis`: the
// output's shape is params.shape[:axis] + indices.shape + params.shape[axis+1:].
// An index outside [0, params.shape[axis]) is InvalidArgument naming it and
// its position, at run time.
Output Gather(const Scope& scope, const Output& params, const Output& indices, int axis = 0);

// out[i, ...] = sum of data[j..., ...] over the positions j with
// segment_ids[j...] == i, for i in [0, num_segments): the output's shape is
// [num_segments] + data.shape[segment_ids.rank:]. segment_ids' shape is a
// prefix of data's; a negative id drops its slice (TF's rule), an id of at
// least num_segments is InvalidArgument naming it.
Output UnsortedSegmentSum(const Scope& scope, const Output& data, const Output& segment_ids,
                          const Output& num_segments);

// One-hot encoding: `depth` (int32 scalar) values along a new axis at `axis`
// (-1: last), `on_value` at each index, `off_value` elsewhere (scalars of one
// dtype, the output's). An index outside [0, depth) gives a row of off_value.
Output OneHot(const Scope& scope, const Output& indices, const Output& depth, const Output& on_value,
              const Output& off_value, int axis = -1);

// TF1's Select (tf.where with three arguments): t and e of one shape and
// dtype; condition (bool) a scalar choosing one of them whole, a vector
// choosing rows (its length t's first dimension), or of t's shape choosing
// elements. Other shapes are InvalidArgument naming them.
Output Select(const Scope& scope, const Output& condition, const Output& t, const Output& e);

// SelectV2 (tf.where_v2): element-wise `condition ? t : e`, the three
// broadcast together (numpy rules).
Output SelectV2(const Scope& scope, const Output& condition, const Output& t, const Output& e);

// For each row b of predictions [batch, classes] (float32): whether
// targets[b] is among the k largest, ties counting for the target (fewer than
// k classes strictly larger). False when the target is out of range or any
// prediction of the row is not finite. targets int32 or int64 [batch], k a
// scalar of targets' dtype.
Output InTopK(const Scope& scope, const Output& predictions, const Output& targets, const Output& k);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_GATHER_OPS_H_
