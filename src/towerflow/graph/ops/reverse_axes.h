// ReverseV2's axes, checked once for its shape function (graph/ops/layout_ops.cc)
// and its kernels (kernels/layout_args.cc), so that both accept the same axes
// and fail with the same message. Header-only; stateless.
#ifndef TOWERFLOW_GRAPH_OPS_REVERSE_AXES_H_
#define TOWERFLOW_GRAPH_OPS_REVERSE_AXES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/core/status.h"

namespace tw {

// Which of `rank` axes `axes` reverses (negative axes count from the end).
// InvalidArgument, with TF's texts, for an axis out of [-rank, rank) or named
// twice; `shape` (x's, as text) is named in the first.
inline StatusOr<std::vector<bool>> ReversedAxes(const std::vector<int64_t>& axes, int64_t rank,
                                                const std::string& shape) {
  std::vector<bool> reversed(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) {
      return errors::InvalidArgument("ReverseV2: 'axis'[", i, "] = ", axes[i], " is out of valid range [", -rank,
                                     ", ", rank, ") for x of shape ", shape);
    }
    if (reversed[static_cast<size_t>(a)]) {
      return errors::InvalidArgument("ReverseV2: axis ", a, " specified more than once");
    }
    reversed[static_cast<size_t>(a)] = true;
  }
  return reversed;
}

}  // namespace tw

#endif  // TOWERFLOW_GRAPH_OPS_REVERSE_AXES_H_
