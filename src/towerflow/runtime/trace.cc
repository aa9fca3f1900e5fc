#include "towerflow/runtime/trace.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "towerflow/core/file_checks.h"
#include "towerflow/device/device.h"
#include "towerflow/graph/graph.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

constexpr char kSpanProcess[] = "towerflow";
constexpr char kUnplaced[] = "unplaced";

// REQUIRES: t.node != nullptr.
std::string DeviceName(const StepStats::NodeTiming& t, const Placement& placement) {
  if (t.device != nullptr) return t.device->name();
  std::string name = placement.device_name(*t.node);
  return name.empty() ? kUnplaced : name;
}

}  // namespace

int TraceRecorder::ProcessLocked(const std::string& name) {
  auto [it, inserted] = pids_.emplace(name, static_cast<int>(pids_.size()) + 1);
  return it->second;
}

void TraceRecorder::AddStep(int64_t step, const StepStats& stats, const Session& session) {
  const Placement& placement = session.impl().placement();
  std::lock_guard<std::mutex> lock(mu_);
  // New devices get pids in name order (CPU:0 before CPU:1 before GPU:0), so
  // the viewer lists them in that order whichever ran first.
  std::set<std::string> devices;
  for (const auto& t : stats.nodes) {
    if (t.node != nullptr) devices.insert(DeviceName(t, placement));
  }
  for (const std::string& d : devices) ProcessLocked(d);
  for (const auto& t : stats.nodes) {
    if (t.node == nullptr) continue;
    Event e;
    const std::string device = DeviceName(t, placement);
    e.pid = ProcessLocked(device);
    e.tid = t.thread;
    e.start_ns = t.start_ns;
    e.end_ns = t.end_ns;
    e.step = step;
    if (t.transfer) {
      const std::string tensor = StrCat(t.node->name(), ":", t.output);
      e.name = "transfer " + tensor;
      e.category = "transfer";
      e.args = {{"op", "transfer"},
                {"tensor", tensor},
                {"from", t.transfer_from ? t.transfer_from->name() : std::string(kUnplaced)},
                {"to", device},
                {"device", device}};
    } else {
      e.name = t.node->name();
      e.category = "kernel";
      e.args = {{"op", t.node->op()}, {"device", device}};
      if (!t.fused.empty()) {  // runtime/fusion.h: one kernel ran these nodes, the deepest first
        std::string ops, names;
        for (const Node* n : t.fused) {
          ops += n->op() + "+";
          names += (names.empty() ? "" : ",") + n->name();
        }
        e.args[0].second = ops + t.node->op();
        e.args.push_back({"fused", names});
      }
    }
    threads_.emplace(std::make_pair(e.pid, e.tid), StrCat("executor thread ", e.tid));
    events_.push_back(std::move(e));
  }
}

void TraceRecorder::AddSpan(const std::string& name, const std::string& category, int64_t start_ns,
                            int64_t end_ns, const std::string& track) {
  std::lock_guard<std::mutex> lock(mu_);
  Event e;
  e.name = name;
  e.category = category;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.pid = ProcessLocked(kSpanProcess);
  e.tid = track_tids_.emplace(track, static_cast<int>(track_tids_.size())).first->second;
  threads_.emplace(std::make_pair(e.pid, e.tid), track);
  events_.push_back(std::move(e));
}

int TraceRecorder::num_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(events_.size());
}

int64_t TraceRecorder::earliest_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const Event& e : events_) base = std::min(base, e.start_ns);
  return base;
}

std::string TraceRecorder::EventsJson(int pid_offset, const std::string& process_prefix, int64_t base_ns) const {
  using Json = nlohmann::json;
  std::string out;
  auto add = [&](const Json& event) {
    if (!out.empty()) out += ",";
    // Names are bytes; invalid UTF-8 becomes U+FFFD rather than an exception.
    out += event.dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, pid] : pids_) {
    add({{"name", "process_name"}, {"ph", "M"}, {"pid", pid + pid_offset}, {"tid", 0},
         {"args", {{"name", process_prefix + name}}}});
    add({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid + pid_offset}, {"tid", 0},
         {"args", {{"sort_index", pid + pid_offset}}}});
  }
  for (const auto& [key, name] : threads_) {
    add({{"name", "thread_name"}, {"ph", "M"}, {"pid", key.first + pid_offset}, {"tid", key.second},
         {"args", {{"name", name}}}});
  }
  for (const Event& e : events_) {
    // Microseconds with the nanoseconds kept as the fraction.
    Json event = {{"name", e.name},
                  {"cat", e.category},
                  {"ph", "X"},
                  {"ts", static_cast<double>(e.start_ns - base_ns) / 1e3},
                  {"dur", static_cast<double>(std::max<int64_t>(e.end_ns - e.start_ns, 0)) / 1e3},
                  {"pid", e.pid + pid_offset},
                  {"tid", e.tid}};
    Json args = Json::object();
    for (const auto& [key, value] : e.args) args[key] = value;
    if (e.step >= 0) args["step"] = e.step;
    event["args"] = std::move(args);
    add(event);
  }
  return out;
}

Status TraceRecorder::Write(const std::string& path) const {
  return WriteEvents(path, {EventsJson(0, "", earliest_ns())});
}

Status TraceRecorder::WriteEvents(const std::string& path, const std::vector<std::string>& parts) {
  std::string text = "{\"traceEvents\": [";
  bool first = true;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!first) text += ",";
    text += part;
    first = false;
  }
  text += "], \"displayTimeUnit\": \"ms\"}";

  // The rename must never put the trace in the place of a device or a FIFO.
  TW_RETURN_IF_ERROR(CheckReplaceableFile(path));
  const std::string tmp = StrCat(path, ".tmp.", static_cast<int64_t>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return FileError(tmp, "cannot open for writing", errno);
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_err = errno;
  if (std::fclose(f) != 0 || !wrote) {
    const int err = wrote ? errno : write_err;
    std::remove(tmp.c_str());
    return FileError(tmp, "write", err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return FileError(path, StrCat("cannot rename ", tmp, " to it"), err);
  }
  return Status::OK();
}

}  // namespace tw
