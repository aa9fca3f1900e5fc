// No-gradient marks of the variable, random and training ops: a variable's value
// is a leaf of differentiation (gradients stop at its ref output, which is what
// optimizers differentiate with respect to), random samples do not depend on
// differentiable inputs, and in-place updates are not part of a loss. The
// collective all-reduce averages gradients after differentiation (as TF's
// NcclAllReduce, it has no gradient of its own here).
#include "towerflow/graph/grads/register.h"

namespace tw {

void RegisterStateGradients(GradientRegistry& r) {
  for (const char* op : {"VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized",
                         "RandomStandardNormal", "TruncatedNormal", "RandomUniform",
                         "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "ApplyRMSProp", "ApplyCenteredRMSProp",
                         "ApplyAdagrad", "CollectiveAllReduce", "InitializedValue"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace tw
