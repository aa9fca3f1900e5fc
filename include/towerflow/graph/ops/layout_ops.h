// Builders for the ops that rearrange or repeat a tensor's elements and for
// index sequences: Transpose, InvertPermutation, Tile, Pad / PadV2, ReverseV2 and
// Range.
// Names, inputs, attrs, semantics and errors are TensorFlow's. Each returns the
// node's output, or a null Output with the error recorded in the scope
// (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_LAYOUT_OPS_H_
#define TOWERFLOW_GRAPH_OPS_LAYOUT_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

// Output axis i is input axis perm[i]; `perm` (int32 or int64 vector) is a
// permutation of [0, rank), a negative entry counting from the end (as TF's).
// Anything else is InvalidArgument naming it.
Output Transpose(const Scope& scope, const Output& x, const Output& perm);
Output Transpose(const Scope& scope, const Output& x, const std::vector<int32_t>& perm);

// y[x[i]] = i for a permutation x of [0, n) (int32 or int64 vector).
Output InvertPermutation(const Scope& scope, const Output& x);

// x repeated multiples[i] times along axis i (`multiples`: int32 or int64
// vector of x's rank, each at least 0).
Output Tile(const Scope& scope, const Output& x, const Output& multiples);

// x with paddings[i][0] values before and paddings[i][1] after along axis i
// (`paddings`: int32 or int64 [rank, 2], each at least 0), filled with zeros
// (Pad: zero, false or "") or with the scalar `constant_value` of x's dtype
// (PadV2).
Output Pad(const Scope& scope, const Output& x, const Output& paddings);
Output Pad(const Scope& scope, const Output& x, const Output& paddings, const Output& constant_value);

// x with its elements in reverse order along each axis of `axis` (ReverseV2:
// an int32 or int64 vector; negative axes count from the end; none reverses
// nothing). An axis out of [-rank, rank) or named twice is InvalidArgument.
Output Reverse(const Scope& scope, const Output& x, const Output& axis);
Output Reverse(const Scope& scope, const Output& x, const std::vector<int32_t>& axis);

// [start, start + delta, ...) up to `limit`, exclusive: scalars of one dtype
// (int32, int64, float or double). delta 0, or a delta of the wrong sign for
// start and limit, is InvalidArgument.
Output Range(const Scope& scope, const Output& start, const Output& limit, const Output& delta);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_LAYOUT_OPS_H_
