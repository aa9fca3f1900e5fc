#include "towerflow/graph/ops/register.h"
namespace tw {
void RegisterTrainingOps(OpRegistry&) {}
}  // namespace tw
