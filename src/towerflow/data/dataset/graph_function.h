// GraphFunction: a Map or Filter function as a towerflow subgraph. Make
// builds it once in a graph of its own: one Placeholder per input component
// (with the component's dtype and static shape, named "args_<i>"), then the
// user's builder on them, under name scope `name` ("map"). Run feeds an
// element to the placeholders and fetches the outputs through a CPU session
// of the function's own (one inter-op and one intra-op thread: the
// pipeline's workers are the parallelism). Outputs that are inputs passed
// through are returned without running anything. Run is thread-safe.
#ifndef TOWERFLOW_DATA_DATASET_GRAPH_FUNCTION_H_
#define TOWERFLOW_DATA_DATASET_GRAPH_FUNCTION_H_

#include <memory>
#include <string>
#include <vector>

#include "towerflow/data/dataset.h"
#include "towerflow/runtime/session.h"

namespace tw::data {

class GraphFunction {
 public:
  using Builder = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)>;
  // InvalidArgument naming `name` when the builder records an error, returns
  // no output or a null one.
  static StatusOr<std::shared_ptr<GraphFunction>> Make(const ElementSpec& input, const Builder& builder,
                                                       const std::string& name);
  ~GraphFunction();

  const ElementSpec& output_spec() const { return output_spec_; }
  // Runs the function on `in`; errors name the node that failed.
  Status Run(const Element& in, Element* out) const;

 private:
  GraphFunction() = default;

  std::unique_ptr<Graph> graph_;
  std::vector<Output> args_;
  std::vector<Output> rets_;
  // Per output: the argument it passes through, or -1.
  std::vector<int> passthrough_;
  std::vector<Output> fetches_;  // rets_ that are computed
  std::vector<int> fetch_of_;    // per output: its index in fetches_, or -1
  ElementSpec output_spec_;
  std::unique_ptr<Session> session_;
};

}  // namespace tw::data

#endif  // TOWERFLOW_DATA_DATASET_GRAPH_FUNCTION_H_
