// Gradients of the basic array ops.
#include "towerflow/graph/grads/register.h"
#include "towerflow/graph/ops/array_ops.h"

namespace tw {

void RegisterArrayGradients(GradientRegistry& r) {
  // d identity(x)/dx = 1: the gradient passes through unchanged, as the same
  // tensor (TF's _IdGrad adds no node either): a variable's update reads its
  // gradient's producer directly, one node fewer per variable and step.
  for (const char* op : {"Identity", "EnsureShape"}) {
    r.Register(op, [](const Scope&, const Node&, const std::vector<Output>& dy, std::vector<Output>* dx) {
      (*dx)[0] = dy[0];
      return Status::OK();
    });
  }
  // Cast between float types: cast the gradient back; integer sources get none.
  r.Register("Cast", [](const Scope& s, const Node& op, const std::vector<Output>& dy,
                        std::vector<Output>* dx) {
    const DataType src = op.input(0).dtype();
    if (IsFloating(src) && IsFloating(op.output_type(0))) (*dx)[0] = Cast(s, dy[0], src);
    return Status::OK();
  });
  for (const char* op : {"Const", "Placeholder", "StopGradient", "ZerosLike", "OnesLike", "NoOp"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace tw
