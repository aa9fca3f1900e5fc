// Registers every op schema of towerflow: one call per op family.
#include "towerflow/graph/ops/register.h"

namespace tw {

void RegisterAllOps(OpRegistry& registry) {
  RegisterArrayOps(registry);
  RegisterShapeOps(registry);
  RegisterGatherOps(registry);
  RegisterLayoutOps(registry);
  RegisterImageOps(registry);
  RegisterColorOps(registry);
  RegisterControlFlowOps(registry);
  RegisterMathOps(registry);
  RegisterNnOps(registry);
  RegisterStateOps(registry);
  RegisterRandomOps(registry);
  RegisterTrainingOps(registry);
  RegisterCollectiveOps(registry);
}

}  // namespace tw
