// SumColumns: BiasAddGrad's sums over the rows of a [rows, C] view (C the last
// dimension), and BiasAddReluGrad's (ReluGrad's mask applied first), shared
// by nn_kernels.cc's kernels and the fused MaxPoolGrad -> BiasAddReluGrad of
// pool_kernels.cc. Internal to kernels/.
#ifndef TOWERFLOW_KERNELS_INTERNAL_COLUMN_SUMS_H_
#define TOWERFLOW_KERNELS_INTERNAL_COLUMN_SUMS_H_

#include "towerflow/device/op_kernel.h"

namespace tw::internal {

// Allocates output `output` of `ctx` as [C] (C: shape_of's last dimension)
// and writes the sums over the rows of g (laid out as shape_of). With `mask`
// (ReluGrad's features, shape_of's shape), each element is first masked into
// `masked` (masked[i] = mask[i] > 0 ? g[i] : 0; `masked` may be g) and the
// masked rows are summed. Shards of rows over the intra-op pool, each summed in
// blocks of 64 rows; the shards' sums added in row order: the same bits
// whatever thread finishes first, and BiasAddGrad's bits for the same
// partition (the same pool). Errors (allocation) are set on `ctx`.
// REQUIRES: shape_of has rank >= 1; T is float or double.
template <typename T>
void SumColumns(OpKernelContext* ctx, const T* g, const T* mask, T* masked, const Tensor& shape_of, int output);

}  // namespace tw::internal

#endif  // TOWERFLOW_KERNELS_INTERNAL_COLUMN_SUMS_H_
