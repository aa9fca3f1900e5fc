// Bindings of data/record_writer.h and data/record_reader.h: TFRecord files
// written and read from Python (tf.python_io's TFRecordWriter and
// tf_record_iterator). Writing and reading release the GIL.
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <mutex>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"

namespace tw::python {

using namespace nb::literals;

namespace {

// A record file being written; closed by close() or when collected. Calls
// release the GIL: `mu` serializes them (a close on another thread waits for
// a write in progress).
struct PyRecordWriter {
  std::unique_ptr<RecordWriter> writer;
  std::string path;
  std::mutex mu;

  // Runs `f` on the open writer without the GIL; FailedPrecondition once closed.
  template <typename F>
  void WithWriter(F&& f) {
    Status s;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu);
      s = writer == nullptr ? errors::FailedPrecondition("the TFRecordWriter of ", path, " is closed") : f(*writer);
    }
    ThrowIfError(s);
  }
};

// The records of one file, in order: __next__ gives bytes, StopIteration at
// the end, DataLossError naming the file and byte offset of a corrupt one.
struct PyRecordIterator {
  std::unique_ptr<RecordReader> reader;
  std::mutex mu;  // one __next__ at a time (the GIL is released while reading)
};

}  // namespace

void BindRecords(nb::module_& m) {
  nb::class_<PyRecordWriter>(m, "RecordWriter", "Writes a TFRecord file (data/record_writer.h).")
      .def("__init__",
           [](PyRecordWriter* self, const std::string& path, const std::string& compression) {
             RecordWriterOptions o;
             o.compression = ValueOrThrow(ParseCompression(compression));
             new (self) PyRecordWriter{ValueOrThrow(RecordWriter::Open(path, o)), path};
           },
           "path"_a, "compression"_a = "")
      .def("write",
           [](PyRecordWriter& w, nb::bytes record) {
             const std::string data(record.c_str(), record.size());
             w.WithWriter([&](RecordWriter& writer) { return writer.WriteRecord(data); });
           },
           "record"_a)
      .def("flush", [](PyRecordWriter& w) { w.WithWriter([](RecordWriter& writer) { return writer.Flush(); }); })
      .def("close", [](PyRecordWriter& w) {
        Status s;
        {
          nb::gil_scoped_release release;
          std::lock_guard<std::mutex> lock(w.mu);
          if (w.writer != nullptr) {
            s = w.writer->Close();
            w.writer.reset();
          }
        }
        ThrowIfError(s);
      });

  nb::class_<PyRecordIterator>(m, "RecordIterator", "The records of a TFRecord file (data/record_reader.h).")
      .def("__init__",
           [](PyRecordIterator* self, const std::string& path, const std::string& compression) {
             RecordReaderOptions o;
             if (compression == "AUTO") {
               o.detect_compression = true;
             } else {
               o.compression = ValueOrThrow(ParseCompression(compression));
             }
             new (self) PyRecordIterator{ValueOrThrow(RecordReader::Open(path, o))};
           },
           "path"_a, "compression"_a = "AUTO")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", [](PyRecordIterator& it) {
        std::string record;
        Status s;
        bool ended = false;
        {
          nb::gil_scoped_release release;
          std::lock_guard<std::mutex> lock(it.mu);
          if (it.reader == nullptr) {
            ended = true;
          } else {
            s = it.reader->ReadRecord(&record);
            if (s.code() == Code::kOutOfRange) {
              it.reader.reset();
              ended = true;
            }
          }
        }
        if (ended) throw nb::stop_iteration();
        ThrowIfError(s);
        return nb::bytes(record.data(), record.size());
      });
}

}  // namespace tw::python
