#include "towerflow/graph/ops/register.h"
namespace tw {
void RegisterStateOps(OpRegistry&) {}
}  // namespace tw
