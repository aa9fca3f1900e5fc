#include "towerflow/graph/ops/register.h"
namespace tw {
void RegisterRandomOps(OpRegistry&) {}
}  // namespace tw
