// Registers every gradient function (or no-gradient mark): one call per family.
#include "towerflow/graph/grads/register.h"

namespace tw {

void RegisterAllGradients(GradientRegistry& registry) {
  RegisterArrayGradients(registry);
  RegisterShapeGradients(registry);
  RegisterGatherGradients(registry);
  RegisterLayoutGradients(registry);
  RegisterImageGradients(registry);
  RegisterMathGradients(registry);
  RegisterNnGradients(registry);
  RegisterStateGradients(registry);
}

}  // namespace tw
