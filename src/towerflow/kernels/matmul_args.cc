#include "towerflow/kernels/matmul_args.h"

#include <algorithm>
#include <climits>

namespace tw {

StatusOr<MatMulDims> MatMulOutput(OpKernelContext* ctx, bool ta, bool tb, Tensor** out) {
  const Tensor& a = ctx->input(0);
  const Tensor& b = ctx->input(1);
  if (a.rank() != 2 || b.rank() != 2) {
    return errors::InvalidArgument("MatMul needs rank-2 inputs: a has shape ", a.shape().ToString(),
                                   ", b has shape ", b.shape().ToString());
  }
  MatMulDims d;
  d.m = a.dim(ta ? 1 : 0);
  d.k = a.dim(ta ? 0 : 1);
  const int64_t kb = b.dim(tb ? 1 : 0);
  d.n = b.dim(tb ? 0 : 1);
  if (d.k != kb) {
    return errors::InvalidArgument("Matrix size-incompatible: a has shape ", a.shape().ToString(),
                                   ta ? " (transposed)" : "", ", b has shape ", b.shape().ToString(),
                                   tb ? " (transposed)" : "", ": inner dimensions ", d.k, " vs ", kb);
  }
  if (std::max({a.dim(0), a.dim(1), b.dim(0), b.dim(1)}) > INT_MAX) {
    return errors::InvalidArgument("MatMul dimensions exceed BLAS's 32-bit range: a ", a.shape().ToString(),
                                   ", b ", b.shape().ToString());
  }
  TW_RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape{d.m, d.n}, out));
  return d;
}

}  // namespace tw
