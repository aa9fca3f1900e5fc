// Builders for math ops: element-wise arithmetic with numpy broadcasting, unary
// functions, reductions, MatMul, comparisons. Each returns the node's output, or
// a null Output with the error recorded in the scope (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_MATH_OPS_H_
#define TOWERFLOW_GRAPH_OPS_MATH_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

Output Add(const Scope& scope, const Output& x, const Output& y);
Output Sub(const Scope& scope, const Output& x, const Output& y);
Output Mul(const Scope& scope, const Output& x, const Output& y);
// Integer division truncates toward zero; division by an integer zero is
// InvalidArgument naming the node.
Output Div(const Scope& scope, const Output& x, const Output& y);
Output Maximum(const Scope& scope, const Output& x, const Output& y);
// x^y, broadcasting (std::pow for floats). For integers y must not be
// negative: InvalidArgument "Integers to negative integer powers are not
// allowed", as TF's.
Output Pow(const Scope& scope, const Output& x, const Output& y);
// floor(x / y), broadcasting: Python's x // y (integers round toward negative
// infinity; an integer y = 0 is InvalidArgument naming the node).
Output FloorDiv(const Scope& scope, const Output& x, const Output& y);
// x - floor(x / y) * y, broadcasting: Python's x % y, the sign of y (for
// floats fmod(x, y) moved by y when the signs differ; an integer y = 0 is
// InvalidArgument naming the node).
Output FloorMod(const Scope& scope, const Output& x, const Output& y);
// Element-wise x == y (bool), broadcasting.
Output Equal(const Scope& scope, const Output& x, const Output& y);
// Element-wise x >= y (bool), broadcasting.
Output GreaterEqual(const Scope& scope, const Output& x, const Output& y);
Output Neg(const Scope& scope, const Output& x);
Output Square(const Scope& scope, const Output& x);
Output Sqrt(const Scope& scope, const Output& x);
Output Exp(const Scope& scope, const Output& x);
Output Log(const Scope& scope, const Output& x);
// log(1 + x), accurate where x is near 0 (as std::log1p).
Output Log1p(const Scope& scope, const Output& x);
Output Sigmoid(const Scope& scope, const Output& x);
Output Tanh(const Scope& scope, const Output& x);
// Sum of same-shaped tensors.
Output AddN(const Scope& scope, const std::vector<Output>& inputs);

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};
Output MatMul(const Scope& scope, const Output& a, const Output& b, MatMulOptions options = {});
// Matrix products over leading dimensions (TF's BatchMatMulV2): x [..., M, K]
// times y [..., K, N] is [..., M, N], the leading dimensions broadcast as
// NumPy's ([2, 1, M, K] x [3, K, N] is [2, 3, M, N]); adj_x / adj_y transpose
// each matrix. Float and double. Mismatched inner or batch dimensions are
// InvalidArgument naming both shapes.
Output BatchMatMul(const Scope& scope, const Output& x, const Output& y, bool adj_x = false, bool adj_y = false);

// Reductions over `axes` (negative axes count from the end; empty = all axes).
Output Sum(const Scope& scope, const Output& x, const std::vector<int32_t>& axes, bool keep_dims = false);
Output Mean(const Scope& scope, const Output& x, const std::vector<int32_t>& axes, bool keep_dims = false);
Output Max(const Scope& scope, const Output& x, const std::vector<int32_t>& axes, bool keep_dims = false);
// The same, with axes given by an int32 tensor.
Output SumOverAxes(const Scope& scope, const Output& x, const Output& axes, bool keep_dims = false);
// Index (int64) of the largest value along `axis`.
Output ArgMax(const Scope& scope, const Output& x, int axis);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_MATH_OPS_H_
