// Bindings of data/dataset.h and data/iterator_ops.h: tw::data::Dataset,
// its Python-side iteration, and graph iterators. Functions given to Map,
// Filter, FlatMap and Interleave are Python callables; Map's and Filter's run
// once, while the dataset is built, to build their subgraph; FlatMap's and
// Interleave's run per element on the pipeline's threads, which take the GIL
// for the call.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "convert.h"

namespace tw::python {

using namespace nb::literals;
using data::Dataset;

namespace {

// A Python callable held by C++ pipelines, which may copy and drop it on
// threads without the GIL: the reference is released under the GIL.
using PyFn = std::shared_ptr<nb::object>;

PyFn HoldCallable(nb::callable fn) {
  return PyFn(new nb::object(std::move(fn)), [](nb::object* p) {
    if (!Py_IsInitialized()) {
      (void)p->release();  // the interpreter is gone: leak the reference
      delete p;
      return;
    }
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

// A dataset's sticky error raises where the transformation is called.
Dataset Built(Dataset ds) {
  ThrowIfError(ds.status());
  return ds;
}

data::Element ElementFromPython(nb::handle components) {
  data::Element element;
  for (nb::handle c : components) element.push_back(TensorFromPythonAnyType(c));
  return element;
}

nb::list ElementToPython(const data::Element& element) {
  nb::list out;
  for (const Tensor& t : element) out.append(TensorToNumpy(t));
  return out;
}

nb::list SpecToPython(const data::ElementSpec& spec) {
  nb::list out;
  for (size_t i = 0; i < spec.size(); ++i) {
    nb::object shape = nb::none();
    if (spec.shapes[i].known_rank()) {
      nb::list dims;
      for (int64_t d : spec.shapes[i].dims()) {
        if (d < 0) {
          dims.append(nb::none());
        } else {
          dims.append(d);
        }
      }
      shape = dims;
    }
    out.append(nb::make_tuple(DataTypeToName(spec.dtypes[i]), shape));
  }
  return out;
}

// The dataset a per-element Python function returns, from the pipeline's thread.
data::DatasetFn DatasetFnFromPython(nb::callable fn) {
  PyFn held = HoldCallable(std::move(fn));
  return [held](const data::Element& element) -> StatusOr<Dataset> {
    nb::gil_scoped_acquire gil;
    try {
      nb::object result = (*held)(ElementToPython(element));
      return nb::cast<Dataset>(result);
    } catch (nb::python_error& e) {
      return errors::InvalidArgument("the Python function raised ", e.what());
    } catch (const nb::cast_error&) {
      return errors::InvalidArgument("the Python function did not return a towerflow Dataset");
    } catch (const StatusError& e) {
      return e.status();
    }
  };
}

}  // namespace

void BindDataset(nb::module_& m) {
  m.attr("AUTOTUNE") = data::kAutotune;

  nb::class_<Dataset>(m, "Dataset", "A tf.data-style input pipeline (data/dataset.h).")
      .def_static("tfrecord",
                  [](nb::handle files, const std::string& compression, int64_t buffer_size,
                     int64_t num_parallel_reads, bool skip_corrupt, bool keys) {
                    data::TFRecordOptions o{compression, buffer_size, num_parallel_reads, skip_corrupt, keys};
                    if (nb::isinstance<Dataset>(files)) return Built(Dataset::TFRecord(nb::cast<Dataset>(files), o));
                    return Built(Dataset::TFRecord(nb::cast<std::vector<std::string>>(files), o));
                  },
                  "files"_a, "compression"_a = "auto", "buffer_size"_a = 256 << 10, "num_parallel_reads"_a = 1,
                  "skip_corrupt"_a = false, "keys"_a = false)
      .def_static("from_tensors", [](nb::handle c) { return Built(Dataset::FromTensors(ElementFromPython(c))); },
                  "components"_a)
      .def_static("from_tensor_slices",
                  [](nb::handle c) { return Built(Dataset::FromTensorSlices(ElementFromPython(c))); },
                  "components"_a)
      .def_static("range",
                  [](int64_t start, int64_t stop, int64_t step) { return Built(Dataset::Range(start, stop, step)); },
                  "start"_a, "stop"_a, "step"_a = 1)
      .def_static("list_files",
                  [](const std::string& pattern, bool shuffle, std::optional<int64_t> seed) {
                    return Built(Dataset::ListFiles(pattern, {.shuffle = shuffle, .seed = seed}));
                  },
                  "pattern"_a, "shuffle"_a = true, "seed"_a = nb::none())
      .def("map",
           [](const Dataset& ds, nb::callable fn, int64_t num_parallel_calls, bool deterministic) {
             PyFn held = HoldCallable(std::move(fn));
             data::MapFn map = [held](const Scope& scope, const std::vector<Output>& element) {
               return nb::cast<std::vector<Output>>((*held)(scope, element));
             };
             return Built(ds.Map(map, {.num_parallel_calls = num_parallel_calls, .deterministic = deterministic}));
           },
           "fn"_a, "num_parallel_calls"_a = 0, "deterministic"_a = true)
      .def("filter",
           [](const Dataset& ds, nb::callable fn) {
             PyFn held = HoldCallable(std::move(fn));
             data::PredicateFn predicate = [held](const Scope& scope, const std::vector<Output>& element) {
               return nb::cast<Output>((*held)(scope, element));
             };
             return Built(ds.Filter(predicate));
           },
           "predicate"_a)
      .def("flat_map", [](const Dataset& ds, nb::callable fn) { return Built(ds.FlatMap(DatasetFnFromPython(fn))); },
           "fn"_a)
      .def("interleave",
           [](const Dataset& ds, nb::callable fn, int64_t cycle_length, int64_t block_length,
              int64_t num_parallel_calls, bool deterministic) {
             return Built(ds.Interleave(DatasetFnFromPython(fn), {cycle_length, block_length, num_parallel_calls,
                                                                    deterministic}));
           },
           "fn"_a, "cycle_length"_a = data::kAutotune, "block_length"_a = 1, "num_parallel_calls"_a = 0,
           "deterministic"_a = true)
      .def("shuffle",
           [](const Dataset& ds, int64_t buffer, std::optional<int64_t> seed, bool reshuffle) {
             return Built(ds.Shuffle(buffer, {.seed = seed, .reshuffle_each_iteration = reshuffle}));
           },
           "buffer_size"_a, "seed"_a = nb::none(), "reshuffle_each_iteration"_a = true)
      .def("repeat", [](const Dataset& ds, int64_t count) { return Built(ds.Repeat(count)); }, "count"_a = -1)
      .def("batch", [](const Dataset& ds, int64_t n, bool drop) { return Built(ds.Batch(n, drop)); },
           "batch_size"_a, "drop_remainder"_a = false)
      .def("unbatch", [](const Dataset& ds) { return Built(ds.Unbatch()); })
      .def("take", [](const Dataset& ds, int64_t n) { return Built(ds.Take(n)); }, "count"_a)
      .def("skip", [](const Dataset& ds, int64_t n) { return Built(ds.Skip(n)); }, "count"_a)
      .def("shard", [](const Dataset& ds, int64_t n, int64_t i) { return Built(ds.Shard(n, i)); },
           "num_shards"_a, "index"_a)
      .def("cache", [](const Dataset& ds, const std::string& f) { return Built(ds.Cache(f)); }, "filename"_a = "")
      .def("prefetch", [](const Dataset& ds, int64_t n) { return Built(ds.Prefetch(n)); },
           "buffer_size"_a = data::kAutotune)
      .def("prefetch_to_device",
           [](const Dataset& ds, const std::string& device, int64_t n) {
             return Built(ds.PrefetchToDevice(device, n));
           },
           "device"_a, "buffer_size"_a = 1)
      .def_prop_ro("element_spec", [](const Dataset& ds) { return SpecToPython(ds.element_spec()); })
      .def("cardinality", &Dataset::Cardinality)
      .def("debug_string", &Dataset::DebugString)
      .def("make_iterator", [](const Dataset& ds) { return ValueOrThrow(ds.MakeIterator()); });

  nb::class_<data::Iterator>(m, "DatasetIterator", "Iterates a Dataset from Python (data/dataset.h).")
      .def("get_next",
           [](data::Iterator& it) {
             data::Element element;
             Status s;
             {
               nb::gil_scoped_release release;
               s = it.GetNext(&element);
             }
             ThrowIfError(s);
             return ElementToPython(element);
           })
      .def("save",
           [](const data::Iterator& it) {
             data::IteratorState state;
             ThrowIfError(it.Save(&state));
             std::string bytes = data::SerializeIteratorState(state);
             return nb::bytes(bytes.data(), bytes.size());
           })
      .def("restore",
           [](data::Iterator& it, nb::bytes bytes) {
             data::IteratorState state =
                 ValueOrThrow(data::ParseIteratorState(std::string_view(bytes.c_str(), bytes.size())));
             ThrowIfError(it.Restore(state));
           },
           "state"_a)
      .def("autotune_summary", &data::Iterator::AutotuneSummary)
      .def("gauges", &data::Iterator::Gauges)
      .def("cancel", &data::Iterator::Cancel)
      .def_prop_ro("element_spec", [](const data::Iterator& it) { return SpecToPython(it.element_spec()); });

  nb::class_<data::GraphIterator>(m, "GraphIterator", "A dataset's iterator in a graph (data/iterator_ops.h).")
      .def_prop_ro("handle", &data::GraphIterator::handle)
      .def_prop_ro("initializer", &data::GraphIterator::initializer, nb::rv_policy::reference)
      .def_prop_ro("element_spec", [](const data::GraphIterator& it) { return SpecToPython(it.element_spec()); })
      .def("get_next",
           [](const data::GraphIterator& it, const Scope& scope) {
             return Checked(scope, [&] { return it.GetNext(scope); });
           },
           "scope"_a)
      .def("save",
           [](const data::GraphIterator& it, Session& session) {
             data::IteratorState state;
             {
               nb::gil_scoped_release release;
               ThrowIfError(data::SaveIterator(session, it, &state));
             }
             std::string bytes = data::SerializeIteratorState(state);
             return nb::bytes(bytes.data(), bytes.size());
           },
           "session"_a)
      .def("restore",
           [](const data::GraphIterator& it, Session& session, nb::bytes bytes) {
             data::IteratorState state =
                 ValueOrThrow(data::ParseIteratorState(std::string_view(bytes.c_str(), bytes.size())));
             nb::gil_scoped_release release;
             ThrowIfError(data::RestoreIterator(session, it, state));
           },
           "session"_a, "state"_a)
      .def("autotune_summary", [](const data::GraphIterator& it, Session& s) { return data::IteratorAutotuneSummary(s, it); },
           "session"_a);
  m.def("make_graph_iterator",
        [](const Scope& scope, const Dataset& ds, const std::string& shared_name) {
          return Checked(scope, [&] { return data::MakeIterator(scope, ds, {.shared_name = shared_name}); });
        },
        "scope"_a, "dataset"_a, "shared_name"_a = "");
}

}  // namespace tw::python
