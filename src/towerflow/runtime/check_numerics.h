// --check-numerics (SessionOptions::check_numerics): after each kernel the
// executor scans its float outputs, and the first NaN or Inf fails the step
// (TF's add_check_numerics_ops for every op). Thread-safe.
#ifndef TOWERFLOW_RUNTIME_CHECK_NUMERICS_H_
#define TOWERFLOW_RUNTIME_CHECK_NUMERICS_H_

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/runtime/plan.h"

namespace tw {

// OK for an output without NaN or Inf (and for non-float outputs); else
// InvalidArgument naming the output, its dtype, shape and device, NaN or Inf,
// and the first flat index. An output in device memory is scanned in a host
// copy (a debugging option: the copy's cost is accepted).
Status CheckOutputNumerics(const ExecutorPlan::Item& item, int output, const Tensor& value);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_CHECK_NUMERICS_H_
