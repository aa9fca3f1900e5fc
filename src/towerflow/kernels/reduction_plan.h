// How the reduction kernels (Sum, Mean, Max, ArgMax) read their arguments and
// plan their work, on every device: reduction_kernels.cc (CPU) and
// reduction_cuda.cu (GPU) call these, so both accept the same axes and fail
// with one code and one message.
//
// A reduction is planned by collapsing its input: size-1 dimensions are
// dropped and neighbouring dimensions that are both reduced or both kept are
// merged, so any reduction becomes an alternating pattern such as [R]
// (everything), [K,R] (rows), [R,K] (columns: the bias gradient) or [K,R,K].
// ArgMax views its input as [outer, len, inner] around its axis.
//
// Internal to kernels/; host code only (no CUDA types). Plain values and
// stateless functions; thread-safe.
#ifndef TOWERFLOW_KERNELS_REDUCTION_PLAN_H_
#define TOWERFLOW_KERNELS_REDUCTION_PLAN_H_

#include <cstdint>
#include <vector>

#include "towerflow/core/tensor.h"

namespace tw {

// The collapsed reduction of one input over a set of axes.
struct ReducePlan {
  TensorShape out_shape;
  // Collapsed dimensions, outermost first, alternating between kept
  // (reduced[j] == 0) and reduced (1). Empty when every dimension has size 1,
  // and when `empty`.
  std::vector<int64_t> dims;
  std::vector<char> reduced;
  int64_t count = 1;   // input elements per output element (0 when empty)
  bool empty = false;  // no input elements: every output is an empty reduction
};

// Plans reducing a tensor of shape `in` over the int32 axes in `axes` (a
// scalar or vector; negative axes count from the end, repeats are allowed),
// keeping reduced dimensions as size 1 when `keep_dims`. InvalidArgument when
// `axes` has rank > 1 ("reduction_indices must be a scalar or vector, ..."),
// an axis is outside [-rank, rank) ("Invalid reduction dimension ..."), or the
// output shape overflows int64 ("reducing shape ...: the output ...").
// REQUIRES: `axes` is an int32 tensor in host memory.
StatusOr<ReducePlan> MakeReducePlan(const TensorShape& in, const Tensor& axes, bool keep_dims);

// ArgMax of a tensor along `axis`, viewed as [outer, len, inner].
struct ArgMaxPlan {
  TensorShape out_shape;  // the input's shape without `axis`
  int64_t axis = 0;       // in [0, rank)
  int64_t outer = 1, len = 1, inner = 1;
};

// Plans ArgMax of a tensor of shape `in` along the int32 `dimension`.
// InvalidArgument when `dimension` does not hold exactly one element ("ArgMax
// dimension must be a scalar, ..."), is outside [-rank, rank) ("Expected
// dimension in the range ..."), or names an empty dimension ("ArgMax over an
// empty dimension ..."). REQUIRES: `dimension` is an int32 tensor in host
// memory.
StatusOr<ArgMaxPlan> MakeArgMaxPlan(const TensorShape& in, const Tensor& dimension);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_REDUCTION_PLAN_H_
