// The argument checks every AllReducer makes (all_reduce.h's contract), shared
// by CpuAllReducer (all_reduce.cc) and NcclAllReducer (nccl_all_reduce_cuda.cc)
// so that both reject the same lists with the same messages. Internal to
// train/; host code only. Stateless; thread-safe.
#ifndef TOWERFLOW_TRAIN_INTERNAL_ALL_REDUCE_CHECKS_H_
#define TOWERFLOW_TRAIN_INTERNAL_ALL_REDUCE_CHECKS_H_

#include <vector>

#include "towerflow/core/tensor.h"

namespace tw::train {

// InvalidArgument "AllReduce: ..." for an empty list, a null or uninitialized
// tensor, tensors whose dtypes or shapes differ from tensor 0's (naming the
// index and both), or a dtype that cannot be reduced (string, bool); OK
// otherwise.
Status CheckAllReduceTensors(const std::vector<Tensor*>& tensors);

}  // namespace tw::train

#endif  // TOWERFLOW_TRAIN_INTERNAL_ALL_REDUCE_CHECKS_H_
