// The argument checks of the nn kernels that have CUDA twins, on every
// device: nn_kernels.cc (CPU) and nn_cuda.cu (GPU) call these, so both accept
// the same shapes and fail with one code and one message. Each returns
// InvalidArgument with the message quoted (and the shapes appended), or OK.
// Internal to kernels/; host code only (no CUDA types). Stateless; thread-safe.
#ifndef TOWERFLOW_KERNELS_NN_ARGS_H_
#define TOWERFLOW_KERNELS_NN_ARGS_H_

#include "towerflow/core/tensor.h"

namespace tw {

// "BiasAdd: bias of shape ... does not match the last dimension of value of
// shape ...": `bias` must be a vector as long as the last dimension of `value`
// (rank >= 1). BiasAdd and BiasAddRelu; the shape form for kernels that
// check before the value exists (a Conv2D fused with its BiasAdd).
Status CheckBiasAdd(const Tensor& value, const Tensor& bias);
Status CheckBiasAdd(const TensorShape& value, const TensorShape& bias);

// "BiasAddGrad: out_backprop must have rank >= 1, got a scalar".
Status CheckBiasAddGrad(const Tensor& out_backprop);

// "ReluGrad: gradients of shape ... and features of shape ... differ"; the
// shape form for kernels that make the gradients (MaxPoolGrad fused with it).
Status CheckReluGrad(const Tensor& gradients, const Tensor& features);
Status CheckReluGrad(const TensorShape& gradients, const TensorShape& features);

// BiasAddReluGrad's: ReluGrad's, then BiasAddGrad's on the gradients.
Status CheckBiasAddReluGrad(const Tensor& gradients, const Tensor& outputs);

// "Softmax: logits must have rank >= 1, got a scalar".
Status CheckSoftmax(const Tensor& logits);

// "SoftmaxCrossEntropyWithLogits: logits and labels must be [batch, classes]
// of one shape, got ... and ...".
Status CheckSoftmaxXent(const Tensor& logits, const Tensor& labels);

// "SparseSoftmaxCrossEntropyWithLogits: logits must be [batch, classes] and
// labels [batch], got ... and ...". The label values are not checked here:
// the CPU kernel checks them on the host, the GPU kernel gives NaN rows
// (nn_cuda.cu says why).
Status CheckSparseSoftmaxXent(const Tensor& logits, const Tensor& labels);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_NN_ARGS_H_
