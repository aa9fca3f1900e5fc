// Builders for array ops: constants, placeholders, identity, shape manipulation
// and casts. Each returns the node's output, or a null Output with the error
// recorded in the scope (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_ARRAY_OPS_H_
#define TOWERFLOW_GRAPH_OPS_ARRAY_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

Output Const(const Scope& scope, const Tensor& value);
Output Const(const Scope& scope, float value);
Output Const(const Scope& scope, double value);
Output Const(const Scope& scope, int32_t value);
Output Const(const Scope& scope, const std::vector<int32_t>& values);
Output Const(const Scope& scope, const std::vector<float>& values, const TensorShape& shape);
// A scalar constant of `dtype` (float or double) holding `value`.
Output ScalarLike(const Scope& scope, double value, DataType dtype);

// A value that must be fed at Run; running without a feed is InvalidArgument
// naming the placeholder, its dtype and shape.
Output Placeholder(const Scope& scope, DataType dtype, PartialShape shape = PartialShape::Unknown());
Output Identity(const Scope& scope, const Output& x);
// x itself, its static shape merged with `shape` (unknown dims -1); a value
// of an incompatible shape fails the step, naming the node (TF's EnsureShape,
// what TF1's Tensor.set_shape promises).
Output EnsureShape(const Scope& scope, const Output& x, const PartialShape& shape);
// Stops gradients (TF's stop_gradient): the value passes, no gradient flows back.
Output StopGradient(const Scope& scope, const Output& x);

// int32 vector of x's dimensions, at run time.
Output Shape(const Scope& scope, const Output& x);
Output Reshape(const Scope& scope, const Output& x, const Output& shape);
// `shape` may hold one -1, inferred from the element count.
Output Reshape(const Scope& scope, const Output& x, const std::vector<int32_t>& shape);
Output ExpandDims(const Scope& scope, const Output& x, int axis);
// Removes the given size-1 axes, or every size-1 axis when `axes` is empty.
Output Squeeze(const Scope& scope, const Output& x, const std::vector<int64_t>& axes = {});
Output Concat(const Scope& scope, const std::vector<Output>& values, int axis);  // ConcatV2
// x[begin : begin + size] per axis; size -1 means "to the end".
Output Slice(const Scope& scope, const Output& x, const Output& begin, const Output& size);
Output Slice(const Scope& scope, const Output& x, const std::vector<int32_t>& begin,
             const std::vector<int32_t>& size);
Output Cast(const Scope& scope, const Output& x, DataType dtype);
Output ZerosLike(const Scope& scope, const Output& x);
Output OnesLike(const Scope& scope, const Output& x);
// A tensor of shape `dims` (int32 vector) filled with the scalar `value`.
Output Fill(const Scope& scope, const Output& dims, const Output& value);
// Broadcasts x to `shape` (int32 vector), numpy rules.
Output BroadcastTo(const Scope& scope, const Output& x, const Output& shape);
// Sums x over the axes along which `shape` (int32 vector) was broadcast to x's
// shape, giving a tensor of `shape`: the adjoint of BroadcastTo, used by the
// gradients of broadcasting ops.
Output SumToShape(const Scope& scope, const Output& x, const Output& shape);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_ARRAY_OPS_H_
