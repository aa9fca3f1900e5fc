#include "towerflow/runtime/gradient_checker.h"

#include <cmath>
#include <mutex>

#include "towerflow/core/device_spec.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

Tensor DefaultInput(const GradCheckCase::Input& in, std::mt19937_64& rng) {
  Tensor t(in.dtype, in.shape);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3);
  DispatchNumeric(in.dtype, "gradient checker input", [&]<typename T>() {
    for (auto& v : t.flat<T>()) {
      if constexpr (std::is_floating_point_v<T>) {
        v = static_cast<T>(uniform(rng));
      } else {
        v = static_cast<T>(small(rng));
      }
    }
    return Status::OK();
  }).IgnoreError();
  return t;
}

double ScalarOf(const Tensor& t) {
  return t.dtype() == kFloat64 ? t.scalar<double>() : static_cast<double>(t.scalar<float>());
}

double ElementOf(const Tensor& t, int64_t k) {
  return t.dtype() == kFloat64 ? t.data<double>()[k] : static_cast<double>(t.data<float>()[k]);
}

void AddToElement(Tensor& t, int64_t k, double delta) {
  if (t.dtype() == kFloat64) {
    t.data<double>()[k] += delta;
  } else {
    t.data<float>()[k] += static_cast<float>(delta);
  }
}

// "name (Op) on /device:CPU:0" for each node from `first` on that was asked
// for `device` and placed elsewhere. REQUIRES: the nodes have been placed.
std::vector<std::string> MovedNodes(const Graph& graph, const Session& session, int first,
                                    const std::string& device) {
  std::vector<std::string> moved;
  for (int id = first; id < graph.num_nodes(); ++id) {
    const Node& node = *graph.node(id);
    if (node.requested_device() != device) continue;
    const Device* placed = session.impl().placement().device(node);
    const std::string where = placed ? placed->short_name() : "no device";
    if (where != device) moved.push_back(node.name() + " (" + node.op() + ") on " + where);
  }
  return moved;
}

}  // namespace

StatusOr<GradCheckResult> CheckGradient(const GradCheckCase& c, uint64_t seed, const std::string& device) {
  std::mt19937_64 rng(seed);
  Graph graph;
  Scope scope(graph);
  std::vector<Output> xs;
  std::vector<Tensor> values;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    xs.push_back(Placeholder(scope.WithOpName("x" + std::to_string(i)), c.inputs[i].dtype,
                             PartialShape(c.inputs[i].shape)));
    values.push_back(c.make_input ? c.make_input(static_cast<int>(i), rng) : DefaultInput(c.inputs[i], rng));
    if (values.back().dtype() != c.inputs[i].dtype || values.back().shape() != c.inputs[i].shape) {
      return errors::InvalidArgument("gradient check '", c.op, " ", c.name, "': input ", i,
                                     " generator made ", values.back().DebugString(0));
    }
  }
  // With a device, the case's nodes are requested there by its canonical
  // name, the one placement reports; the loss stays on the CPU.
  std::string on;
  if (!device.empty()) {
    TW_ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(device));
    on = spec.ShortString();
  }
  const int first_op_node = graph.num_nodes();
  Output y = c.build(on.empty() ? scope : scope.WithDevice(on), xs);
  TW_RETURN_IF_ERROR(scope.status());
  if (!IsFloating(y.dtype())) {
    return errors::InvalidArgument("gradient check '", c.op, "': output ", y.name(), " is not float");
  }
  SessionOptions options;
  options.inter_op_threads = 1;
  options.intra_op_threads = 1;
  if (on.empty()) {
    options.max_gpus = 0;
  } else {
    options.allow_soft_placement = true;
  }
  const Scope loss_scope = on.empty() ? scope : scope.WithDevice("/device:CPU:0");
  Session session(graph, options);
  if (!on.empty()) {
    // The session placed the case's nodes when it was created.
    for (int id = first_op_node; id < graph.num_nodes(); ++id) {
      const Node& node = *graph.node(id);
      const Device* placed = session.impl().placement().device(node);
      if (node.op() == c.op && (placed == nullptr || placed->short_name() != on)) {
        return errors::Unimplemented("gradient check '", c.op, " ", c.name, "': ", node.name(), " is not on ", on,
                                     ": ", placed ? session.impl().placement().reason(node) : "not placed");
      }
    }
  }
  FeedList feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(xs[i], values[i]);
  TW_ASSIGN_OR_RETURN(std::vector<Tensor> y0, session.Run(feeds, {y}));

  // L = sum(y * w) with fixed random w, so every element of y's Jacobian counts.
  Tensor w(y.dtype(), y0[0].shape());
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  for (int64_t k = 0; k < w.NumElements(); ++k) {
    if (w.dtype() == kFloat64) {
      w.data<double>()[k] = uniform(rng);
    } else {
      w.data<float>()[k] = static_cast<float>(uniform(rng));
    }
  }
  Output loss = Sum(loss_scope, Mul(loss_scope, y, Const(loss_scope, w)), std::vector<int32_t>{});
  std::vector<Output> checked;
  std::vector<size_t> checked_index;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (c.inputs[i].differentiable) {
      checked.push_back(xs[i]);
      checked_index.push_back(i);
    }
  }
  TW_ASSIGN_OR_RETURN(std::vector<Output> grads, Gradients(loss_scope, {loss}, checked));
  TW_RETURN_IF_ERROR(scope.status());
  for (size_t j = 0; j < grads.size(); ++j) {
    if (!grads[j].valid()) {
      return errors::Internal("gradient check '", c.op, " ", c.name, "': no gradient reaches input ",
                              checked_index[j]);
    }
  }
  TW_ASSIGN_OR_RETURN(std::vector<Tensor> symbolic, session.Run(feeds, grads));
  GradCheckResult result;
  if (!on.empty()) result.moved = MovedNodes(graph, session, first_op_node, on);

  for (size_t j = 0; j < checked.size(); ++j) {
    const size_t i = checked_index[j];
    if (symbolic[j].shape() != values[i].shape()) {
      return errors::Internal("gradient check '", c.op, " ", c.name, "': gradient of input ", i,
                              " has shape ", symbolic[j].shape().ToString(), ", input has ",
                              values[i].shape().ToString());
    }
    for (int64_t k = 0; k < values[i].NumElements(); ++k) {
      Tensor plus = values[i].DeepCopy();
      AddToElement(plus, k, c.delta);
      Tensor minus = values[i].DeepCopy();
      AddToElement(minus, k, -c.delta);
      FeedList fp = feeds, fm = feeds;
      fp[i].second = plus;
      fm[i].second = minus;
      TW_ASSIGN_OR_RETURN(std::vector<Tensor> lp, session.Run(fp, {loss}));
      TW_ASSIGN_OR_RETURN(std::vector<Tensor> lm, session.Run(fm, {loss}));
      const double numeric = (ScalarOf(lp[0]) - ScalarOf(lm[0])) / (2 * c.delta);
      const double err = std::fabs(numeric - ElementOf(symbolic[j], k)) / std::max(1.0, std::fabs(numeric));
      result.max_error = std::max(result.max_error, err);
      ++result.elements;
    }
  }
  return result;
}

const std::vector<GradCheckCase>& AllGradCheckCases() {
  static const std::vector<GradCheckCase>* cases = [] {
    auto* v = new std::vector<GradCheckCase>();
    AddArrayGradChecks(*v);
    AddIndexingGradChecks(*v);
    AddMathGradChecks(*v);
    AddNnGradChecks(*v);
    return v;
  }();
  return *cases;
}

}  // namespace tw
