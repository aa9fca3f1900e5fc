// OpDef: the schema of an op (its inputs, outputs, attrs and shape function), and
// OpRegistry, the process-wide table of schemas keyed by op name.
//
// graph/ knows ops by schema only; kernels (device/, kernels/) and gradients
// (graph/grads/) are registered separately, as TF registers them. Schemas are
// written with OpDefBuilder next to the C++ functions that build the op
// (graph/ops/*.cc) and registered from graph/ops/register_all.cc on first use;
// modules above graph (data/) add theirs later. Thread-safe: Register takes a
// writer lock, lookups a reader lock; OpDef pointers stay valid forever.
#ifndef TOWERFLOW_GRAPH_OP_DEF_H_
#define TOWERFLOW_GRAPH_OP_DEF_H_

// Internal (graph/shape_inference.h), opaque to users: declared before the
// exported region, so that libtowerflow.so does not export it.
namespace tw {
class InferenceContext;
}  // namespace tw

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "towerflow/graph/attr_value.h"

namespace tw {

using ShapeFn = std::function<Status(InferenceContext*)>;

// One input or output. Its dtype is fixed, or given by a type attr ("T"); a list
// argument has `number_attr` elements of that dtype ("N" for AddN). A ref argument
// (variables, in-place updates) passes the variable itself rather than a value.
struct ArgDef {
  std::string name;
  DataType fixed_type = DataType::kInvalid;
  std::string type_attr;
  std::string number_attr;
  bool is_ref = false;
};

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  std::optional<AttrValue> default_value;
  std::vector<DataType> allowed_types;  // for kType attrs; empty = any
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<AttrDef> attrs;
  std::vector<ArgDef> outputs;
  ShapeFn shape_fn;
  // Stateful ops (variables, random numbers, queues) are never merged or
  // constant-folded and keep one kernel instance per session.
  bool is_stateful = false;
  std::string summary;

  const AttrDef* FindAttr(const std::string& attr) const;
};

// Fluent construction: OpDefBuilder("MatMul").Input("a", "T").Input("b", "T")
//   .Output("product", "T").TypeAttr("T", {kFloat32, kFloat64})
//   .Attr("transpose_a", false).Shape(MatMulShape).Build()
class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name);
  // `type` is a dtype attr name ("T") or a fixed dtype name ("int32", "string").
  OpDefBuilder& Input(std::string name, const std::string& type);
  OpDefBuilder& RefInput(std::string name, const std::string& type);
  OpDefBuilder& ListInput(std::string name, const std::string& type, std::string number_attr);
  OpDefBuilder& Output(std::string name, const std::string& type);
  OpDefBuilder& RefOutput(std::string name, const std::string& type);
  OpDefBuilder& TypeAttr(std::string name, std::vector<DataType> allowed,
                         std::optional<DataType> default_value = std::nullopt);
  // An attr of the type of `default_value` (int64_t, double, bool, std::string,
  // std::vector<int64_t>, PartialShape, Tensor).
  OpDefBuilder& Attr(std::string name, AttrValue default_value);
  // A required attr without default.
  OpDefBuilder& RequiredAttr(std::string name, AttrType type);
  OpDefBuilder& Stateful();
  OpDefBuilder& Shape(ShapeFn fn);
  OpDefBuilder& Doc(std::string summary);
  OpDef Build();

 private:
  ArgDef MakeArg(std::string name, const std::string& type);
  OpDef def_;
};

class OpRegistry {
 public:
  // The process-wide registry, filled by RegisterAllOps on first use.
  static OpRegistry& Global();

  // AlreadyExists when the name is taken.
  Status Register(OpDef def);
  // nullptr when unknown.
  const OpDef* Find(const std::string& name) const;
  // NotFound naming the op and how to list ops otherwise.
  StatusOr<const OpDef*> Lookup(const std::string& name) const;
  std::vector<const OpDef*> List() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<OpDef>> ops_;  // guarded by mu_
};

// Defined in graph/ops/register_all.cc: registers every op schema of towerflow.
void RegisterAllOps(OpRegistry& registry);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OP_DEF_H_
