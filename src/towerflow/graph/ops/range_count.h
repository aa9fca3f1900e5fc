// Range's element count, shared by its shape function (graph/ops/layout_ops.cc)
// and its kernel (kernels/layout_kernels.cc) so that the static shape and the
// run-time one always agree. TF's rule: exact integer arithmetic for integers,
// arithmetic in T for floats. Header-only; stateless.
#ifndef TOWERFLOW_GRAPH_OPS_RANGE_COUNT_H_
#define TOWERFLOW_GRAPH_OPS_RANGE_COUNT_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "towerflow/core/status.h"

namespace tw {

// The count of [start, start + delta, ...) below `limit`. InvalidArgument
// "Range: requires delta != 0", "Range: requires start <= limit when delta > 0
// ..." (or >= for a negative delta), or for a count that is not finite or
// exceeds int64.
template <typename T>
StatusOr<int64_t> RangeCount(T start, T limit, T delta) {
  if (delta == 0) return errors::InvalidArgument("Range: requires delta != 0");
  if (delta > 0 ? start > limit : start < limit) {
    return errors::InvalidArgument("Range: requires start ", delta > 0 ? "<=" : ">=", " limit when delta ",
                                   delta > 0 ? "> 0" : "< 0", ": ", start, "/", limit);
  }
  if constexpr (std::is_integral_v<T>) {
    // In 128 bits: limit - start may not fit T, nor the count int64.
    const __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start);
    const __int128 a = span < 0 ? -span : span;
    const __int128 b = delta < 0 ? -static_cast<__int128>(delta) : static_cast<__int128>(delta);
    const __int128 n = (a + b - 1) / b;
    if (n > std::numeric_limits<int64_t>::max()) {
      return errors::InvalidArgument("Range: ", start, " to ", limit, " by ", delta, " has more than 2^63 - 1 elements");
    }
    return static_cast<int64_t>(n);
  } else {
    const T n = std::ceil(std::abs((limit - start) / delta));
    if (!std::isfinite(n) || n >= static_cast<T>(9.2e18)) {
      return errors::InvalidArgument("Range: ", start, " to ", limit, " by ", delta,
                                     " does not give a finite count of at most 2^63 elements");
    }
    return static_cast<int64_t>(n);
  }
}

}  // namespace tw

#endif  // TOWERFLOW_GRAPH_OPS_RANGE_COUNT_H_
