// The registration functions of every op family, called once from
// RegisterAllOps (register_all.cc). Internal to graph/.
#ifndef TOWERFLOW_GRAPH_OPS_REGISTER_H_
#define TOWERFLOW_GRAPH_OPS_REGISTER_H_

#include "towerflow/graph/op_def.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {

void RegisterArrayOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);
void RegisterGatherOps(OpRegistry& registry);
void RegisterLayoutOps(OpRegistry& registry);
void RegisterImageOps(OpRegistry& registry);
void RegisterColorOps(OpRegistry& registry);
void RegisterControlFlowOps(OpRegistry& registry);
void RegisterMathOps(OpRegistry& registry);
void RegisterNnOps(OpRegistry& registry);
void RegisterStateOps(OpRegistry& registry);
void RegisterRandomOps(OpRegistry& registry);
void RegisterTrainingOps(OpRegistry& registry);
void RegisterCollectiveOps(OpRegistry& registry);

// Dtypes most numeric ops accept.
inline const std::vector<DataType>& FloatTypes() {
  static const std::vector<DataType> k = {kFloat32, kFloat64};
  return k;
}
inline const std::vector<DataType>& NumericTypes() {
  static const std::vector<DataType> k = {kFloat32, kFloat64, kInt32, kInt64, kUInt8};
  return k;
}

}  // namespace tw

#endif  // TOWERFLOW_GRAPH_OPS_REGISTER_H_
