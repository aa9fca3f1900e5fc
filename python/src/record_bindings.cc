// Bindings of data/record_writer.h and data/record_reader.h: TFRecord files
// written and read from Python (tf.python_io's TFRecordWriter and
// tf_record_iterator). Writing and reading release the GIL.
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"

namespace tw::python {

using namespace nb::literals;

namespace {

// A record file being written; closed by close() or when collected.
struct PyRecordWriter {
  std::unique_ptr<RecordWriter> writer;
  std::string path;

  RecordWriter& get() {
    if (writer == nullptr) ThrowIfError(errors::FailedPrecondition("the TFRecordWriter of ", path, " is closed"));
    return *writer;
  }
};

// The records of one file, in order: __next__ gives bytes, StopIteration at
// the end, DataLossError naming the file and byte offset of a corrupt one.
struct PyRecordIterator {
  std::unique_ptr<RecordReader> reader;
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
             RecordWriter& writer = w.get();
             const std::string data(record.c_str(), record.size());
             Status s;
             {
               nb::gil_scoped_release release;
               s = writer.WriteRecord(data);
             }
             ThrowIfError(s);
           },
           "record"_a)
      .def("flush",
           [](PyRecordWriter& w) {
             RecordWriter& writer = w.get();
             Status s;
             {
               nb::gil_scoped_release release;
               s = writer.Flush();
             }
             ThrowIfError(s);
           })
      .def("close", [](PyRecordWriter& w) {
        if (w.writer == nullptr) return;
        std::unique_ptr<RecordWriter> writer = std::move(w.writer);
        Status s;
        {
          nb::gil_scoped_release release;
          s = writer->Close();
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
        if (it.reader == nullptr) throw nb::stop_iteration();
        std::string record;
        Status s;
        {
          nb::gil_scoped_release release;
          s = it.reader->ReadRecord(&record);
        }
        if (s.code() == Code::kOutOfRange) {
          it.reader.reset();
          throw nb::stop_iteration();
        }
        ThrowIfError(s);
        return nb::bytes(record.data(), record.size());
      });
}

}  // namespace tw::python
