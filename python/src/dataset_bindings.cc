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

#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "bindings.h"
#include "convert.h"

namespace tw::python {

using namespace nb::literals;
using data::Dataset;

namespace {

// A Python callable held by C++ pipelines, which may copy and drop it on
// threads without the GIL: the reference is released under the GIL.
using PyFn = std::shared_ptr<nb::object>;

// Whether the interpreter is exiting: a thread that takes the GIL now is
// ended by Python (which a C++ thread cannot survive), so none may.
bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

PyFn HoldCallable(nb::callable fn) {
  return PyFn(new nb::object(std::move(fn)), [](nb::object* p) {
    if (Finalizing()) {
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
    if (Finalizing()) return errors::Cancelled("the Python interpreter is exiting");
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

// A Python-side iterator. Its pipeline's threads may wait for the GIL (a
// flat_map's Python function runs under it), so the pipeline is stopped,
// saved and restored with the GIL released, and every live one is closed at
// interpreter exit (CloseAllIterators, from atexit): a thread that waits for
// the GIL during finalization is ended by Python, which a C++ thread cannot
// survive.
class PyIterator {
 public:
  explicit PyIterator(std::unique_ptr<data::Iterator> it) : it_(std::move(it)) {
    std::lock_guard<std::mutex> lock(LiveMutex());
    Live().insert(this);
  }
  ~PyIterator() {
    {
      std::lock_guard<std::mutex> lock(LiveMutex());
      Live().erase(this);
    }
    Close();
  }
  PyIterator(const PyIterator&) = delete;
  PyIterator& operator=(const PyIterator&) = delete;

  // The pipeline; FailedPrecondition once closed. REQUIRES: the GIL.
  std::shared_ptr<data::Iterator> get() const {
    if (it_ == nullptr) ThrowIfError(errors::FailedPrecondition("the dataset iterator was closed (interpreter exit)"));
    return it_;
  }

  // Stops and joins the pipeline's threads. REQUIRES: the GIL.
  void Close() {
    std::shared_ptr<data::Iterator> it = std::move(it_);
    if (it == nullptr) return;
    nb::gil_scoped_release release;
    it->Cancel();
    it.reset();  // joins, unless a get_next on another thread holds it: that one then does
  }

  // REQUIRES: the GIL (atexit). Takes every live pipeline while holding the
  // GIL (nothing else touches it_ then), then stops and joins them without it.
  static void CloseAll() {
    std::vector<std::shared_ptr<data::Iterator>> pipelines;
    {
      std::lock_guard<std::mutex> lock(LiveMutex());
      for (PyIterator* it : Live()) {
        if (it->it_ != nullptr) pipelines.push_back(std::move(it->it_));
      }
    }
    nb::gil_scoped_release release;
    for (const auto& it : pipelines) it->Cancel();
    pipelines.clear();  // joins each, unless a get_next on another thread holds it: that one then does
  }

 private:
  static std::mutex& LiveMutex() {
    static std::mutex mu;
    return mu;
  }
  static std::set<PyIterator*>& Live() {
    static std::set<PyIterator*> live;
    return live;
  }

  std::shared_ptr<data::Iterator> it_;
};

// Runs `build` (FlatMap, Interleave) without the GIL: learning the element
// spec reads the input's first element, whose pipeline may run Python
// functions on its threads; the Python function of this transformation
// takes the GIL itself.
Dataset BuiltWithoutGil(const std::function<Dataset()>& build) {
  Dataset ds;
  {
    nb::gil_scoped_release release;
    ds = build();
  }
  return Built(std::move(ds));
}

}  // namespace

void BindDataset(nb::module_& m) {
  m.def("_close_dataset_iterators", &PyIterator::CloseAll,
        "Closes every live dataset iterator (registered with atexit by towerflow.data).");
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
      .def("flat_map",
           [](const Dataset& ds, nb::callable fn) {
             data::DatasetFn f = DatasetFnFromPython(fn);
             return BuiltWithoutGil([&] { return ds.FlatMap(f); });
           },
           "fn"_a)
      .def("interleave",
           [](const Dataset& ds, nb::callable fn, int64_t cycle_length, int64_t block_length,
              int64_t num_parallel_calls, bool deterministic) {
             data::DatasetFn f = DatasetFnFromPython(fn);
             return BuiltWithoutGil([&] {
               return ds.Interleave(f, {cycle_length, block_length, num_parallel_calls, deterministic});
             });
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
      .def("ignore_errors", [](const Dataset& ds) { return Built(ds.IgnoreErrors()); })
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
      .def("make_iterator",
           [](const Dataset& ds) { return std::make_unique<PyIterator>(ValueOrThrow(ds.MakeIterator())); });

  // Every call takes its own reference to the pipeline, so that a Close on
  // another thread (interpreter exit) leaves the last one to join it.
  nb::class_<PyIterator>(m, "DatasetIterator", "Iterates a Dataset from Python (data/dataset.h).")
      .def("get_next",
           [](PyIterator& py) {
             std::shared_ptr<data::Iterator> it = py.get();
             data::Element element;
             Status s;
             {
               nb::gil_scoped_release release;
               s = it->GetNext(&element);
               it.reset();
             }
             ThrowIfError(s);
             return ElementToPython(element);
           })
      .def("save",
           [](PyIterator& py) {
             std::shared_ptr<data::Iterator> it = py.get();
             data::IteratorState state;
             Status s;
             {
               nb::gil_scoped_release release;  // Save waits for the elements in flight
               s = it->Save(&state);
               it.reset();
             }
             ThrowIfError(s);
             std::string bytes = data::SerializeIteratorState(state);
             return nb::bytes(bytes.data(), bytes.size());
           })
      .def("restore",
           [](PyIterator& py, nb::bytes bytes) {
             std::shared_ptr<data::Iterator> it = py.get();
             data::IteratorState state =
                 ValueOrThrow(data::ParseIteratorState(std::string_view(bytes.c_str(), bytes.size())));
             Status s;
             {
               nb::gil_scoped_release release;
               s = it->Restore(state);
               it.reset();
             }
             ThrowIfError(s);
           },
           "state"_a)
      .def("autotune_summary", [](PyIterator& py) { return py.get()->AutotuneSummary(); })
      .def("gauges", [](PyIterator& py) { return py.get()->Gauges(); })
      .def("cancel", [](PyIterator& py) { py.get()->Cancel(); })
      .def("close", &PyIterator::Close, "Stops the pipeline and joins its threads; later calls fail.")
      .def_prop_ro("element_spec", [](PyIterator& py) { return SpecToPython(py.get()->element_spec()); });

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
        [](const Scope& scope, const Dataset& ds, const std::string& shared_name, bool initializable) {
          return Checked(scope, [&] {
            return data::MakeIterator(scope, ds, {.shared_name = shared_name, .initializable = initializable});
          });
        },
        "scope"_a, "dataset"_a, "shared_name"_a = "", "initializable"_a = false);
}

}  // namespace tw::python
