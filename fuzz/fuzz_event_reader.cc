// fuzz_event_reader: the event-file reader (train/event_reader.h) on arbitrary
// bytes as an event file. It must give the events or DataLoss naming the file,
// never crash, hang or allocate beyond the input; the events it gives come in
// file order with strictly increasing offsets, each inside the input.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "towerflow/train/event_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto events = tw::train::ParseEventFile(bytes, "fuzz.tfevents");
  if (!events.ok()) {
    if (events.status().code() != tw::Code::kDataLoss ||
        events.status().message().find("fuzz.tfevents") == std::string::npos) {
      std::fprintf(stderr, "fuzz_event_reader: unexpected error %s\n", events.status().ToString().c_str());
      std::abort();
    }
    return 0;
  }
  uint64_t last = 0;
  for (size_t i = 0; i < events->size(); ++i) {
    const tw::train::EventRecord& e = (*events)[i];
    if (e.index != static_cast<int64_t>(i) || (i > 0 && e.offset <= last) || e.offset >= size) {
      std::fprintf(stderr, "fuzz_event_reader: event %zu has index %lld offset %llu\n", i,
                   static_cast<long long>(e.index), static_cast<unsigned long long>(e.offset));
      std::abort();
    }
    last = e.offset;
  }
  return 0;
}
