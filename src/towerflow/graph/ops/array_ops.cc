// Schemas and builders of the basic array ops: Const, Placeholder, Identity,
// StopGradient, ZerosLike, OnesLike, Cast. Shape-manipulating ops are in
// shape_ops.cc.
#include "towerflow/graph/ops/array_ops.h"

#include "towerflow/graph/ops/register.h"

namespace tw {

void RegisterArrayOps(OpRegistry& r) {
  r.Register(OpDefBuilder("Const")
                 .Output("output", "dtype")
                 .RequiredAttr("value", AttrType::kTensor)
                 .TypeAttr("dtype", {})
                 .Shape([](InferenceContext* c) {
                   TW_ASSIGN_OR_RETURN(Tensor v, c->GetAttr<Tensor>("value"));
                   c->set_output(0, PartialShape(v.shape()));
                   return Status::OK();
                 })
                 .Doc("A constant tensor.")
                 .Build()).Check();
  r.Register(OpDefBuilder("Placeholder")
                 .Output("output", "dtype")
                 .TypeAttr("dtype", {})
                 .Attr("shape", PartialShape::Unknown())
                 .Shape([](InferenceContext* c) {
                   TW_ASSIGN_OR_RETURN(PartialShape s, c->GetAttr<PartialShape>("shape"));
                   c->set_output(0, s);
                   return Status::OK();
                 })
                 .Doc("A value fed at Run.")
                 .Build()).Check();
  r.Register(OpDefBuilder("Identity").Input("input", "T").Output("output", "T").TypeAttr("T", {})
                 .Shape(shape_fns::Unchanged).Doc("Returns its input.").Build()).Check();
  r.Register(OpDefBuilder("EnsureShape").Input("input", "T").Output("output", "T").TypeAttr("T", {})
                 .Attr("shape", PartialShape::Unknown())
                 .Shape([](InferenceContext* c) {
                   TW_ASSIGN_OR_RETURN(PartialShape s, c->GetAttr<PartialShape>("shape"));
                   auto merged = c->input(0).Merge(s);
                   if (!merged.ok()) {
                     return errors::InvalidArgument("EnsureShape: the input's shape ", c->input(0).ToString(),
                                                    " is not compatible with ", s.ToString());
                   }
                   c->set_output(0, *merged);
                   return Status::OK();
                 })
                 .Doc("Returns its input, checked to be of a shape compatible with `shape` (what TF1's "
                      "set_shape promises).")
                 .Build()).Check();
  r.Register(OpDefBuilder("StopGradient").Input("input", "T").Output("output", "T").TypeAttr("T", {})
                 .Shape(shape_fns::Unchanged).Doc("Returns its input; blocks gradients.").Build()).Check();
  r.Register(OpDefBuilder("ZerosLike").Input("x", "T").Output("y", "T").TypeAttr("T", NumericTypes())
                 .Shape(shape_fns::Unchanged).Doc("Zeros of x's shape and dtype.").Build()).Check();
  r.Register(OpDefBuilder("OnesLike").Input("x", "T").Output("y", "T").TypeAttr("T", NumericTypes())
                 .Shape(shape_fns::Unchanged).Doc("Ones of x's shape and dtype.").Build()).Check();
  std::vector<DataType> cast_types = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool};
  r.Register(OpDefBuilder("Cast").Input("x", "SrcT").Output("y", "DstT")
                 .TypeAttr("SrcT", cast_types).TypeAttr("DstT", cast_types)
                 .Shape(shape_fns::Unchanged).Doc("Converts x to DstT element-wise.").Build()).Check();
}

Output Const(const Scope& scope, const Tensor& value) {
  if (!value.IsInitialized()) {
    scope.UpdateStatus(errors::InvalidArgument("Const '", scope.Prefixed("Const"),
                                               "': the value is an uninitialized tensor"));
    return Output();
  }
  return NodeBuilder(scope, "Const").Attr("value", value).Attr("dtype", value.dtype()).Finalize();
}
Output Const(const Scope& scope, float value) { return Const(scope, Tensor::Scalar<float>(value)); }
Output Const(const Scope& scope, double value) { return Const(scope, Tensor::Scalar<double>(value)); }
Output Const(const Scope& scope, int32_t value) { return Const(scope, Tensor::Scalar<int32_t>(value)); }
Output Const(const Scope& scope, const std::vector<int32_t>& values) {
  return Const(scope, Tensor::Vec<int32_t>(values));
}
Output Const(const Scope& scope, const std::vector<float>& values, const TensorShape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.num_elements()) {
    scope.UpdateStatus(errors::InvalidArgument("Const '", scope.Prefixed("Const"), "': ", values.size(),
                                               " values for shape ", shape.ToString()));
    return Output();
  }
  return Const(scope, Tensor::FromVector<float>(values, shape));
}

Output ScalarLike(const Scope& scope, double value, DataType dtype) {
  if (dtype == kFloat64) return Const(scope, value);
  return Const(scope, static_cast<float>(value));
}

Output Placeholder(const Scope& scope, DataType dtype, PartialShape shape) {
  return NodeBuilder(scope, "Placeholder").Attr("dtype", dtype).Attr("shape", shape).Finalize();
}
Output Identity(const Scope& scope, const Output& x) { return NodeBuilder(scope, "Identity").Input(x).Finalize(); }
Output EnsureShape(const Scope& scope, const Output& x, const PartialShape& shape) {
  return NodeBuilder(scope, "EnsureShape").Input(x).Attr("shape", shape).Finalize();
}
Output StopGradient(const Scope& scope, const Output& x) {
  return NodeBuilder(scope, "StopGradient").Input(x).Finalize();
}
Output ZerosLike(const Scope& scope, const Output& x) { return NodeBuilder(scope, "ZerosLike").Input(x).Finalize(); }
Output OnesLike(const Scope& scope, const Output& x) { return NodeBuilder(scope, "OnesLike").Input(x).Finalize(); }
Output Cast(const Scope& scope, const Output& x, DataType dtype) {
  return NodeBuilder(scope, "Cast").Input(x).Attr("DstT", dtype).Finalize();
}

}  // namespace tw
