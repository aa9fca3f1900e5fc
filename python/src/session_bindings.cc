// Bindings of runtime/: SessionOptions and Session. Run releases the GIL, so
// queue runners, other Python threads and the step run at once.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"

namespace tw::python {

using namespace nb::literals;

void BindSession(nb::module_& m) {
  nb::class_<SessionOptions>(m, "SessionOptions", "How a session runs (core/session_options.h).")
      .def(nb::init<>())
      .def_rw("inter_op_threads", &SessionOptions::inter_op_threads)
      .def_rw("intra_op_threads", &SessionOptions::intra_op_threads)
      .def_rw("num_cpu_devices", &SessionOptions::num_cpu_devices)
      .def_rw("num_fake_gpus", &SessionOptions::num_fake_gpus)
      .def_rw("max_gpus", &SessionOptions::max_gpus)
      .def_rw("visible_gpus", &SessionOptions::visible_gpus)
      .def_rw("logical_gpus_per_gpu", &SessionOptions::logical_gpus_per_gpu)
      .def_rw("gpu_memory_limit_mb", &SessionOptions::gpu_memory_limit_mb)
      .def_rw("allow_tf32", &SessionOptions::allow_tf32)
      .def_rw("cudnn_autotune", &SessionOptions::cudnn_autotune)
      .def_rw("allow_soft_placement", &SessionOptions::allow_soft_placement)
      .def_rw("log_device_placement", &SessionOptions::log_device_placement)
      .def_rw("log_device_placement_verbosity", &SessionOptions::log_device_placement_verbosity)
      .def_rw("strict_tower_inputs", &SessionOptions::strict_tower_inputs)
      .def_rw("collect_step_stats", &SessionOptions::collect_step_stats)
      .def_rw("check_numerics", &SessionOptions::check_numerics)
      .def_rw("fuse_kernels", &SessionOptions::fuse_kernels);

  nb::class_<Session>(m, "Session", "Runs a graph (runtime/session.h).")
      .def(
          "__init__",
          [](Session* self, Graph& graph, const SessionOptions& options) {
            // Creation places the graph and may print the placement log: no
            // Python object is touched, so other threads run meanwhile.
            nb::gil_scoped_release release;
            new (self) Session(graph, options);
          },
          "graph"_a, "options"_a = SessionOptions(), nb::keep_alive<1, 2>())
      .def(
          "run",
          [](Session& session, const std::vector<std::pair<Output, nb::object>>& feeds,
             const std::vector<Output>& fetches, const std::vector<Node*>& targets) {
            FeedList feed_list;
            feed_list.reserve(feeds.size());
            for (const auto& [output, value] : feeds) {
              // A feed takes the dtype of what it replaces, as TF converts it.
              feed_list.emplace_back(output, TensorFromPython(value, output.dtype()));
            }
            std::optional<StatusOr<std::vector<Tensor>>> result;
            {
              nb::gil_scoped_release release;
              result.emplace(session.Run(feed_list, fetches, targets));
            }
            std::vector<Tensor> tensors = ValueOrThrow(std::move(*result));
            nb::list out;
            for (const Tensor& t : tensors) out.append(TensorToNumpy(t));
            return out;
          },
          "feeds"_a, "fetches"_a, "targets"_a = std::vector<Node*>{})
      .def(
          "run_steps",
          [](Session& session, const std::vector<Output>& fetches, const std::vector<Node*>& targets, int64_t n) {
            // The same step `n` times from C++, no Python between steps: what
            // bench/python_overhead.py compares a Python loop of run() with.
            Status status;
            {
              nb::gil_scoped_release release;
              for (int64_t i = 0; i < n && status.ok(); ++i) status = session.Run(fetches, targets).status();
            }
            ThrowIfError(status);
          },
          "fetches"_a, "targets"_a, "n"_a)
      .def("close",
           [](Session& session) {
             nb::gil_scoped_release release;
             session.Close();
           })
      .def_prop_ro("closed", &Session::closed)
      .def("list_devices",
           [](const Session& session) {
             nb::list out;
             for (const DeviceAttributes& d : session.ListDevices()) {
               nb::dict entry;
               entry["name"] = d.name;
               entry["short_name"] = d.short_name;
               entry["device_type"] = d.device_type;
               entry["physical_description"] = d.physical_description;
               entry["intra_op_threads"] = d.intra_op_threads;
               out.append(entry);
             }
             return out;
           })
      .def("describe_devices", &Session::DescribeDevices)
      .def("placed_device", &Session::PlacedDevice, "node"_a)
      .def("placement_reason", &Session::PlacementReason, "node"_a);
}

}  // namespace tw::python
