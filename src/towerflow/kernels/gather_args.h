// The argument checks of GatherV2, UnsortedSegmentSum, OneHot, Select and
// SelectV2, on every device: gather_kernels.cc (CPU) and gather_cuda.cu (GPU)
// call the same functions, so both accept the same arguments and fail with
// one code and one message. Every index is checked here, before anything is
// written: a bad one fails the step with the index and its position named.
// GatherV2's indices and UnsortedSegmentSum's segment ids are host-memory
// inputs on every device (checked on the host; the GPU kernels copy them to
// the device). Internal to kernels/; host code only. Stateless; thread-safe.
#ifndef TOWERFLOW_KERNELS_GATHER_ARGS_H_
#define TOWERFLOW_KERNELS_GATHER_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/device/op_kernel.h"

namespace tw {
namespace gather {

// Element k of an integer tensor (int32, int64 or uint8) in host memory.
int64_t IndexAt(const Tensor& t, int64_t k);

// A scalar int input (an axis, a count), or InvalidArgument naming `what`.
StatusOr<int64_t> ScalarInput(OpKernelContext* ctx, int i, const char* what);

// params (input 0) viewed as [outer, n, inner] around the gathered axis; the
// output is [outer, indices.size(), inner].
struct GatherPlan {
  int64_t outer = 0, n = 0, inner = 0;
  std::vector<int64_t> indices;  // each in [0, n)
};

// GatherV2 of params (input 0) at indices (input 1) along axis (input 2),
// output 0 allocated in *out. InvalidArgument for an axis out of range or an
// index outside [0, n) ("GatherV2: indices[i,j] = v is not in [0, n)");
// else TensorShape::Make's or the allocation's error.
StatusOr<GatherPlan> GatherOutput(OpKernelContext* ctx, Tensor** out);

// data (input 0) viewed as [ids.size(), inner]; output [num, inner].
struct SegmentSumPlan {
  int64_t num = 0, inner = 0;
  std::vector<int64_t> ids;  // each < num; negative ids are dropped (TF's rule)
};

// UnsortedSegmentSum of data (input 0) by segment_ids (input 1) into
// num_segments (input 2) segments, output 0 allocated in *out (not zeroed).
// InvalidArgument for a negative count, ids whose shape is not a prefix of
// data's, or an id >= num_segments; else TensorShape::Make's or the
// allocation's error.
StatusOr<SegmentSumPlan> UnsortedSegmentSumOutput(OpKernelContext* ctx, Tensor** out);

// Output element (p, v, s) of OneHot, viewed as [prefix, depth, suffix], is
// on_value where indices[p, s] == v, else off_value.
struct OneHotPlan {
  int64_t depth = 0, suffix = 0;
};

// OneHot of indices (input 0; only its shape is read) with depth (input 1),
// on_value and off_value (inputs 2, 3: scalars) along `axis` (-1: last),
// output 0 allocated in *out (not filled). InvalidArgument for a negative
// depth, non-scalar values or an axis out of range; else TensorShape::Make's
// or the allocation's error.
StatusOr<OneHotPlan> OneHotOutput(OpKernelContext* ctx, int64_t axis, Tensor** out);

// SelectV2's output shape: numpy broadcasting of condition, t and e (inputs
// 0-2), or InvalidArgument naming the three shapes.
StatusOr<TensorShape> SelectV2Shape(OpKernelContext* ctx);

// TF1's Select: t and e of one shape; a scalar condition picks one whole, a
// vector condition picks rows (when t has more than one axis), else the
// condition has t's shape and picks elements.
enum class SelectForm { kWhole, kRows, kElements };
// The form of Select's inputs, or InvalidArgument naming the shapes.
StatusOr<SelectForm> SelectV1Form(OpKernelContext* ctx);

}  // namespace gather
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_GATHER_ARGS_H_
