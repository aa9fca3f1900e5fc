#include "towerflow/graph/grads/register.h"
namespace tw {
void RegisterNnGradients(GradientRegistry&) {}
}  // namespace tw
