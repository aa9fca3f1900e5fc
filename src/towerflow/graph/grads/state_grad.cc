#include "towerflow/graph/grads/register.h"
namespace tw {
void RegisterStateGradients(GradientRegistry&) {}
}  // namespace tw
