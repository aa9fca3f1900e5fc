// Schemas and builders of the training update ops: ApplyGradientDescent,
// ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad.
#include "towerflow/graph/ops/training_ops.h"

#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

// Inputs in `same` must all have input 0's shape (the variable's); inputs in
// `scalars` must be scalars. Output 0 has the variable's shape.
ShapeFn ApplyShape(std::vector<int> same, std::vector<int> scalars) {
  return [same = std::move(same), scalars = std::move(scalars)](InferenceContext* c) -> Status {
    PartialShape shape = c->input(0);
    for (int i : same) {
      auto merged = shape.Merge(c->input(i));
      if (!merged.ok()) {
        return errors::InvalidArgument("input ", i, " has shape ", c->input(i).ToString(),
                                       " but the variable has shape ", c->input(0).ToString());
      }
      shape = *merged;
    }
    for (int i : scalars) {
      const PartialShape& s = c->input(i);
      if (s.known_rank() && s.rank() != 0) {
        return errors::InvalidArgument("input ", i, " must be a scalar, got shape ", s.ToString());
      }
    }
    c->set_output(0, shape);
    return Status::OK();
  };
}

}  // namespace

void RegisterTrainingOps(OpRegistry& r) {
  r.Register(OpDefBuilder("ApplyGradientDescent")
                 .RefInput("var", "T")
                 .Input("alpha", "T")
                 .Input("delta", "T")
                 .RefOutput("out", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("use_locking", false)
                 .Shape(ApplyShape({2}, {1}))
                 .Doc("var -= alpha * delta.")
                 .Build()).Check();
  r.Register(OpDefBuilder("ApplyMomentum")
                 .RefInput("var", "T")
                 .RefInput("accum", "T")
                 .Input("lr", "T")
                 .Input("grad", "T")
                 .Input("momentum", "T")
                 .RefOutput("out", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("use_locking", false)
                 .Attr("use_nesterov", false)
                 .Shape(ApplyShape({1, 3}, {2, 4}))
                 .Doc("accum = accum * momentum + grad; var -= lr * accum (or Nesterov's update).")
                 .Build()).Check();
  r.Register(OpDefBuilder("ApplyAdam")
                 .RefInput("var", "T")
                 .RefInput("m", "T")
                 .RefInput("v", "T")
                 .Input("beta1_power", "T")
                 .Input("beta2_power", "T")
                 .Input("lr", "T")
                 .Input("beta1", "T")
                 .Input("beta2", "T")
                 .Input("epsilon", "T")
                 .Input("grad", "T")
                 .RefOutput("out", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("use_locking", false)
                 .Attr("use_nesterov", false)
                 .Shape(ApplyShape({1, 2, 9}, {3, 4, 5, 6, 7, 8}))
                 .Doc("One Adam step with bias correction.")
                 .Build()).Check();
  r.Register(OpDefBuilder("ApplyRMSProp")
                 .RefInput("var", "T")
                 .RefInput("ms", "T")
                 .RefInput("mom", "T")
                 .Input("lr", "T")
                 .Input("rho", "T")
                 .Input("momentum", "T")
                 .Input("epsilon", "T")
                 .Input("grad", "T")
                 .RefOutput("out", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("use_locking", false)
                 .Shape(ApplyShape({1, 2, 7}, {3, 4, 5, 6}))
                 .Doc("ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon); "
                      "var -= mom.")
                 .Build()).Check();
  r.Register(OpDefBuilder("ApplyCenteredRMSProp")
                 .RefInput("var", "T")
                 .RefInput("mg", "T")
                 .RefInput("ms", "T")
                 .RefInput("mom", "T")
                 .Input("lr", "T")
                 .Input("rho", "T")
                 .Input("momentum", "T")
                 .Input("epsilon", "T")
                 .Input("grad", "T")
                 .RefOutput("out", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("use_locking", false)
                 .Shape(ApplyShape({1, 2, 3, 8}, {4, 5, 6, 7}))
                 .Doc("RMSProp normalized by the gradient's estimated variance: mg += (grad - mg) * (1 - rho); "
                      "ms as ApplyRMSProp's; mom = mom * momentum + lr * grad / sqrt(ms - mg^2 + epsilon); "
                      "var -= mom.")
                 .Build()).Check();
  r.Register(OpDefBuilder("ApplyAdagrad")
                 .RefInput("var", "T")
                 .RefInput("accum", "T")
                 .Input("lr", "T")
                 .Input("grad", "T")
                 .RefOutput("out", "T")
                 .TypeAttr("T", FloatTypes())
                 .Attr("use_locking", false)
                 .Attr("update_slots", true)
                 .Shape(ApplyShape({1, 3}, {2}))
                 .Doc("accum += grad^2 (when update_slots); var -= lr * grad / sqrt(accum).")
                 .Build()).Check();
}

Output ApplyGradientDescent(const Scope& scope, const Output& var, const Output& alpha,
                            const Output& delta) {
  return NodeBuilder(scope, "ApplyGradientDescent").Input(var).Input(alpha).Input(delta).Finalize();
}

Output ApplyMomentum(const Scope& scope, const Output& var, const Output& accum, const Output& lr,
                     const Output& grad, const Output& momentum, bool use_nesterov) {
  return NodeBuilder(scope, "ApplyMomentum")
      .Inputs({var, accum, lr, grad, momentum})
      .Attr("use_nesterov", use_nesterov)
      .Finalize();
}

Output ApplyAdam(const Scope& scope, const Output& var, const Output& m, const Output& v,
                 const Output& beta1_power, const Output& beta2_power, const Output& lr,
                 const Output& beta1, const Output& beta2, const Output& epsilon, const Output& grad,
                 bool use_nesterov) {
  return NodeBuilder(scope, "ApplyAdam")
      .Inputs({var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad})
      .Attr("use_nesterov", use_nesterov)
      .Finalize();
}

Output ApplyRMSProp(const Scope& scope, const Output& var, const Output& ms, const Output& mom, const Output& lr,
                    const Output& rho, const Output& momentum, const Output& epsilon, const Output& grad) {
  return NodeBuilder(scope, "ApplyRMSProp").Inputs({var, ms, mom, lr, rho, momentum, epsilon, grad}).Finalize();
}

Output ApplyCenteredRMSProp(const Scope& scope, const Output& var, const Output& mg, const Output& ms,
                            const Output& mom, const Output& lr, const Output& rho, const Output& momentum,
                            const Output& epsilon, const Output& grad) {
  return NodeBuilder(scope, "ApplyCenteredRMSProp")
      .Inputs({var, mg, ms, mom, lr, rho, momentum, epsilon, grad})
      .Finalize();
}

Output ApplyAdagrad(const Scope& scope, const Output& var, const Output& accum, const Output& lr, const Output& grad,
                    bool update_slots) {
  return NodeBuilder(scope, "ApplyAdagrad").Inputs({var, accum, lr, grad}).Attr("update_slots", update_slots).Finalize();
}

}  // namespace tw
