#include "towerflow/kernels/reduction_plan.h"

namespace tw {

StatusOr<ReducePlan> MakeReducePlan(const TensorShape& in, const Tensor& axes, bool keep_dims) {
  if (axes.rank() > 1) {
    return errors::InvalidArgument("reduction_indices must be a scalar or vector, got shape ",
                                   axes.shape().ToString());
  }
  const int rank = in.rank();
  std::vector<char> reduce(static_cast<size_t>(rank), 0);
  const int32_t* a = axes.data<int32_t>();
  for (int64_t k = 0; k < axes.NumElements(); ++k) {
    if (a[k] < -rank || a[k] >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", a[k], " for input with ", rank,
                                     " dimensions, shape ", in.ToString());
    }
    reduce[static_cast<size_t>(a[k] < 0 ? a[k] + rank : a[k])] = 1;
  }
  ReducePlan p;
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    if (!reduce[static_cast<size_t>(i)]) out.push_back(in.dim(i));
    if (reduce[static_cast<size_t>(i)] && keep_dims) out.push_back(1);
  }
  // A zero dimension makes an input valid (and empty) whatever its other
  // dimensions, so reducing it away can leave a shape that overflows int64
  // ([0,2^21,2^21,2^21] over axis 0), and collapsing an empty input's
  // dimensions could overflow: check the output shape, and plan no work for an
  // empty input (every output element is an empty reduction).
  auto out_shape = TensorShape::Make(out);
  if (!out_shape.ok()) {
    return errors::InvalidArgument("reducing shape ", in.ToString(), ": the output ",
                                   out_shape.status().message());
  }
  p.out_shape = *out_shape;
  if (in.num_elements() == 0) {
    p.count = 0;
    p.empty = true;
    return p;
  }
  for (int i = 0; i < rank; ++i) {
    const int64_t d = in.dim(i);
    const char r = reduce[static_cast<size_t>(i)];
    if (r) p.count *= d;
    if (d == 1) continue;
    if (!p.dims.empty() && p.reduced.back() == r) {
      p.dims.back() *= d;
    } else {
      p.dims.push_back(d);
      p.reduced.push_back(r);
    }
  }
  return p;
}

StatusOr<ArgMaxPlan> MakeArgMaxPlan(const TensorShape& in, const Tensor& dimension) {
  if (dimension.NumElements() != 1) {
    return errors::InvalidArgument("ArgMax dimension must be a scalar, got shape ",
                                   dimension.shape().ToString());
  }
  const int rank = in.rank();
  ArgMaxPlan p;
  p.axis = dimension.data<int32_t>()[0];
  if (p.axis < -rank || p.axis >= rank) {
    return errors::InvalidArgument("Expected dimension in the range [", -rank, ", ", rank, "), but got ",
                                   p.axis, " for input of shape ", in.ToString());
  }
  if (p.axis < 0) p.axis += rank;
  p.len = in.dim(static_cast<int>(p.axis));
  if (p.len <= 0) {
    return errors::InvalidArgument("ArgMax over an empty dimension ", p.axis, " of shape ", in.ToString());
  }
  p.out_shape = in;
  p.out_shape.RemoveDim(static_cast<int>(p.axis));
  for (int i = 0; i < rank; ++i) {
    if (i < p.axis) p.outer *= in.dim(i);
    if (i > p.axis) p.inner *= in.dim(i);
  }
  return p;
}

}  // namespace tw
