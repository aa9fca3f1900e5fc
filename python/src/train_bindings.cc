// Bindings of train/: optimizers, the global step, Saver (safetensors) and
// the TensorBoard event writer.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"

namespace tw::python {

using namespace nb::literals;

namespace {

train::GradsAndVars GradsAndVarsFromPython(nb::handle pairs) {
  train::GradsAndVars out;
  for (nb::handle pair : pairs) {
    nb::handle grad = pair[0];
    out.emplace_back(grad.is_none() ? Output() : nb::cast<Output>(grad), nb::cast<Variable>(pair[1]));
  }
  return out;
}

Output OptionalOutput(const std::optional<Output>& o) { return o ? *o : Output(); }

}  // namespace

void BindTrain(nb::module_& m) {
  nb::class_<train::Optimizer>(m, "Optimizer", "The graph-building optimizers' base (train/optimizer.h).")
      .def_prop_ro("name", &train::Optimizer::name)
      .def("compute_gradients",
           [](train::Optimizer& opt, const Scope& scope, const Output& loss, std::vector<Variable> vars) {
             train::GradsAndVars gv = ValueOrThrow(opt.ComputeGradients(scope, loss, std::move(vars)));
             nb::list out;
             for (const auto& [g, v] : gv) out.append(nb::make_tuple(g.valid() ? nb::cast(g) : nb::none(), v));
             return out;
           },
           "scope"_a, "loss"_a, "vars"_a = std::vector<Variable>{})
      .def("apply_gradients",
           [](train::Optimizer& opt, const Scope& scope, nb::handle grads_and_vars,
              std::optional<Variable> global_step, const std::string& name) {
             train::GradsAndVars gv = GradsAndVarsFromPython(grads_and_vars);
             return Checked(scope, [&] {
               return opt.ApplyGradients(scope, gv, global_step ? &*global_step : nullptr, name);
             });
           },
           "scope"_a, "grads_and_vars"_a, "global_step"_a = nb::none(), "name"_a = "",
           nb::rv_policy::reference)
      .def("get_slot",
           [](const train::Optimizer& opt, Graph& graph, const Variable& var,
              const std::string& slot) -> std::optional<Variable> {
             const Variable* v = opt.GetSlot(graph, var, slot);
             if (v == nullptr) return std::nullopt;
             return *v;
           },
           "graph"_a, "var"_a, "slot"_a);

  nb::class_<train::GradientDescent, train::Optimizer>(m, "GradientDescent")
      .def("__init__",
           [](train::GradientDescent* self, double lr, std::optional<Output> lr_tensor, std::string name) {
             new (self) train::GradientDescent(
                 {.learning_rate = lr, .learning_rate_tensor = OptionalOutput(lr_tensor), .name = std::move(name)});
           },
           "learning_rate"_a, "learning_rate_tensor"_a = nb::none(), "name"_a = "GradientDescent");
  nb::class_<train::Momentum, train::Optimizer>(m, "Momentum")
      .def("__init__",
           [](train::Momentum* self, double lr, double momentum, bool nesterov, std::optional<Output> lr_tensor,
              std::string name) {
             new (self) train::Momentum({.learning_rate = lr,
                                         .momentum = momentum,
                                         .use_nesterov = nesterov,
                                         .learning_rate_tensor = OptionalOutput(lr_tensor),
                                         .name = std::move(name)});
           },
           "learning_rate"_a, "momentum"_a, "use_nesterov"_a = false, "learning_rate_tensor"_a = nb::none(),
           "name"_a = "Momentum");
  nb::class_<train::Adam, train::Optimizer>(m, "Adam")
      .def("__init__",
           [](train::Adam* self, double lr, double beta1, double beta2, double epsilon,
              std::optional<Output> lr_tensor, std::string name) {
             train::AdamOptions o;
             o.learning_rate = lr;
             o.beta1 = beta1;
             o.beta2 = beta2;
             o.epsilon = epsilon;
             o.learning_rate_tensor = OptionalOutput(lr_tensor);
             o.name = std::move(name);
             new (self) train::Adam(o);
           },
           "learning_rate"_a = 0.001, "beta1"_a = 0.9, "beta2"_a = 0.999, "epsilon"_a = 1e-8,
           "learning_rate_tensor"_a = nb::none(), "name"_a = "Adam");
  nb::class_<train::RMSProp, train::Optimizer>(m, "RMSProp")
      .def("__init__",
           [](train::RMSProp* self, double lr, double decay, double momentum, double epsilon, bool centered,
              std::optional<Output> lr_tensor, std::string name, std::optional<Output> decay_tensor,
              std::optional<Output> momentum_tensor, std::optional<Output> epsilon_tensor) {
             new (self) train::RMSProp({.learning_rate = lr,
                                        .decay = decay,
                                        .momentum = momentum,
                                        .epsilon = epsilon,
                                        .centered = centered,
                                        .learning_rate_tensor = OptionalOutput(lr_tensor),
                                        .decay_tensor = OptionalOutput(decay_tensor),
                                        .momentum_tensor = OptionalOutput(momentum_tensor),
                                        .epsilon_tensor = OptionalOutput(epsilon_tensor),
                                        .name = std::move(name)});
           },
           "learning_rate"_a, "decay"_a = 0.9, "momentum"_a = 0.0, "epsilon"_a = 1e-10, "centered"_a = false,
           "learning_rate_tensor"_a = nb::none(), "name"_a = "RMSProp", "decay_tensor"_a = nb::none(),
           "momentum_tensor"_a = nb::none(), "epsilon_tensor"_a = nb::none());
  nb::class_<train::Adagrad, train::Optimizer>(m, "Adagrad")
      .def("__init__",
           [](train::Adagrad* self, double lr, double initial_accumulator_value, std::optional<Output> lr_tensor,
              std::string name) {
             new (self) train::Adagrad({.learning_rate = lr,
                                        .initial_accumulator_value = initial_accumulator_value,
                                        .learning_rate_tensor = OptionalOutput(lr_tensor),
                                        .name = std::move(name)});
           },
           "learning_rate"_a, "initial_accumulator_value"_a = 0.1, "learning_rate_tensor"_a = nb::none(),
           "name"_a = "Adagrad");

  // Replicate: the source and the tower function are Python callables, called
  // while the towers are built (this thread, the GIL held).
  m.def("replicate",
        [](const Scope& root, const std::vector<std::string>& devices, nb::callable source,
           train::Optimizer& optimizer, nb::callable tower_fn, const std::string& name_scope_prefix, bool mirrored,
           const std::string& variable_device, bool global_step, bool ordered_batches) {
          train::ReplicateOptions o;
          o.name_scope_prefix = name_scope_prefix;
          o.variable_placement =
              mirrored ? train::VariablePlacement::kMirrored : train::VariablePlacement::kSingleDevice;
          o.variable_device = variable_device;
          o.global_step = global_step;
          o.ordered_batches = ordered_batches;
          train::BatchSourceFn src = [&source](const Scope& tower) {
            return nb::cast<std::vector<Output>>(source(tower));
          };
          train::TowerFn fn = [&tower_fn](const Scope& tower, const Batch& batch) {
            return nb::cast<Output>(tower_fn(tower, batch));
          };
          train::ReplicaStep r = Checked(root, [&] { return train::Replicate(root, devices, src, optimizer, fn, o); });
          nb::dict out;
          out["loss"] = r.loss;
          out["tower_losses"] = r.tower_losses;
          out["train_op"] = nb::cast(r.train_op, nb::rv_policy::reference);
          out["tower_batches"] = r.tower_batches;
          out["devices"] = r.devices;
          out["tower_scopes"] = r.tower_scopes;
          out["global_step"] = r.global_step.valid() ? nb::cast(r.global_step) : nb::none();
          return out;
        },
        "root"_a, "devices"_a, "source"_a, "optimizer"_a, "tower_fn"_a, "name_scope_prefix"_a = "tower",
        "mirrored"_a = false, "variable_device"_a = "/device:CPU:0", "global_step"_a = false,
        "ordered_batches"_a = false);
  m.def("parse_devices", [](const std::string& devices) { return ValueOrThrow(ParseDevices(devices)); },
        "devices"_a);

  m.def("get_or_create_global_step",
        [](const Scope& scope) { return Checked(scope, [&] { return train::GetOrCreateGlobalStep(scope); }); },
        "scope"_a);

  nb::class_<train::Saver>(m, "Saver", "Saves and restores variables as safetensors (train/saver.h).")
      .def("__init__",
           [](train::Saver* self, const Scope& scope, const std::vector<Variable>& vars) {
             Checked(scope, [&] {
               new (self) train::Saver(scope, vars);
               return 0;
             });
           },
           "scope"_a, "vars"_a = std::vector<Variable>{})
      .def("__init__",
           [](train::Saver* self, const Scope& scope, const std::vector<std::pair<std::string, Variable>>& named) {
             Checked(scope, [&] {
               new (self) train::Saver(scope, named);
               return 0;
             });
           },
           "scope"_a, "named"_a)
      .def("save",
           [](const train::Saver& saver, Session& session, const std::string& path,
              const std::map<std::string, std::string>& metadata) {
             nb::gil_scoped_release release;
             ThrowIfError(saver.Save(session, path, metadata));
           },
           "session"_a, "path"_a, "metadata"_a = std::map<std::string, std::string>{})
      .def("restore",
           [](const train::Saver& saver, Session& session, const std::string& path) {
             nb::gil_scoped_release release;
             ThrowIfError(saver.Restore(session, path));
           },
           "session"_a, "path"_a)
      .def_prop_ro("variables", &train::Saver::variables);

  nb::class_<train::EventFileWriter>(m, "EventFileWriter", "A TensorBoard event file (train/event_writer.h).")
      .def_static("create",
                  [](const std::string& logdir, const std::string& suffix) {
                    return ValueOrThrow(train::EventFileWriter::Create(logdir, suffix));
                  },
                  "logdir"_a, "suffix"_a = "")
      .def("add_scalar",
           [](train::EventFileWriter& w, const std::string& tag, double value, int64_t step) {
             ThrowIfError(w.AddScalar(tag, value, step));
           },
           "tag"_a, "value"_a, "step"_a)
      .def("add_scalars",
           [](train::EventFileWriter& w, int64_t step, const std::vector<std::pair<std::string, double>>& values) {
             ThrowIfError(w.AddScalars(step, values));
           },
           "step"_a, "values"_a)
      .def("add_summary",
           [](train::EventFileWriter& w, int64_t step, nb::bytes summary) {
             std::string bytes(summary.c_str(), summary.size());
             nb::gil_scoped_release release;
             ThrowIfError(w.AddSummary(step, bytes));
           },
           "step"_a, "summary"_a)
      .def("add_graph",
           [](train::EventFileWriter& w, const Graph& graph, const std::map<std::string, std::string>& devices) {
             ThrowIfError(w.AddGraph(graph, devices));
           },
           "graph"_a, "assigned_devices"_a = std::map<std::string, std::string>{})
      .def("flush", [](train::EventFileWriter& w) { ThrowIfError(w.Flush()); })
      .def("close", [](train::EventFileWriter& w) { ThrowIfError(w.Close()); })
      .def_prop_ro("path", &train::EventFileWriter::path);
}

}  // namespace tw::python
