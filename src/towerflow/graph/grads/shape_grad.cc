#include "towerflow/graph/grads/register.h"
namespace tw {
void RegisterShapeGradients(GradientRegistry&) {}
}  // namespace tw
