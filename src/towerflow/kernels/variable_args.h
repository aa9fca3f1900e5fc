// Argument checks shared by the kernels that write variables through ref
// inputs, on every device: the variable ops (Assign, AssignAdd, AssignSub:
// state_kernels.cc, state_cuda.cu) and the training updates
// (ApplyGradientDescent, ApplyMomentum, ApplyAdam: training_kernels.cc,
// training_cuda.cu). A GPU kernel calls the same function as its CPU twin, so
// both fail with one code and one message.
//
// Internal to kernels/; host code only (no CUDA types), so the CPU build and
// the *_cuda.cu files both include it. The functions are stateless; the ones
// that read a ref input REQUIRE its mutex to be held by the caller (RefLocks,
// or a lock_guard on input_ref_mutex).
#ifndef TOWERFLOW_KERNELS_VARIABLE_ARGS_H_
#define TOWERFLOW_KERNELS_VARIABLE_ARGS_H_

#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/device/op_kernel.h"

namespace tw {

// The name of the variable behind ref input `i` of `node`, following the refs
// forwarded by Assign and the Apply* ops back to the VariableV2 node.
std::string VariableName(const Node& node, int i);

// FailedPrecondition "Attempting to use uninitialized value <variable>" for
// ref input `i` of `node` (TF's wording).
Status UninitializedError(const Node& node, int i);

// Holds the distinct mutexes of the given ref inputs, locked in address order
// so that two updates sharing variables cannot deadlock; unlocks them in
// reverse order on destruction. Not copyable.
class RefLocks {
 public:
  RefLocks(OpKernelContext* ctx, std::initializer_list<int> refs);
  // The given mutexes (an update group's), locked in address order.
  explicit RefLocks(std::vector<std::mutex*> mus);
  ~RefLocks();
  RefLocks(const RefLocks&) = delete;
  RefLocks& operator=(const RefLocks&) = delete;

 private:
  std::vector<std::mutex*> mus_;
};

// The checks of an Apply* update. REQUIRES: the locks of `refs` are held.
// Returns FailedPrecondition (UninitializedError) for an uninitialized ref;
// InvalidArgument when a ref or an input in `same` (the gradient) does not
// have the variable's (input 0's) shape, or an input in `scalars` (the
// hyper-parameters) is not a scalar; OK otherwise.
Status CheckApplyInputs(OpKernelContext* ctx, std::initializer_list<int> refs,
                        std::initializer_list<int> same, std::initializer_list<int> scalars);

// Assign's shape check when validate_shape is set. REQUIRES: the lock of ref
// input 0 is held. InvalidArgument "Assign requires shapes of both tensors to
// match: ..." when `value` does not have the variable's shape (before the
// first assignment: is not compatible with the declared shape); OK otherwise.
Status CheckAssignShape(OpKernelContext* ctx, const Tensor& value);

// The checks of AssignAdd / AssignSub. REQUIRES: the lock of ref input 0 is
// held. FailedPrecondition (UninitializedError) for an uninitialized variable;
// InvalidArgument "<op>: variable ... has shape ... but the value has shape
// ..." when the shapes differ; OK otherwise.
Status CheckAssignUpdate(OpKernelContext* ctx, const Tensor& value);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_VARIABLE_ARGS_H_
