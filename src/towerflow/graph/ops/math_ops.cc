#include "towerflow/graph/ops/register.h"
namespace tw {
void RegisterMathOps(OpRegistry&) {}
}  // namespace tw
