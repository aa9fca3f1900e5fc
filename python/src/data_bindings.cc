// Bindings of data/: queues, input producers, the TFRecord reader, Example
// parsing, decode_raw, batching, the coordinator and queue runner threads.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <thread>

#include "bindings.h"
#include "convert.h"

namespace tw::python {

using namespace nb::literals;

namespace {

// A reader and the scope it was built in, where its reads record errors.
struct Reader {
  Scope scope;
  io::TFRecordReader reader;
};

// Queue runner threads started for a session. They keep the session and the
// coordinator alive; destroying the group stops the coordinator and joins
// them, so no thread outlives the session it runs.
struct ThreadGroup {
  explicit ThreadGroup(train::Coordinator c) : coord(std::move(c)) {}
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  train::Coordinator coord;
  std::vector<std::thread> threads;

  ~ThreadGroup() {
    bool live = false;
    for (const std::thread& t : threads) live = live || t.joinable();
    if (!live) return;
    coord.RequestStop();
    nb::gil_scoped_release release;
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }
};

// features: [(key, "fixed" | "var", dtype, shape, default or None)].
io::FeatureMap FeaturesFromPython(nb::handle features) {
  io::FeatureMap map;
  for (nb::handle f : features) {
    std::string key = nb::cast<std::string>(f[0]);
    std::string kind = nb::cast<std::string>(f[1]);
    DataType dtype = DataTypeFromName(nb::cast<std::string>(f[2]));
    if (kind == "var") {
      map.emplace(key, io::VarLenFeature(dtype));
      continue;
    }
    std::vector<int64_t> dims;
    for (nb::handle d : f[3]) dims.push_back(nb::cast<int64_t>(d));
    TensorShape shape = ValueOrThrow(TensorShape::Make(dims));
    std::optional<Tensor> default_value;
    if (!f[4].is_none()) {
      Tensor t = TensorFromPython(f[4], dtype);
      if (t.NumElements() == shape.num_elements()) {
        default_value = ValueOrThrow(t.Reshaped(shape));
      } else if (t.NumElements() == 1) {
        // A scalar default fills the shape, as TF broadcasts it.
        Tensor filled(dtype, shape);
        ThrowIfError(DispatchAll(dtype, "default_value", [&]<typename T>() {
          for (T& v : filled.flat<T>()) v = t.flat<T>()[0];
          return Status::OK();
        }));
        default_value = filled;
      } else {
        throw StatusError(errors::InvalidArgument("default_value of feature '", key, "' has ", t.NumElements(),
                                                  " values for shape ", shape.ToString()));
      }
    }
    map.emplace(key, io::FixedLenFeature(dtype, shape, default_value));
  }
  return map;
}

nb::dict ParsedToPython(const io::ParsedFeatures& parsed) {
  nb::dict out;
  for (const auto& [key, f] : parsed.all()) {
    if (f.is_sparse()) {
      out[key.c_str()] = nb::make_tuple(f.sparse().indices, f.sparse().values, f.sparse().dense_shape);
    } else {
      out[key.c_str()] = static_cast<Output>(f);
    }
  }
  return out;
}

// ParseSingleExample or ParseExample, the features given as FeaturesFromPython
// takes them, the result as ParsedToPython gives it.
using ParseFn = io::ParsedFeatures (*)(const Scope&, const Output&, const io::FeatureMap&, const Output&);
nb::dict Parse(ParseFn parse, const Scope& scope, const Output& serialized, nb::handle features,
               const std::optional<Output>& names) {
  io::FeatureMap map = FeaturesFromPython(features);
  return ParsedToPython(Checked(scope, [&] { return parse(scope, serialized, map, names ? *names : Output()); }));
}

std::vector<TensorShape> ShapesFromPython(const std::optional<std::vector<std::vector<int64_t>>>& shapes) {
  std::vector<TensorShape> out;
  if (!shapes) return out;
  for (const auto& dims : *shapes) out.push_back(ValueOrThrow(TensorShape::Make(dims)));
  return out;
}

}  // namespace

void BindData(nb::module_& m) {
  nb::class_<io::Queue>(m, "Queue", "A FIFOQueue or RandomShuffleQueue of the graph (data/queue_ops.h).")
      .def_prop_ro("handle", &io::Queue::handle)
      .def_prop_ro("name", &io::Queue::name)
      .def_prop_ro("op", &io::Queue::op)
      .def_prop_ro("dtypes", [](const io::Queue& q) {
        std::vector<std::string> names;
        for (DataType t : q.dtypes()) names.push_back(DataTypeToName(t));
        return names;
      })
      .def("size", [](const io::Queue& q, const Scope& scope) { return Checked(scope, [&] { return q.Size(scope); }); })
      .def("close",
           [](const io::Queue& q, const Scope& scope, bool cancel) {
             return Checked(scope, [&] { return q.Close(scope, cancel); });
           },
           "scope"_a, "cancel_pending_enqueues"_a = false, nb::rv_policy::reference);

  m.def("string_input_producer",
        [](const Scope& scope, const std::vector<std::string>& strings, std::optional<int64_t> num_epochs,
           bool shuffle, int64_t seed, int64_t capacity, const std::string& shared_name) {
          train::InputProducerOptions o;
          o.num_epochs = num_epochs;
          o.shuffle = shuffle;
          o.seed = seed;
          o.capacity = capacity;
          o.shared_name = shared_name;
          return Checked(scope, [&] { return train::StringInputProducer(scope, strings, o); });
        },
        "scope"_a, "strings"_a, "num_epochs"_a = nb::none(), "shuffle"_a = true, "seed"_a = 0,
        "capacity"_a = 32, "shared_name"_a = "");

  nb::class_<Reader>(m, "TFRecordReader", "Reads records of the files a queue names (data/io_ops.h).")
      .def("__init__",
           [](Reader* self, const Scope& scope, const std::string& compression, bool skip_corrupt) {
             io::TFRecordReaderOptions o;
             if (compression != "AUTO") o.compression = ValueOrThrow(ParseCompression(compression));
             o.skip_corrupt = skip_corrupt;
             Checked(scope, [&] {
               new (self) Reader{scope, io::TFRecordReader(scope, o)};
               return 0;
             });
           },
           "scope"_a, "compression"_a = "AUTO", "skip_corrupt"_a = false)
      .def("read",
           [](const Reader& r, const Output& queue) {
             auto out = Checked(r.scope, [&] { return r.reader.Read(queue); });
             return std::make_pair(out.key, out.value);
           },
           "queue_handle"_a)
      .def("read_up_to",
           [](const Reader& r, const Output& queue, int64_t n) {
             auto out = Checked(r.scope, [&] { return r.reader.ReadUpTo(queue, n); });
             return std::make_pair(out.key, out.value);
           },
           "queue_handle"_a, "num_records"_a);

  m.def("parse_single_example",
        [](const Scope& scope, const Output& serialized, nb::handle features, std::optional<Output> name) {
          return Parse(&io::ParseSingleExample, scope, serialized, features, name);
        },
        "scope"_a, "serialized"_a, "features"_a, "name"_a = nb::none());
  m.def("parse_example",
        [](const Scope& scope, const Output& serialized, nb::handle features, std::optional<Output> names) {
          return Parse(&io::ParseExample, scope, serialized, features, names);
        },
        "scope"_a, "serialized"_a, "features"_a, "names"_a = nb::none());
  m.def("decode_raw",
        [](const Scope& scope, const Output& bytes, const std::string& dtype, bool little_endian) {
          DataType dt = DataTypeFromName(dtype);
          return Checked(scope, [&] { return io::DecodeRaw(scope, bytes, dt, little_endian); });
        },
        "scope"_a, "bytes"_a, "out_type"_a, "little_endian"_a = true);

  // batch / shuffle_batch and their _join forms: the lists of tensors in,
  // the dequeued batch out.
  m.def("batch",
        [](const Scope& scope, const std::vector<std::vector<Output>>& lists, int64_t batch_size, int num_threads,
           int64_t capacity, bool enqueue_many, std::optional<std::vector<std::vector<int64_t>>> shapes,
           bool allow_smaller_final_batch, const std::string& shared_name, bool join) {
          train::BatchOptions o;
          o.batch_size = batch_size;
          o.num_threads = num_threads;
          o.capacity = capacity;
          o.enqueue_many = enqueue_many;
          o.shapes = ShapesFromPython(shapes);
          o.allow_smaller_final_batch = allow_smaller_final_batch;
          o.shared_name = shared_name;
          return Checked(scope, [&] {
            return join ? train::BatchJoin(scope, lists, o) : train::Batch(scope, lists.at(0), o);
          });
        },
        "scope"_a, "tensor_lists"_a, "batch_size"_a, "num_threads"_a = 1, "capacity"_a = 32,
        "enqueue_many"_a = false, "shapes"_a = nb::none(), "allow_smaller_final_batch"_a = false,
        "shared_name"_a = "", "join"_a = false);
  m.def("shuffle_batch",
        [](const Scope& scope, const std::vector<std::vector<Output>>& lists, int64_t batch_size, int64_t capacity,
           int64_t min_after_dequeue, int num_threads, int64_t seed, bool enqueue_many,
           std::optional<std::vector<std::vector<int64_t>>> shapes, bool allow_smaller_final_batch,
           const std::string& shared_name, bool join) {
          train::ShuffleBatchOptions o;
          o.batch_size = batch_size;
          o.capacity = capacity;
          o.min_after_dequeue = min_after_dequeue;
          o.num_threads = num_threads;
          o.seed = seed;
          o.enqueue_many = enqueue_many;
          o.shapes = ShapesFromPython(shapes);
          o.allow_smaller_final_batch = allow_smaller_final_batch;
          o.shared_name = shared_name;
          return Checked(scope, [&] {
            return join ? train::ShuffleBatchJoin(scope, lists, o) : train::ShuffleBatch(scope, lists.at(0), o);
          });
        },
        "scope"_a, "tensor_lists"_a, "batch_size"_a, "capacity"_a, "min_after_dequeue"_a, "num_threads"_a = 1,
        "seed"_a = 0, "enqueue_many"_a = false, "shapes"_a = nb::none(), "allow_smaller_final_batch"_a = false,
        "shared_name"_a = "", "join"_a = false);

  nb::class_<train::Coordinator>(m, "Coordinator", "Stops a set of threads together (data/coordinator.h).")
      .def(nb::init<>())
      .def("request_stop",
           [](train::Coordinator& c, int code, const std::string& message) {
             c.RequestStop(code == 0 ? Status::OK() : Status(static_cast<Code>(code), message));
           },
           "code"_a = 0, "message"_a = "")
      .def("should_stop", &train::Coordinator::ShouldStop)
      .def("clear_stop", &train::Coordinator::ClearStop)
      .def("wait_for_stop",
           [](const train::Coordinator& c, std::optional<double> timeout_s) {
             nb::gil_scoped_release release;
             if (!timeout_s) {
               c.WaitForStop();
               return true;
             }
             return c.WaitForStop(std::chrono::milliseconds(static_cast<int64_t>(*timeout_s * 1000)));
           },
           "timeout_s"_a = nb::none())
      .def("join",
           [](train::Coordinator& c, std::vector<ThreadGroup*> groups, double grace_s, bool ignore_live_threads) {
             std::vector<std::thread> threads;
             for (ThreadGroup* g : groups) {
               for (std::thread& t : g->threads) threads.push_back(std::move(t));
               g->threads.clear();
             }
             Status s;
             {
               nb::gil_scoped_release release;
               // Joins the threads (detaches stragglers past the grace period).
               s = c.Join(threads, std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000)),
                          ignore_live_threads);
             }
             ThrowIfError(s);
           },
           "groups"_a, "stop_grace_period_s"_a = 120.0, "ignore_live_threads"_a = false);

  nb::class_<ThreadGroup>(m, "ThreadGroup", "Queue runner threads started for one session.")
      .def("__len__", [](const ThreadGroup& g) { return g.threads.size(); })
      .def("alive", [](const ThreadGroup& g) {
        size_t n = 0;
        for (const std::thread& t : g.threads) n += t.joinable() ? 1 : 0;
        return n;
      });
  m.def("start_queue_runners",
        [](Session& session, train::Coordinator& coord) {
          auto* group = new ThreadGroup(coord);
          group->threads = train::StartQueueRunners(session, coord);
          return group;
        },
        "session"_a, "coord"_a, nb::rv_policy::take_ownership, nb::keep_alive<0, 1>());
}

}  // namespace tw::python
