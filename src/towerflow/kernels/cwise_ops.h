// Internal to kernels/: the element-wise kernel families that
// RegisterMathKernels (math_kernels.cc) registers, and the broadcasting plan the
// binary ones share.
//
// A BroadcastPlan describes z = f(x, y) under numpy broadcasting as a loop nest
// over "collapsed" output dimensions: size-1 output dimensions are dropped and
// neighbouring dimensions that broadcast the same way are merged, so same-shape
// operands become one flat loop, a scalar operand one loop with stride 0, and
// [N,C] with [C] a loop over N rows of a contiguous inner loop. Plain values;
// thread-compatible.
#ifndef TOWERFLOW_KERNELS_CWISE_OPS_H_
#define TOWERFLOW_KERNELS_CWISE_OPS_H_

#include <vector>

#include "towerflow/core/tensor_shape.h"
#include "towerflow/core/threadpool.h"
#include "towerflow/device/kernel_registry.h"

namespace tw {

struct BroadcastPlan {
  TensorShape out_shape;
  // Collapsed output dimensions, outermost first; empty when the output has one
  // element. x_strides / y_strides hold each operand's element stride per
  // collapsed dimension: 0 where it is broadcast.
  std::vector<int64_t> dims;
  std::vector<int64_t> x_strides;
  std::vector<int64_t> y_strides;
};

// InvalidArgument "Incompatible shapes: [2,3] vs [4]" when x and y do not
// broadcast, or broadcast to a shape whose element count overflows int64. An
// empty output gets its shape and no dims (there is nothing to compute).
StatusOr<BroadcastPlan> MakeBroadcastPlan(const TensorShape& x, const TensorShape& y);

// Runs fn(0, n) on the calling thread when the work (n * cost_per_unit cycles)
// is too small to gain from other threads, skipping the std::function that
// ParallelFor builds; otherwise ParallelFor(pool, ...). For every math kernel.
template <typename Fn>
void ShardedFor(ThreadPool* pool, int64_t n, int64_t cost_per_unit, Fn&& fn) {
  constexpr int64_t kMinParallelCost = 40000;  // two of ThreadPool's minimum shards
  if (n <= 0) return;
  if (pool == nullptr || n * cost_per_unit < kMinParallelCost) {
    fn(int64_t{0}, n);
    return;
  }
  ParallelFor(pool, n, cost_per_unit, fn);
}

void RegisterCwiseBinaryKernels(KernelRegistry& registry);
void RegisterCwiseUnaryKernels(KernelRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_CWISE_OPS_H_
