#include "towerflow/train/event_reader.h"

#include <limits>
#include <memory>
#include <string_view>

#include "towerflow/data/record_reader.h"

namespace tw::train {

namespace {

StatusOr<std::vector<EventRecord>> ReadEvents(RecordReader& reader, const std::string& name) {
  std::vector<EventRecord> events;
  for (;;) {
    const uint64_t offset = reader.offset();
    std::string_view record;
    Status s = reader.ReadRecordView(&record);
    if (errors::IsOutOfRange(s)) return events;
    TW_RETURN_IF_ERROR(s);
    EventRecord& e = events.emplace_back();
    e.index = static_cast<int64_t>(events.size()) - 1;
    e.offset = offset;
    // Protobuf takes an int size; a record past 2 GiB cannot be an Event.
    if (record.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !e.event.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
      return errors::DataLoss(name, ": record ", e.index, " at byte offset ", offset, " (", record.size(),
                              " bytes) is not an Event");
    }
  }
}

}  // namespace

StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path) {
  TW_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, RecordReader::Open(path));
  return ReadEvents(*reader, path);
}

StatusOr<std::vector<EventRecord>> ParseEventFile(std::string_view bytes, const std::string& name) {
  std::unique_ptr<RecordReader> reader = RecordReader::FromBytes(bytes, {}, name);
  return ReadEvents(*reader, name);
}

}  // namespace tw::train
