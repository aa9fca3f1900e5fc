#include "towerflow/graph/ops/register.h"
namespace tw {
void RegisterShapeOps(OpRegistry&) {}
}  // namespace tw
