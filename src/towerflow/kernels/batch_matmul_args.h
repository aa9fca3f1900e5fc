// The argument checks and batch layout of BatchMatMulV2, on every device:
// batch_matmul_kernels.cc (CPU) and matmul_cuda.cu (GPU) call
// BatchMatMulOutput, so both accept the same operands, fail with one code and
// message, and walk the broadcast batches alike. Internal to kernels/; host
// code only. Stateless; thread-safe.
#ifndef TOWERFLOW_KERNELS_BATCH_MATMUL_ARGS_H_
#define TOWERFLOW_KERNELS_BATCH_MATMUL_ARGS_H_

#include <cstdint>
#include <vector>

#include "towerflow/device/op_kernel.h"

namespace tw {

// out[b] = op(x[XIndex(b)]) op(y[YIndex(b)]) for each of `batches` output
// matrices, each [m, n], with op(x) [m, k] and op(y) [k, n].
struct BatchMatMulPlan {
  int64_t m = 0, n = 0, k = 0;
  int64_t batches = 0;
  std::vector<int64_t> dims;       // the output's batch dimensions
  std::vector<int64_t> x_strides;  // per batch dimension, in x's matrices (0: broadcast)
  std::vector<int64_t> y_strides;

  // Which matrix of x (of y) output matrix b multiplies.
  int64_t XIndex(int64_t b) const { return Index(b, x_strides); }
  int64_t YIndex(int64_t b) const { return Index(b, y_strides); }
  // When every output matrix b reads x's matrix b * *x_step and y's b * *y_step
  // (steps 0 or 1: same batches, or one operand broadcast whole): the form
  // strided batched GEMMs take.
  bool Uniform(int64_t* x_step, int64_t* y_step) const;

 private:
  int64_t Index(int64_t b, const std::vector<int64_t>& strides) const;
};

// The plan of x (input 0) times y (input 1), each matrix transposed when
// adj_x / adj_y, and output 0 allocated. InvalidArgument naming both shapes
// when a rank is below 2, the inner dimensions differ, the batch dimensions
// do not broadcast, or a matrix dimension exceeds INT_MAX (the BLAS libraries
// take int sizes); else the allocation's error.
StatusOr<BatchMatMulPlan> BatchMatMulOutput(OpKernelContext* ctx, bool adj_x, bool adj_y, Tensor** out);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_BATCH_MATMUL_ARGS_H_
