// Graph ops that run across the processes of a multi-process job (world.h),
// and the builders that bucket gradients into them.
//
// ProcessAllReduce: the sum or mean over every process of a list of tensors of
// one dtype, reduced as one fused buffer on the gradients channel. attr
// `bucket` b of `num_buckets` B orders the buckets of a step: every rank
// issues bucket 0, then 1, ... whatever order its executor runs them in. A
// step must run every bucket of 0..B-1 exactly once.
// ProcessBroadcast: rank `root`'s values of a list of tensors, on the control
// channel (ordered by bucket the same way).
//
// Kernels: ProcessAllReduce on CPUs (MPI) and, in CUDA builds with MPI, on
// GPUs (NCCL between the processes, collective_kernels_cuda.cc; it has not run
// yet: it needs two physical GPUs); ProcessBroadcast on CPUs (a GPU tensor is
// copied to the host). Without a world (one process), both ops are the identity. Both block their
// executor thread until every rank has joined (MayBlock); a peer that never
// joins fails them after the world's collective timeout (DeadlineExceeded
// naming the rank, the bucket and the step).
#ifndef TOWERFLOW_DIST_COLLECTIVE_OPS_H_
#define TOWERFLOW_DIST_COLLECTIVE_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/scope.h"

namespace tw::dist {

struct ProcessAllReduceAttrs {
  std::string reduction = "mean";  // "sum" | "mean"
  int bucket = 0;
  int num_buckets = 1;
};
// One output per input, same dtype and shape. Errors recorded in the scope:
// no inputs, mixed dtypes, a bad reduction or bucket.
std::vector<Output> ProcessAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                     const ProcessAllReduceAttrs& attrs = {});

// The number of processes of the job (1 without a world) as a scalar of
// `dtype` (float, double, int32, int64), read when a plan of it is built (a
// constant of each plan: the world must be started before the first run).
Output ProcessSize(const Scope& scope, DataType dtype);

struct ProcessBroadcastAttrs {
  int root = 0;
  int bucket = 0;
  int num_buckets = 1;
};
std::vector<Output> ProcessBroadcast(const Scope& scope, const std::vector<Output>& inputs,
                                     const ProcessBroadcastAttrs& attrs = {});

struct GradientBucketOptions {
  // Buckets fill in reverse order of the gradients (the backward pass makes the
  // last layers' first): the first closes past first_bucket_bytes, so that
  // communication starts early; later ones past bucket_bytes (PyTorch DDP's
  // 1 MiB and 25 MiB).
  int64_t first_bucket_bytes = int64_t{1} << 20;
  int64_t bucket_bytes = int64_t{25} << 20;
  std::string device = "/device:CPU:0";  // where the reductions run
  // On a CPU device: each mean as the bucket's sum divided by ProcessSize
  // (Div), for a consumer that divides as it reads (a momentum update that
  // alone reads its gradient fuses the Div into its loop: one pass fewer).
  // Otherwise the bucket is divided where it was reduced, which costs
  // another consumer (SGD, Adam, mirrored copies) no pass of its own.
  bool divide_in_consumer = false;
};
// The mean over every process of each gradient (same order; a null stays
// null), in buckets of one dtype each (ProcessAllReduce). One call per step
// graph: its buckets are numbered 0..B-1. With divide_in_consumer on a CPU
// device each mean is the bucket's sum divided by ProcessSize (the same bits
// as a reduction "mean"); otherwise the bucket reduces to the mean itself
// (MPI's sum divided in place, NCCL's average).
std::vector<Output> CrossProcessMean(const Scope& scope, const std::vector<Output>& gradients,
                                     const GradientBucketOptions& options = {});

// One op that sets every variable in `variables` to rank `root`'s value (one
// ProcessBroadcast per dtype, then an Assign on each variable's device).
// Run it once after initialising or restoring, on every rank.
Node* BroadcastVariables(const Scope& scope, const std::vector<Variable>& variables, int root = 0);

}  // namespace tw::dist

#pragma GCC visibility pop

#endif  // TOWERFLOW_DIST_COLLECTIVE_OPS_H_
