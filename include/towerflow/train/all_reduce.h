// All-reduce: N same-shaped tensors, one per device, each replaced by the
// reduction (sum, mean, max or min) of all N, element by element. It is how
// mirrored towers keep their variable copies equal: every copy is updated with
// the same averaged gradient.
//
// Two layers:
// - AllReducer, on tensors: the interface a backend implements. CpuAllReducer
//   reduces host tensors, chunked and multi-threaded; [cuda] adds an NCCL
//   implementation behind the same interface. AllReduce may be called from
//   several threads at once (it only reads its options and uses a thread-safe
//   pool).
// - AllReduce(scope, ...) and AllReduceMany, in the graph, two algorithms:
//   * reduce-broadcast (the default): AddN of the per-device inputs on one
//     device, a division for the mean, and one Identity per input device (the
//     "broadcast": the partitioner's transfers carry the result there; between
//     virtual CPU devices they share the buffer). Works on any devices.
//   * collective: one CollectiveAllReduce node per device
//     (graph/ops/collective_ops.h); AllReduceMany fuses a whole list (all of
//     a tower's gradients) into one meeting per device. On CPU devices the
//     participants meet, each reduces a slice, all share the result; each
//     waiting participant holds a thread: on the 2-core CI VM with 2 towers
//     it measured 7 to 21% slower per step than reduce-broadcast
//     (docs/benchmarks.md), hence opt-in there. On CUDA GPUs the last to
//     arrive hands every participant's list to NCCL (NcclAllReducer, small
//     tensors in buckets), reduced in place on each GPU: the default there
//     (kAuto), where reduce-broadcast copies every gradient to one GPU and
//     back.
//   Graph builders record errors in the scope (scope.h) and are not
//   thread-safe.
#ifndef TOWERFLOW_TRAIN_ALL_REDUCE_H_
#define TOWERFLOW_TRAIN_ALL_REDUCE_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/core/threadpool.h"
#include "towerflow/graph/scope.h"

namespace tw::train {

enum class Reduction { kSum, kMean, kMax, kMin };
// "sum", "mean", "max", "min".
const char* ReductionName(Reduction op);

class AllReducer {
 public:
  virtual ~AllReducer() = default;
  // "cpu", "nccl": for logs.
  virtual std::string name() const = 0;

  // Replaces every tensor's contents with the element-wise reduction of all of
  // them. Tensors may share buffers (a tensor passed twice counts twice); each
  // input is read before any output is written. For kMean, integer types divide
  // with truncation. Errors: InvalidArgument for an empty list, a null or
  // uninitialized tensor, or tensors whose dtypes or shapes differ (naming the
  // index and both), and for dtypes that cannot be reduced (string, bool); the
  // tensors are unchanged then.
  // REQUIRES: the buffers are in memory this reducer can address (host memory
  // for CpuAllReducer).
  virtual Status AllReduce(const std::vector<Tensor*>& tensors, Reduction op = Reduction::kMean) = 0;
};

struct CpuAllReducerOptions {
  // The flat buffer is split into chunks of this many bytes (at least one
  // element); the pool's workers take whole chunks. 64 KiB keeps a chunk of
  // every input in L2 while leaving enough chunks to balance.
  int64_t chunk_bytes = 64 * 1024;
};

// The CPU implementation: ParallelFor over chunks; each worker sums its chunk
// across the N inputs (in input order, so the result is the same as a plain loop
// and does not depend on the thread count) into a stack buffer, finishes the
// mean, and writes the result to all N.
class CpuAllReducer : public AllReducer {
 public:
  // Borrows `pool` (null: runs on the calling thread). The pool must outlive this.
  explicit CpuAllReducer(ThreadPool* pool, CpuAllReducerOptions options = {});
  // Owns a pool of `num_threads` - 1 workers (the caller is the last one);
  // num_threads <= 1 runs on the calling thread.
  explicit CpuAllReducer(int num_threads, CpuAllReducerOptions options = {});
  ~CpuAllReducer() override;

  std::string name() const override { return "cpu"; }
  Status AllReduce(const std::vector<Tensor*>& tensors, Reduction op = Reduction::kMean) override;

 private:
  std::unique_ptr<ThreadPool> owned_pool_;
  ThreadPool* pool_;
  CpuAllReducerOptions options_;
};

enum class AllReduceAlgorithm {
  kAuto,             // kCollective on CUDA GPUs (NCCL), kReduceBroadcast elsewhere
  kCollective,       // CollectiveAllReduce on each device (CPU threads, or NCCL on CUDA GPUs)
  kReduceBroadcast,  // AddN (+ Div) on one device, an Identity per device
};

// kAuto resolved for tensors on `devices` (device names, one per input): the
// collective, over NCCL, where every device is a GPU and this process has
// CUDA GPUs and NCCL (a build with the CUDA backend); reduce-broadcast
// otherwise (measured faster on CPU devices, docs/benchmarks.md; fake GPUs
// included). The others as given. An empty list resolves as CPU devices.
AllReduceAlgorithm ResolveAllReduceAlgorithm(AllReduceAlgorithm algorithm,
                                             const std::vector<std::string>& devices = {});

struct GraphAllReduceOptions {
  // kSum or kMean (InvalidArgument for the others: the graph has no Minimum op).
  Reduction reduction = Reduction::kMean;
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto;
  // Index of the input on whose device the sum is computed. Replicate spreads
  // its variables over the devices round-robin (tf_cnn_benchmarks' "shuffle"
  // all-reduce), so no device does every reduction.
  int reduce_on = 0;
  // The name scope opened under the caller's scope for the nodes; "" builds
  // them in the caller's scope itself.
  std::string name = "all_reduce";
};

// One output per input, each on its input's requested device, all holding the
// reduction of the inputs. Nodes are built in name scope options.name under
// `scope`: reduce-broadcast "all_reduce/AddN", "all_reduce/truediv",
// "all_reduce/broadcast_<i>" (one input gives an Identity of it: x / 1 == x);
// collective "all_reduce/device_<i>" (reduce_on unused). Errors (recorded in
// the scope, outputs null): no inputs, a null input, dtypes or static shapes
// that differ, reduce_on out of range, an unsupported reduction.
std::vector<Output> AllReduce(const Scope& scope, const std::vector<Output>& inputs,
                              const GraphAllReduceOptions& options = {});

// Many tensors per device at once: inputs[i][k] is device i's k-th tensor
// (every device the same count, tensor k the same dtype and shape on every
// device); out[i][k] its reduction. Collective: one CollectiveAllReduce per
// device and dtype reduces the whole list in one meeting ("all_reduce/
// device_<i>", or "all_reduce/device_<i>_<dtype>" when there are several
// dtypes). Reduce-broadcast: one AllReduce per k, in name scope
// "all_reduce/tensor_<k>", summing on device (reduce_on + k) mod N so that no
// device does every sum. Errors as AllReduce's, naming i and k.
std::vector<std::vector<Output>> AllReduceMany(const Scope& scope, const std::vector<std::vector<Output>>& inputs,
                                               const GraphAllReduceOptions& options = {});

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_ALL_REDUCE_H_
