#include "towerflow/graph/grads/register.h"
namespace tw {
void RegisterMathGradients(GradientRegistry&) {}
}  // namespace tw
