// Symbolic gradients: Gradients(ys, xs) adds the backward nodes to the graph, as
// tf.gradients does, and returns d(sum ys)/dx for each x.
//
// Each differentiable op registers a GradFn (graph/grads/*.cc); ops through which
// no gradient flows (ArgMax, Equal, initializers, ...) are marked with RegisterNoGradient;
// ops TF defines no gradient for (ResizeArea, AdjustHue, ...) with RegisterGradientUndefined.
// A gradient reaching an op of the last kind, or of none, is an error naming the node (TF's
// LookupError). Gradients that fan in to one output are summed with AddN. The registry is
// filled on first use (modules above graph add theirs later) and
// is thread-safe.
#ifndef TOWERFLOW_GRAPH_GRADIENTS_H_
#define TOWERFLOW_GRAPH_GRADIENTS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

// grad_outputs[i] is d(loss)/d(output i) or a null Output when no gradient flows
// into that output (only possible for ops with several outputs). The function
// fills grad_inputs (already sized to the op's inputs, all null) with
// d(loss)/d(input j), leaving null where the input gets no gradient. New nodes
// are built in `scope` (named "gradients/<node>_grad/...") on the forward node's
// requested device.
using GradFn = std::function<Status(const Scope& scope, const Node& op,
                                    const std::vector<Output>& grad_outputs,
                                    std::vector<Output>* grad_inputs)>;

class GradientRegistry {
 public:
  static GradientRegistry& Global();
  void Register(const std::string& op, GradFn fn);
  void RegisterNoGradient(const std::string& op);
  // Marks an op as having no gradient by design, as in TF: differentiating
  // through it is an error, not a silent zero.
  void RegisterGradientUndefined(const std::string& op);
  // nullptr when the op has no gradient function (marked or missing).
  const GradFn* Find(const std::string& op) const;
  bool IsNoGradient(const std::string& op) const;
  bool IsGradientUndefined(const std::string& op) const;
  // True when the op has a gradient function or one of the two marks.
  bool IsRegistered(const std::string& op) const {
    return Find(op) || IsNoGradient(op) || IsGradientUndefined(op);
  }

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, GradFn> fns_;         // guarded by mu_
  std::map<std::string, bool> no_gradient_;   // guarded by mu_
  std::map<std::string, bool> undefined_;     // guarded by mu_
};

// Defined in graph/grads/register_all.cc.
void RegisterAllGradients(GradientRegistry& registry);

// Returns d(sum of ys)/d(x) for each x; a null Output for an x no y depends on
// (TF returns None). `grad_ys`, when given, are the initial gradients of the ys
// (default: ones). Errors: InvalidArgument for null or non-float outputs,
// Unimplemented naming the node whose op has no gradient.
StatusOr<std::vector<Output>> Gradients(const Scope& scope, const std::vector<Output>& ys,
                                        const std::vector<Output>& xs,
                                        const std::vector<Output>& grad_ys = {});

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_GRADIENTS_H_
