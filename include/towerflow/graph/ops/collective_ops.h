// CollectiveAllReduce: one node per participating device, all with the same
// shared_name and num_devices; in a step, every participant contributes a list
// of tensors (say, its gradients) and outputs, for each, the element-wise sum
// (or mean) over the participants. It is TF's NcclAllReduce / CollectiveReduce
// with fusion built in: mirrored towers on virtual CPU devices can average all
// their gradients in one meeting, without a serial AddN on one device
// (train/all_reduce.h's AllReduceAlgorithm::kCollective builds it).
//
// Semantics of a step:
// - The participants meet by (shared_name, step). On CPU devices each reduces
//   a 1/N slice of the elements of the whole list (every device works),
//   summing the inputs in the order of their devices (then node names), so
//   the result does not depend on timing or threads; the mean divides that
//   sum by N, as Div(AddN(...), N) does. All participants output the same
//   buffers (read-only, like any input: kernels never write a shared input in
//   place). On CUDA GPUs NCCL reduces every participant's list in place on
//   its GPU (the sum in NCCL's order: equal to the CPU's to rounding).
// - The participants of one group run on devices of one type (all CPUs or all
//   GPUs); a mixed group fails with InvalidArgument naming two of them.
// - A plan that runs some participants of a shared_name but not num_devices of
//   them is InvalidArgument when the session builds it, naming the group and
//   the participants present (the step would otherwise wait forever).
// - Lists whose lengths, dtypes or shapes differ fail every participant with
//   InvalidArgument naming both nodes and shapes. A step that fails elsewhere
//   cancels waiting participants (Cancelled); closing the session wakes them.
//
// Kernels: CPU (host memory: virtual CPU devices share one address space, and
// fake GPUs borrow it); CUDA GPUs, over NCCL. The GPU kernel lives with the
// NCCL reducer in train/ and joins the registry when CUDA GPUs are visible and
// train/'s builders (AllReduce, AllReduceMany, Replicate) first run: a program
// that makes this op on GPUs with this builder alone, before any of them, has
// no GPU kernel for it, and soft placement runs it on the CPU (its inputs and
// outputs copied through the host). A participant on a device without the
// kernel is placed by soft placement like any op.
#ifndef TOWERFLOW_GRAPH_OPS_COLLECTIVE_OPS_H_
#define TOWERFLOW_GRAPH_OPS_COLLECTIVE_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

struct CollectiveAllReduceAttrs {
  std::string reduction = "sum";  // "sum" or "mean"
  int64_t num_devices = 1;        // participants per step, >= 1
  std::string shared_name;        // the group; required, unique per reduced value
};

// One participant: one output per input, in order. Errors (recorded in the
// scope, null Outputs): no inputs, an empty shared_name, num_devices < 1, a
// reduction other than sum and mean, inputs of different dtypes or of a dtype
// other than float, double, int32, int64.
std::vector<Output> CollectiveAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                        const CollectiveAllReduceAttrs& attrs);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_COLLECTIVE_OPS_H_
