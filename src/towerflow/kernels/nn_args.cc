#include "towerflow/kernels/nn_args.h"

namespace tw {

Status CheckBiasAdd(const Tensor& value, const Tensor& bias) { return CheckBiasAdd(value.shape(), bias.shape()); }

Status CheckBiasAdd(const TensorShape& value, const TensorShape& bias) {
  if (value.rank() >= 1 && bias.rank() == 1 && bias.dim(0) == value.dim(value.rank() - 1)) {
    return Status::OK();
  }
  return errors::InvalidArgument("BiasAdd: bias of shape ", bias.ToString(),
                                 " does not match the last dimension of value of shape ", value.ToString());
}

Status CheckBiasAddGrad(const Tensor& out_backprop) {
  if (out_backprop.rank() >= 1) return Status::OK();
  return errors::InvalidArgument("BiasAddGrad: out_backprop must have rank >= 1, got a scalar");
}

Status CheckReluGrad(const Tensor& gradients, const Tensor& features) {
  return CheckReluGrad(gradients.shape(), features.shape());
}

Status CheckReluGrad(const TensorShape& gradients, const TensorShape& features) {
  if (gradients == features) return Status::OK();
  return errors::InvalidArgument("ReluGrad: gradients of shape ", gradients.ToString(), " and features of shape ",
                                 features.ToString(), " differ");
}

Status CheckBiasAddReluGrad(const Tensor& gradients, const Tensor& outputs) {
  TW_RETURN_IF_ERROR(CheckReluGrad(gradients, outputs));
  return CheckBiasAddGrad(gradients);
}

Status CheckSoftmax(const Tensor& logits) {
  if (logits.rank() >= 1) return Status::OK();
  return errors::InvalidArgument("Softmax: logits must have rank >= 1, got a scalar");
}

Status CheckSoftmaxXent(const Tensor& logits, const Tensor& labels) {
  if (logits.rank() == 2 && logits.shape() == labels.shape()) return Status::OK();
  return errors::InvalidArgument(
      "SoftmaxCrossEntropyWithLogits: logits and labels must be "
      "[batch, classes] of one shape, got ",
      logits.shape().ToString(), " and ", labels.shape().ToString());
}

Status CheckSparseSoftmaxXent(const Tensor& logits, const Tensor& labels) {
  if (logits.rank() == 2 && labels.rank() == 1 && labels.dim(0) == logits.dim(0)) return Status::OK();
  return errors::InvalidArgument(
      "SparseSoftmaxCrossEntropyWithLogits: logits must be [batch, classes] "
      "and labels [batch], got ",
      logits.shape().ToString(), " and ", labels.shape().ToString());
}

}  // namespace tw
