// InferenceContext: what an op's shape function sees when a node is built (input
// shapes and dtypes, constant input values when known, attrs) and where it writes
// the output shapes. Plus the shape functions many ops share.
//
// A shape function returns InvalidArgument for inputs that can never work
// (incompatible ranks or dimensions); Graph::AddNode prefixes the node's name.
// Unknown dimensions (-1) and unknown ranks pass through: the kernel checks again
// at run time. Used from one thread during graph construction.
#ifndef TOWERFLOW_GRAPH_SHAPE_INFERENCE_H_
#define TOWERFLOW_GRAPH_SHAPE_INFERENCE_H_

#include <optional>
#include <vector>

#include "towerflow/graph/attr_value.h"
#include "towerflow/graph/op_def.h"

namespace tw {

// A partly known int vector: each element, or nullopt where unknown.
using PartialVector = std::vector<std::optional<int64_t>>;

class InferenceContext {
 public:
  InferenceContext(const OpDef& def, const AttrMap& attrs, std::vector<PartialShape> input_shapes,
                   std::vector<DataType> input_types, std::vector<const Tensor*> input_values,
                   int num_outputs);

  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  const PartialShape& input(int i) const { return input_shapes_[static_cast<size_t>(i)]; }
  DataType input_type(int i) const { return input_types_[static_cast<size_t>(i)]; }
  // The value of input i when it comes from a Const node; nullptr otherwise.
  const Tensor* input_value(int i) const { return input_values_[static_cast<size_t>(i)]; }
  // What is known of input i's value when it is a small int32/int64 scalar or
  // vector (Node::partial_value; every element of a Const): each element or
  // nullopt; nullopt as a whole when nothing is known.
  const std::optional<PartialVector>& input_partial(int i) const;
  void set_input_partials(std::vector<std::optional<PartialVector>> partials) { input_partials_ = std::move(partials); }
  // A shape given by an int32/int64 vector input: known dims when the input is a
  // constant or partly known (an unknown element, or a negative one, is an
  // unknown dim), the right rank of unknown dims when only its length is known.
  StatusOr<PartialShape> InputAsShape(int i) const;

  template <typename T>
  StatusOr<T> GetAttr(const std::string& name) const {
    return attrs_.Get<T>(name);
  }

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  void set_output(int i, PartialShape shape) { outputs_[static_cast<size_t>(i)] = std::move(shape); }
  const std::vector<PartialShape>& outputs() const { return outputs_; }

  // Checks that input i has rank `rank` (or unknown rank).
  Status WithRank(int i, int rank) const;
  Status WithRankAtLeast(int i, int rank) const;

 private:
  const OpDef& def_;
  const AttrMap& attrs_;
  std::vector<PartialShape> input_shapes_;
  std::vector<DataType> input_types_;
  std::vector<const Tensor*> input_values_;
  std::vector<std::optional<PartialVector>> input_partials_;  // empty: none set
  std::vector<PartialShape> outputs_;
};

namespace shape_fns {
// Output 0 has the shape of input 0.
Status Unchanged(InferenceContext* c);
// Every output has unknown shape.
Status Unknown(InferenceContext* c);
// Output 0 is a scalar.
Status Scalar(InferenceContext* c);
// Output 0 is the numpy-style broadcast of inputs 0 and 1.
Status Broadcast(InferenceContext* c);
// The broadcast shape of a and b; InvalidArgument naming both when incompatible.
StatusOr<PartialShape> BroadcastShapes(const PartialShape& a, const PartialShape& b);
// Reduction of input 0 over the axes in input 1 ("keep_dims" attr).
Status Reduction(InferenceContext* c);

// The values of int32/int64 scalar or vector input i when all are known at
// build time (a Const, or a partial value known in every element), else
// nullopt. A scalar gives one value.
std::optional<std::vector<int64_t>> KnownIntVector(InferenceContext* c, int i);
}  // namespace shape_fns

}  // namespace tw

#endif  // TOWERFLOW_GRAPH_SHAPE_INFERENCE_H_
