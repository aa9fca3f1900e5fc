#include "towerflow/graph/ops/register.h"
namespace tw {
void RegisterNnOps(OpRegistry&) {}
}  // namespace tw
