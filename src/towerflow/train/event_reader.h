// Reading event files (train/event_writer.h; TF's and TensorBoard's too): every
// record of a TFRecord file parsed as a tensorflow.Event with libprotobuf. For
// tests and `towerflow` tools; TensorBoard itself is the reader users run.
//
// Stateless functions, thread-safe. Errors:
//   NotFound / PermissionDenied / ...   the file cannot be opened (named)
//   DataLoss "<file>: truncated record at N" / "corrupted record at N"
//                                       from the record reader (N: byte offset)
//   DataLoss "<file>: record I at byte offset N is not an Event"
#ifndef TOWERFLOW_TRAIN_EVENT_READER_H_
#define TOWERFLOW_TRAIN_EVENT_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "event.pb.h"
#include "towerflow/core/status.h"

namespace tw::train {

struct EventRecord {
  int64_t index = 0;    // the record's position in the file, from 0
  uint64_t offset = 0;  // byte offset of its TFRecord header
  tensorflow::Event event;
};

// Every event of `path`, in file order; the first error otherwise (above).
StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path);
// The same on the bytes of an event file held in memory, named `name` in errors.
StatusOr<std::vector<EventRecord>> ParseEventFile(std::string_view bytes, const std::string& name);

}  // namespace tw::train

#endif  // TOWERFLOW_TRAIN_EVENT_READER_H_
