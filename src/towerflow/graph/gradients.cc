#include "towerflow/graph/gradients.h"

#include <deque>
#include <set>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"

namespace tw {

GradientRegistry& GradientRegistry::Global() {
  static GradientRegistry* registry = [] {
    auto* r = new GradientRegistry();
    RegisterAllGradients(*r);
    return r;
  }();
  return *registry;
}

void GradientRegistry::Register(const std::string& op, GradFn fn) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  fns_[op] = std::move(fn);
}
void GradientRegistry::RegisterNoGradient(const std::string& op) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  no_gradient_[op] = true;
}

void GradientRegistry::RegisterGradientUndefined(const std::string& op) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  undefined_[op] = true;
}

const GradFn* GradientRegistry::Find(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

bool GradientRegistry::IsNoGradient(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return no_gradient_.count(op) > 0;
}

bool GradientRegistry::IsGradientUndefined(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return undefined_.count(op) > 0;
}

namespace {

Output SumGradients(const Scope& scope, const std::vector<Output>& grads) {
  if (grads.empty()) return Output();
  if (grads.size() == 1) return grads.front();
  return AddN(scope, grads);
}

}  // namespace

StatusOr<std::vector<Output>> Gradients(const Scope& scope, const std::vector<Output>& ys,
                                        const std::vector<Output>& xs,
                                        const std::vector<Output>& grad_ys) {
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return errors::InvalidArgument("Gradients: ", ys.size(), " ys but ", grad_ys.size(), " grad_ys");
  }
  for (const Output& o : ys) {
    if (!o.valid()) return errors::InvalidArgument("Gradients: a y is null (did graph building fail?)");
    if (!IsFloating(o.dtype())) {
      return errors::InvalidArgument("Gradients: y ", o.name(), " has dtype ", DataTypeName(o.dtype()),
                                     "; only float and double are differentiable");
    }
  }
  for (const Output& o : xs) {
    if (!o.valid()) return errors::InvalidArgument("Gradients: an x is null (did graph building fail?)");
  }
  const Graph& g = scope.graph();
  const int n = g.num_nodes();
  // Nodes between xs and ys: reachable backward from ys and forward from xs.
  std::vector<char> back(static_cast<size_t>(n), 0), fwd(static_cast<size_t>(n), 0);
  std::vector<const Node*> stack;
  for (const Output& y : ys) {
    if (!back[static_cast<size_t>(y.node->id())]) {
      back[static_cast<size_t>(y.node->id())] = 1;
      stack.push_back(y.node);
    }
  }
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Output& in : node->inputs()) {
      if (!back[static_cast<size_t>(in.node->id())]) {
        back[static_cast<size_t>(in.node->id())] = 1;
        stack.push_back(in.node);
      }
    }
  }
  for (const Output& x : xs) {
    if (!fwd[static_cast<size_t>(x.node->id())]) {
      fwd[static_cast<size_t>(x.node->id())] = 1;
      stack.push_back(x.node);
    }
  }
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Node* c : g.consumers(node)) {
      if (!fwd[static_cast<size_t>(c->id())]) {
        fwd[static_cast<size_t>(c->id())] = 1;
        stack.push_back(c);
      }
    }
  }
  auto relevant = [&](const Node* node) {
    return back[static_cast<size_t>(node->id())] && fwd[static_cast<size_t>(node->id())];
  };

  // pending[n]: data edges from n into relevant consumers still to be processed.
  std::vector<int> pending(static_cast<size_t>(n), 0);
  for (int id = 0; id < n; ++id) {
    const Node* node = g.node(id);
    if (!relevant(node)) continue;
    for (const Output& in : node->inputs()) {
      if (relevant(in.node)) ++pending[static_cast<size_t>(in.node->id())];
    }
  }

  std::map<Output, std::vector<Output>> grads;
  Scope gscope = scope.NewSubScope("gradients");
  for (size_t i = 0; i < ys.size(); ++i) {
    Output gy = grad_ys.empty() ? OnesLike(gscope, ys[i]) : grad_ys[i];
    grads[ys[i]].push_back(gy);
  }
  std::deque<const Node*> ready;
  std::set<int> queued;
  for (const Output& y : ys) {
    if (relevant(y.node) && pending[static_cast<size_t>(y.node->id())] == 0 && queued.insert(y.node->id()).second) {
      ready.push_back(y.node);
    }
  }
  while (!ready.empty()) {
    const Node* node = ready.front();
    ready.pop_front();
    Scope op_scope = gscope.NewSubScope(node->name() + "_grad").WithDevice(node->requested_device());
    std::vector<Output> grad_outputs(static_cast<size_t>(node->num_outputs()));
    bool any = false;
    for (int o = 0; o < node->num_outputs(); ++o) {
      auto it = grads.find(Output(const_cast<Node*>(node), o));
      if (it != grads.end() && !it->second.empty()) {
        grad_outputs[static_cast<size_t>(o)] = SumGradients(op_scope, it->second);
        it->second = {grad_outputs[static_cast<size_t>(o)]};
        any = true;
      }
    }
    TW_RETURN_IF_ERROR(scope.status());
    // Stop at xs that no other x depends on: nothing upstream is wanted.
    bool has_relevant_input = false;
    for (const Output& in : node->inputs()) has_relevant_input |= relevant(in.node);
    if (!has_relevant_input) continue;
    std::vector<Output> grad_inputs(static_cast<size_t>(node->num_inputs()));
    const GradientRegistry& reg = GradientRegistry::Global();
    if (!any || reg.IsNoGradient(node->op())) {
      // No gradient flows through; inputs still count as processed.
    } else if (const GradFn* fn = reg.Find(node->op())) {
      Status s = (*fn)(op_scope, *node, grad_outputs, &grad_inputs);
      if (!s.ok()) return s.WithContext("gradient of " + node->DebugName());
      TW_RETURN_IF_ERROR(scope.status());
    } else if (reg.IsGradientUndefined(node->op())) {
      return errors::Unimplemented("op '", node->op(), "' has no gradient (TF defines none either); node ",
                                   node->DebugName(), " lies between the ys and the xs");
    } else {
      return errors::Unimplemented("no gradient is registered for op '", node->op(), "' (node ",
                                   node->DebugName(), ")");
    }
    for (int j = 0; j < node->num_inputs(); ++j) {
      const Output& in = node->input(j);
      if (!relevant(in.node)) continue;
      if (grad_inputs[static_cast<size_t>(j)].valid()) grads[in].push_back(grad_inputs[static_cast<size_t>(j)]);
      if (--pending[static_cast<size_t>(in.node->id())] == 0 && queued.insert(in.node->id()).second) {
        ready.push_back(in.node);
      }
    }
  }
  std::vector<Output> result;
  for (const Output& x : xs) {
    auto it = grads.find(x);
    result.push_back(it == grads.end() ? Output() : SumGradients(gscope, it->second));
  }
  TW_RETURN_IF_ERROR(scope.status());
  return result;
}

}  // namespace tw
