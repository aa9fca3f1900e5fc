// Internal to kernels/: the element-wise kernel families that
// RegisterMathKernels (math_kernels.cc) registers, and the broadcasting plan and
// argument checks that the binary ones and AddN share with their CUDA twins
// (cwise_cuda.cu). Host code only.
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

// Walks the outer `nd` collapsed dimensions of a BroadcastPlan row-major,
// like an odometer, keeping both operands' element offsets: the CPU kernels
// walk their rows with it, the CUDA twin its launches over the dimensions its
// kernel does not take. Plain value; thread-compatible. REQUIRES: nd <=
// plan.dims.size(), and `plan` outlives the walker.
class BroadcastWalker {
 public:
  // Positioned at row `row` (row-major over the nd outer dimensions).
  BroadcastWalker(const BroadcastPlan& plan, size_t nd, int64_t row) : p_(plan), idx_(nd, 0) {
    for (size_t d = nd; d-- > 0;) {
      idx_[d] = row % p_.dims[d];
      row /= p_.dims[d];
      x_ += idx_[d] * p_.x_strides[d];
      y_ += idx_[d] * p_.y_strides[d];
    }
  }
  int64_t x() const { return x_; }  // element offset into x of the current row
  int64_t y() const { return y_; }
  // Moves to the next row (after the last, back to the first).
  void Next() {
    for (size_t d = idx_.size(); d-- > 0;) {
      x_ += p_.x_strides[d];
      y_ += p_.y_strides[d];
      if (++idx_[d] < p_.dims[d]) return;
      x_ -= p_.x_strides[d] * p_.dims[d];
      y_ -= p_.y_strides[d] * p_.dims[d];
      idx_[d] = 0;
    }
  }

 private:
  const BroadcastPlan& p_;
  std::vector<int64_t> idx_;
  int64_t x_ = 0, y_ = 0;
};

// The start of a binary kernel's Compute on every device (cwise_binary.cc and
// its CUDA twin): the plan of inputs 0 and 1 (MakeBroadcastPlan's error), and
// output 0 allocated with its shape in *z (the allocation's error).
StatusOr<BroadcastPlan> PlanBinaryOutput(OpKernelContext* ctx, Tensor** z);

// Where Cast -> Mul fuses (cast_fusions.cc and its CUDA twin): a uint8 ->
// float32 Cast into Mul's input 0, and a factor whose shape is known to hold
// one element.
bool CastMulApplies(const Node& cast, const Node& mul);
// The start of the fused kernels' Compute: Mul's output allocated with its
// broadcast shape and errors (PlanBinaryOutput), after checking the inputs
// are uint8 x and a one-element float32 factor (Internal naming both
// otherwise: the plan gave the kernel inputs it cannot have).
Status PlanCastMulOutput(OpKernelContext* ctx, Tensor** out);

// AddN's checks on every device (math_kernels.cc and its CUDA twin):
// InvalidArgument "AddN needs at least one input", or "AddN inputs must have
// one shape: ..." naming the first input of another shape than input 0.
Status CheckAddNInputs(OpKernelContext* ctx);

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
