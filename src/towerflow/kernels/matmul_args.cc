#include "towerflow/kernels/matmul_args.h"

#include <algorithm>
#include <climits>

namespace tw {

StatusOr<MatMulDims> MatMulOutput(OpKernelContext* ctx, bool ta, bool tb, Tensor** out) {
  TW_ASSIGN_OR_RETURN(MatMulDims d, MatMulShape(ctx->input(0).shape(), ctx->input(1).shape(), ta, tb));
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape{d.m, d.n}, out));
  return d;
}

StatusOr<MatMulDims> MatMulShape(const TensorShape& a, const TensorShape& b, bool ta, bool tb) {
  if (a.rank() != 2 || b.rank() != 2) {
    return errors::InvalidArgument("MatMul needs rank-2 inputs: a has shape ", a.ToString(),
                                   ", b has shape ", b.ToString());
  }
  MatMulDims d;
  d.m = a.dim(ta ? 1 : 0);
  d.k = a.dim(ta ? 0 : 1);
  const int64_t kb = b.dim(tb ? 1 : 0);
  d.n = b.dim(tb ? 0 : 1);
  if (d.k != kb) {
    return errors::InvalidArgument("Matrix size-incompatible: a has shape ", a.ToString(),
                                   ta ? " (transposed)" : "", ", b has shape ", b.ToString(),
                                   tb ? " (transposed)" : "", ": inner dimensions ", d.k, " vs ", kb);
  }
  if (std::max({a.dim(0), a.dim(1), b.dim(0), b.dim(1)}) > INT_MAX) {
    return errors::InvalidArgument("MatMul dimensions exceed BLAS's 32-bit range: a ", a.ToString(),
                                   ", b ", b.ToString());
  }
  return d;
}

}  // namespace tw
