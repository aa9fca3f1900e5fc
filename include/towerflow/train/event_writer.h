// EventFileWriter: writes a TensorBoard event file, as TF's EventsWriter and
// tf.summary.FileWriter do, so that TensorBoard (and
// tf.compat.v1.train.summary_iterator) read it: scalar summaries and the graph.
//
// An event file is `<logdir>/events.out.tfevents.<10-digit unix seconds>.
// <hostname><suffix>`, a TFRecord file (data/record_writer.h: length, masked
// CRC32C, data, masked CRC32C) of serialized tensorflow.Event messages
// (train/proto/event.proto, TF's field numbers). The first Event holds
// file_version "brain.Event:2". Do not change: on-disk format (docs/formats.md).
//
// Events are buffered until Flush() or Close() hands them to the operating
// system (no fsync), as TF's writers do. The writer owns its file; every method
// is thread-safe (one mutex), so a training loop and a monitor thread may
// share it. After a write error every later call returns that error; every
// error names the file. The destructor closes the file, ignoring errors: call
// Close() to see them.
#ifndef TOWERFLOW_TRAIN_EVENT_WRITER_H_
#define TOWERFLOW_TRAIN_EVENT_WRITER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/graph/graph.h"

namespace tw::train {

// The file_version of the first Event of every file (TF's kVersionPrefix + 2).
inline constexpr char kEventFileVersion[] = "brain.Event:2";

class EventFileWriter {
 public:
  // Creates `logdir` (and its parents) if needed and the event file in it, and
  // writes and flushes the file_version Event. PermissionDenied / NotFound /
  // InvalidArgument (logdir is a file) ... naming the directory or file when
  // either cannot be made; AlreadyExists naming the file when a writer made one
  // of the same name (same logdir, second, host and suffix): pass a suffix to
  // tell such writers apart.
  static StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& logdir,
                                                           const std::string& suffix = "");
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One Event at `step` holding Summary.Value {tag, simple_value} (a float, as
  // in TF), wall_time now. FailedPrecondition after Close; the write error.
  [[nodiscard]] Status AddScalar(const std::string& tag, double value, int64_t step);
  // As AddScalar, with every (tag, value) in one Event.
  [[nodiscard]] Status AddScalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);

  // One Event at `step` holding `summary`, a serialized tensorflow.Summary
  // (any of its values: scalars, histograms), wall_time now. InvalidArgument
  // when the bytes are not a Summary; otherwise as AddScalar.
  [[nodiscard]] Status AddSummary(int64_t step, const std::string& summary);

  // One Event holding the graph as a serialized GraphDef, each node with its
  // name, op, inputs as TF writes them ("x" for output 0, "x:1", then control
  // inputs "^x"), device, and attrs: every towerflow attr converted (a tensor as
  // a TensorProto), colocation groups as "_class" and the inferred output
  // shapes as "_output_shapes" (TF1's add_graph does both). The device is the
  // one `assigned_devices` names for the node (node name -> full device name,
  // e.g. from Session::placement(), so TensorBoard colours nodes by where they
  // ran), else the requested one. Errors as AddScalar.
  // REQUIRES: no other thread adds nodes to `graph` meanwhile.
  [[nodiscard]] Status AddGraph(const Graph& graph,
                                const std::map<std::string, std::string>& assigned_devices = {});

  // Hands the buffered events to the operating system (not fsync).
  [[nodiscard]] Status Flush();
  // Flushes and closes the file. A second call returns the first one's result.
  [[nodiscard]] Status Close();

  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, std::unique_ptr<RecordWriter> writer);

  const std::string path_;
  std::mutex mu_;
  std::unique_ptr<RecordWriter> writer_;  // guarded by mu_
};

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_EVENT_WRITER_H_
