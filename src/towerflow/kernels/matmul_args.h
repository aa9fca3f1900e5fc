// The argument checks of MatMul, on every device: matmul_kernels.cc (CPU,
// OpenBLAS) and matmul_cuda.cu (GPU, cuBLAS) call MatMulOutput, so both accept
// the same operands and fail with one code and one message. Internal to
// kernels/; host code only (no CUDA types). Stateless; thread-safe.
#ifndef TOWERFLOW_KERNELS_MATMUL_ARGS_H_
#define TOWERFLOW_KERNELS_MATMUL_ARGS_H_

#include <cstdint>

#include "towerflow/device/op_kernel.h"

namespace tw {

// The sizes of c[m, n] = op(a)[m, k] op(b)[k, n].
struct MatMulDims {
  int64_t m = 0, n = 0, k = 0;
};

// The sizes of a x b (inputs 0 and 1) with a transposed when `ta`, b when
// `tb`, and output 0 allocated as [m, n] in *out. InvalidArgument "MatMul
// needs rank-2 inputs: ..." unless both have rank 2, "Matrix
// size-incompatible: ..." when the inner dimensions differ, "MatMul dimensions
// exceed BLAS's 32-bit range: ..." when a dimension exceeds INT_MAX (the BLAS
// libraries of both devices take int sizes); else the allocation's error.
StatusOr<MatMulDims> MatMulOutput(OpKernelContext* ctx, bool ta, bool tb, Tensor** out);
// The same checks on the operands' shapes alone (no output allocated), for a
// fused kernel whose output is another op's (momentum_fusions.cc).
StatusOr<MatMulDims> MatMulShape(const TensorShape& a, const TensorShape& b, bool ta, bool tb);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_MATMUL_ARGS_H_
