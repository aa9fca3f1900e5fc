// TraceRecorder: steps over two virtual CPU devices become a Chrome trace whose
// every node sits in its device's process, with the cross-device copy as a
// "transfer" event; spans, metadata names, relative times, and write errors.
#include "towerflow/runtime/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"
#include "towerflow/runtime/session_impl.h"

namespace tw {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

int64_t NowNs() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

// (pid, tid) of a trace event.
std::pair<int, int> Track(const Json& e) { return {e["pid"].get<int>(), e["tid"].get<int>()}; }

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "trace_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  Json WriteAndParse(const TraceRecorder& trace) {
    const std::string path = dir_ + "/trace.json";
    Status s = trace.Write(path);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::ifstream in(path);
    Json parsed = Json::parse(in, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << "not JSON: " << path;
    // Nothing but the trace is left behind (the temporary file was renamed).
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator{}), 1);
    return parsed;
  }

  std::string dir_;
};

TEST_F(TraceTest, StepsOverTwoDevicesShowEveryNodeOnItsDeviceAndTheTransfer) {
  Graph graph;
  Scope root(graph);
  auto x = Const(root.WithOpName("x").WithDevice("/cpu:0"), {1.f, 2.f, 3.f, 4.f}, TensorShape{2, 2});
  auto sq = Square(root.WithOpName("sq").WithDevice("/cpu:0"), x);
  auto mm = MatMul(root.WithOpName("mm").WithDevice("/cpu:1"), sq, sq);  // sq crosses to CPU:1
  auto z = Add(root.WithOpName("z").WithDevice("/cpu:1"), mm, mm);
  ASSERT_TRUE(root.ok()) << root.status().ToString();

  SessionOptions options;
  options.num_cpu_devices = 2;
  options.inter_op_threads = 2;
  Session session(graph, options);
  TraceRecorder trace;
  std::vector<StepStats> steps(2);
  for (int64_t step = 0; step < 2; ++step) {
    const int64_t start = NowNs();
    auto out = session.Run({}, {z}, {}, &steps[static_cast<size_t>(step)]);
    const int64_t end = NowNs();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{74, 136, 306, 584}));
    trace.AddStep(step, steps[static_cast<size_t>(step)], session);
    trace.AddSpan("step " + std::to_string(step), "step", start, end, "steps");
  }
  const int64_t now = NowNs();
  trace.AddSpan("queue wait", "input", now, now - 5, "input");  // reversed: zero duration

  const Placement& placement = session.impl().placement();
  const std::string cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  const std::string cpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
  ASSERT_EQ(placement.device_name(*sq.node), cpu0);
  ASSERT_EQ(placement.device_name(*mm.node), cpu1);
  int transfers = 0;
  for (const auto& t : steps[0].nodes) transfers += t.transfer ? 1 : 0;
  EXPECT_EQ(transfers, 1);  // one copy of sq:0, shared by both inputs of mm
  // sq, the transfer, mm, z: the constant x is made when the plan is built.
  ASSERT_EQ(steps[0].nodes.size(), 4u);

  Json trace_json = WriteAndParse(trace);
  ASSERT_TRUE(trace_json.is_object());
  EXPECT_EQ(trace_json["displayTimeUnit"], "ms");
  const Json& events = trace_json["traceEvents"];
  ASSERT_TRUE(events.is_array());

  std::map<std::string, int> pid_of;                 // process name -> pid
  std::map<std::pair<int, int>, std::string> thread;  // (pid, tid) -> name
  std::vector<Json> complete;
  for (const Json& e : events) {
    if (e["ph"] == "M" && e["name"] == "process_name") pid_of[e["args"]["name"].get<std::string>()] = e["pid"];
    if (e["ph"] == "M" && e["name"] == "thread_name") thread[Track(e)] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X") complete.push_back(e);
  }
  ASSERT_EQ(pid_of.size(), 3u);
  ASSERT_EQ(pid_of.count(cpu0), 1u);
  ASSERT_EQ(pid_of.count(cpu1), 1u);
  ASSERT_EQ(pid_of.count("towerflow"), 1u);
  EXPECT_LT(pid_of[cpu0], pid_of[cpu1]);
  ASSERT_EQ(complete.size(), 2 * 4 + 3u);

  double min_ts = 1e300;
  std::map<std::pair<std::string, int64_t>, const Json*> by_name_step;
  for (const Json& e : complete) {
    for (const char* key : {"name", "cat", "ts", "dur", "pid", "tid", "args"}) ASSERT_TRUE(e.contains(key)) << e;
    EXPECT_GE(e["dur"].get<double>(), 0) << e;
    EXPECT_GE(e["ts"].get<double>(), 0) << e;
    min_ts = std::min(min_ts, e["ts"].get<double>());
    EXPECT_EQ(thread.count(Track(e)), 1u) << "no thread_name for " << e;
    const int64_t step = e["args"].contains("step") ? e["args"]["step"].get<int64_t>() : -1;
    by_name_step[{e["name"].get<std::string>(), step}] = &e;
  }
  EXPECT_EQ(min_ts, 0);  // relative to the first event

  for (int64_t step = 0; step < 2; ++step) {
    for (const auto& t : steps[static_cast<size_t>(step)].nodes) {
      if (t.transfer) continue;
      auto it = by_name_step.find({t.node->name(), step});
      ASSERT_NE(it, by_name_step.end()) << t.node->name() << " step " << step;
      const Json& e = *it->second;
      const std::string device = placement.device_name(*t.node);
      EXPECT_EQ(e["pid"], pid_of[device]) << e;
      EXPECT_EQ(e["tid"], t.thread);
      EXPECT_EQ(e["cat"], "kernel");
      EXPECT_EQ(e["args"]["op"], t.node->op());
      EXPECT_EQ(e["args"]["device"], device);
      EXPECT_EQ(thread[Track(e)], "executor thread " + std::to_string(t.thread));
      EXPECT_NEAR(e["dur"].get<double>(), static_cast<double>(t.end_ns - t.start_ns) / 1e3, 1e-3);
    }
    auto transfer = by_name_step.find({"transfer sq:0", step});
    ASSERT_NE(transfer, by_name_step.end()) << "no transfer event in step " << step;
    const Json& e = *transfer->second;
    EXPECT_EQ(e["cat"], "transfer");
    EXPECT_EQ(e["pid"], pid_of[cpu1]);  // drawn on the receiving device
    EXPECT_EQ(e["args"]["from"], cpu0);
    EXPECT_EQ(e["args"]["to"], cpu1);
    EXPECT_EQ(e["args"]["tensor"], "sq:0");

    auto span = by_name_step.find({"step " + std::to_string(step), -1});
    ASSERT_NE(span, by_name_step.end());
    EXPECT_EQ((*span->second)["pid"], pid_of["towerflow"]);
    EXPECT_EQ((*span->second)["cat"], "step");
    EXPECT_EQ(thread[Track(*span->second)], "steps");
    // The step's span encloses its nodes.
    const double span_start = (*span->second)["ts"].get<double>();
    const double span_end = span_start + (*span->second)["dur"].get<double>();
    for (const auto& t : steps[static_cast<size_t>(step)].nodes) {
      const std::string name = t.transfer ? "transfer sq:0" : t.node->name();
      const Json& n = *by_name_step.at({name, step});
      EXPECT_GE(n["ts"].get<double>(), span_start - 1e-3) << n;
      EXPECT_LE(n["ts"].get<double>() + n["dur"].get<double>(), span_end + 1e-3) << n;
    }
  }
  const Json& wait = *by_name_step.at({"queue wait", -1});
  EXPECT_EQ(wait["dur"].get<double>(), 0);
  EXPECT_EQ(thread[Track(wait)], "input");
  EXPECT_NE(wait["tid"], (*by_name_step.at({"step 0", -1}))["tid"]);
}

TEST_F(TraceTest, SingleDevicePlansRecordNoTransfersAndKernelTimeExcludesNone) {
  Graph graph;
  Scope root(graph);
  auto x = Const(root.WithOpName("x"), {1.f, 2.f}, TensorShape{2});
  auto y = Square(root.WithOpName("y"), x);
  SessionOptions options;
  options.inter_op_threads = 1;  // every node on the calling thread
  Session session(graph, options);
  StepStats stats;
  ASSERT_TRUE(session.Run({}, {y}, {}, &stats).ok());
  ASSERT_EQ(stats.nodes.size(), 1u);  // y; the constant x is made when the plan is built
  int64_t sum = 0;
  for (const auto& t : stats.nodes) {
    EXPECT_FALSE(t.transfer);
    EXPECT_EQ(t.thread, stats.nodes[0].thread);  // one thread ran both
    EXPECT_NE(t.device, nullptr);
    sum += t.end_ns - t.start_ns;
  }
  EXPECT_EQ(stats.kernel_ns, sum);
}

TEST_F(TraceTest, WriteErrorsNameTheFile) {
  TraceRecorder trace;
  trace.AddSpan("s", "c", 1, 2, "t");
  EXPECT_EQ(trace.num_events(), 1);
  const std::string missing = dir_ + "/no/such/dir/trace.json";
  Status s = trace.Write(missing);
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr(dir_ + "/no/such/dir/trace.json"));
  s = trace.Write(dir_);  // a directory: refused before anything is written
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr(dir_ + " is a directory: towerflow replaces only regular files"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + ".tmp." + std::to_string(::getpid()))) << "temporary file left behind";
  // A device or a FIFO is never replaced (as root, a rename over /dev/zero
  // would put a regular file in its place): a link to /dev/null stands for it.
  const std::string device = dir_ + "/null_device";
  std::filesystem::create_symlink("/dev/null", device);
  s = trace.Write(device);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr(device + " is a character device"));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  EXPECT_TRUE(std::filesystem::is_symlink(device));
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  s = trace.Write(dir_ + "/fifo");
  EXPECT_THAT(s.message(), HasSubstr("/fifo is a FIFO")) << s.ToString();
  EXPECT_TRUE(std::filesystem::is_fifo(dir_ + "/fifo"));
}

}  // namespace
}  // namespace tw
