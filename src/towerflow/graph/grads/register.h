// The registration functions of every gradient family, called once from
// RegisterAllGradients (register_all.cc). Internal to graph/.
#ifndef TOWERFLOW_GRAPH_GRADS_REGISTER_H_
#define TOWERFLOW_GRAPH_GRADS_REGISTER_H_

#include "towerflow/graph/gradients.h"

namespace tw {

void RegisterArrayGradients(GradientRegistry& registry);
void RegisterShapeGradients(GradientRegistry& registry);
void RegisterGatherGradients(GradientRegistry& registry);
void RegisterLayoutGradients(GradientRegistry& registry);
void RegisterImageGradients(GradientRegistry& registry);
void RegisterMathGradients(GradientRegistry& registry);
void RegisterNnGradients(GradientRegistry& registry);
void RegisterStateGradients(GradientRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_GRAPH_GRADS_REGISTER_H_
