// EventFileWriter and ReadEventFile: scalars and graphs round-trip through a
// real file, TF's file name, NodeDef input names ("x", "x:1", "^x"), converted
// attrs, concurrent writers, and the errors of writer and reader.
#include "towerflow/train/event_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "graph.pb.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/graph/scope.h"
#include "towerflow/train/event_reader.h"

namespace tw::train {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EventWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "event_writer_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::unique_ptr<EventFileWriter> MakeWriter(const std::string& logdir, const std::string& suffix = "") {
    auto w = EventFileWriter::Create(logdir, suffix);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(w).value() : nullptr;
  }

  std::vector<EventRecord> Read(const std::string& path) {
    auto events = ReadEventFile(path);
    EXPECT_TRUE(events.ok()) << events.status().ToString();
    return events.ok() ? std::move(events).value() : std::vector<EventRecord>{};
  }

  std::string dir_;
};

std::string Hostname() {
  char name[1024] = {};
  EXPECT_EQ(gethostname(name, sizeof(name) - 1), 0);
  return name;
}

// A serialized Summary written as it is: a histogram and a scalar in one
// Event; bytes that are not a Summary are refused and write nothing.
TEST_F(EventWriterTest, SerializedSummariesRoundTrip) {
  auto writer = MakeWriter(dir_ + "/histo");
  ASSERT_NE(writer, nullptr);
  tensorflow::Summary summary;
  tensorflow::Summary::Value* h = summary.add_value();
  h->set_tag("weights");
  tensorflow::HistogramProto* histo = h->mutable_histo();
  histo->set_min(-1);
  histo->set_max(2);
  histo->set_num(3);
  histo->add_bucket_limit(0.5);
  histo->add_bucket(2);
  tensorflow::Summary::Value* v = summary.add_value();
  v->set_tag("loss");
  v->set_simple_value(0.25f);
  ASSERT_TRUE(writer->AddSummary(5, summary.SerializeAsString()).ok());
  Status bad = writer->AddSummary(6, std::string("\xff\xff\xff", 3));
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  ASSERT_TRUE(writer->Close().ok());
  std::vector<EventRecord> events = Read(writer->path());
  ASSERT_EQ(events.size(), 2u);
  const auto& e = events[1].event;
  EXPECT_EQ(e.step(), 5);
  ASSERT_EQ(e.summary().value_size(), 2);
  EXPECT_EQ(e.summary().value(0).tag(), "weights");
  EXPECT_EQ(e.summary().value(0).histo().num(), 3);
  EXPECT_EQ(e.summary().value(0).histo().bucket(0), 2);
  EXPECT_EQ(e.summary().value(1).simple_value(), 0.25f);
}

TEST_F(EventWriterTest, ScalarsRoundTripAfterTheFileVersion) {
  const std::string logdir = dir_ + "/a/b/run1";  // made recursively
  const double before = static_cast<double>(std::time(nullptr)) - 60;  // see `after`
  auto writer = MakeWriter(logdir);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->AddScalar("loss", 2.5, 0).ok());
  ASSERT_TRUE(writer->AddScalars(7, {{"loss", 0.1}, {"accuracy", 0.75}}).ok());
  ASSERT_TRUE(writer->AddScalar("big/step", -3.0, int64_t{1} << 40).ok());
  ASSERT_TRUE(writer->Close().ok());
  // Wall times, read with another clock than the writer's (time() may be the
  // kernel's coarse clock, system_clock the precise one): a minute's margin.
  const double after = static_cast<double>(std::time(nullptr)) + 60;

  // TF's name: events.out.tfevents.<10-digit seconds>.<hostname><suffix>.
  std::vector<fs::path> files(fs::directory_iterator(logdir), fs::directory_iterator{});
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].string(), writer->path());
  std::smatch m;
  const std::string name = files[0].filename().string();
  ASSERT_TRUE(std::regex_match(name, m, std::regex(R"(events\.out\.tfevents\.(\d{10})\.(.*))"))) << name;
  EXPECT_GE(std::stod(m[1].str()), before);
  EXPECT_LE(std::stod(m[1].str()), after);
  EXPECT_EQ(m[2].str(), Hostname());

  std::vector<EventRecord> events = Read(writer->path());
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].event.file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].offset, 0u);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].index, static_cast<int64_t>(i));
    EXPECT_GE(events[i].event.wall_time(), before);
    EXPECT_LE(events[i].event.wall_time(), after);
    if (i > 0) {
      EXPECT_GE(events[i].event.wall_time(), events[i - 1].event.wall_time());
      EXPECT_GT(events[i].offset, events[i - 1].offset);
    }
  }
  const auto& s1 = events[1].event;
  EXPECT_EQ(s1.step(), 0);
  ASSERT_TRUE(s1.has_summary());
  ASSERT_EQ(s1.summary().value_size(), 1);
  EXPECT_EQ(s1.summary().value(0).tag(), "loss");
  EXPECT_EQ(s1.summary().value(0).simple_value(), 2.5f);

  const auto& s2 = events[2].event;
  EXPECT_EQ(s2.step(), 7);
  ASSERT_EQ(s2.summary().value_size(), 2);
  EXPECT_EQ(s2.summary().value(0).tag(), "loss");
  EXPECT_EQ(s2.summary().value(0).simple_value(), 0.1f);  // float precision, as TF
  EXPECT_EQ(s2.summary().value(1).tag(), "accuracy");
  EXPECT_EQ(s2.summary().value(1).simple_value(), 0.75f);

  EXPECT_EQ(events[3].event.step(), int64_t{1} << 40);
  EXPECT_EQ(events[3].event.summary().value(0).simple_value(), -3.0f);
}

TEST_F(EventWriterTest, SuffixEndsTheNameAndWritersNeverShareAFile) {
  auto a = MakeWriter(dir_, ".worker_a");
  auto b = MakeWriter(dir_, ".worker_b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(a->path(), ::testing::EndsWith("." + Hostname() + ".worker_a"));
  EXPECT_NE(a->path(), b->path());

  // A file of the name this second (or the next two) would get already exists:
  // the writer refuses instead of truncating it.
  const long long now = std::time(nullptr);
  for (long long t = now; t < now + 3; ++t) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%010lld", t);
    std::ofstream(dir_ + "/events.out.tfevents." + seconds + "." + Hostname() + ".x") << "keep";
  }
  auto c = EventFileWriter::Create(dir_, ".x");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kAlreadyExists) << c.status().ToString();
  EXPECT_THAT(c.status().message(), HasSubstr(dir_ + "/events.out.tfevents."));
  EXPECT_THAT(c.status().message(), HasSubstr("suffix"));
}

TEST_F(EventWriterTest, GraphKeepsInputNamesDevicesAndAttrs) {
  Graph graph;
  Scope root(graph);
  auto logits = Placeholder(root.WithOpName("logits"), kFloat32, PartialShape{-1, 3});
  auto labels = Const(root.WithOpName("labels"), {0.f, 1.f, 0.f, 1.f, 0.f, 0.f}, TensorShape{2, 3});
  auto xent = SoftmaxCrossEntropyWithLogits(root.WithOpName("xent").WithDevice("/cpu:0"), logits, labels);
  auto grad = Identity(root.WithOpName("grad"), xent.backprop);  // output 1 of a two-output op
  auto loss = Mean(root.WithOpName("loss"), xent.loss, {0});
  auto after = Identity(root.WithOpName("after").WithControlDependencies({grad, loss}), loss);
  ASSERT_TRUE(root.ok()) << root.status().ToString();

  auto writer = MakeWriter(dir_);
  ASSERT_NE(writer, nullptr);
  const std::string assigned = "/job:localhost/replica:0/task:0/device:CPU:0";
  ASSERT_TRUE(writer->AddGraph(graph, {{"grad", assigned}}).ok());
  ASSERT_TRUE(writer->Close().ok());

  std::vector<EventRecord> events = Read(writer->path());
  ASSERT_EQ(events.size(), 2u);
  ASSERT_TRUE(events[1].event.has_graph_def());
  tensorflow::GraphDef def;
  ASSERT_TRUE(def.ParseFromString(events[1].event.graph_def()));
  ASSERT_EQ(def.node_size(), graph.num_nodes());
  std::map<std::string, const tensorflow::NodeDef*> by_name;
  for (int i = 0; i < def.node_size(); ++i) {
    EXPECT_EQ(def.node(i).name(), graph.node(i)->name());
    EXPECT_EQ(def.node(i).op(), graph.node(i)->op());
    by_name[def.node(i).name()] = &def.node(i);
  }
  std::vector<std::string> names;
  for (const auto& [name, node] : by_name) names.push_back(name);
  std::vector<std::string> want_names;
  for (int i = 0; i < graph.num_nodes(); ++i) want_names.push_back(graph.node(i)->name());
  std::sort(want_names.begin(), want_names.end());
  EXPECT_EQ(names, want_names);

  const tensorflow::NodeDef& x = *by_name.at(xent.loss.node->name());
  EXPECT_EQ(x.op(), "SoftmaxCrossEntropyWithLogits");
  EXPECT_THAT(x.input(), ElementsAre("logits", "labels"));
  EXPECT_EQ(x.device(), xent.loss.node->requested_device());
  EXPECT_FALSE(x.device().empty());
  EXPECT_EQ(x.attr().at("T").type(), tensorflow::DT_FLOAT);
  const auto& shapes = x.attr().at("_output_shapes").list().shape();
  ASSERT_EQ(shapes.size(), 2);
  ASSERT_EQ(shapes[0].dim_size(), 1);  // loss [2]
  EXPECT_EQ(shapes[0].dim(0).size(), 2);
  ASSERT_EQ(shapes[1].dim_size(), 2);  // backprop [2, 3]: the labels fix the batch
  EXPECT_EQ(shapes[1].dim(0).size(), 2);
  EXPECT_EQ(shapes[1].dim(1).size(), 3);
  const auto& p_shapes = by_name.at("logits")->attr().at("_output_shapes").list().shape();
  ASSERT_EQ(p_shapes.size(), 1);
  ASSERT_EQ(p_shapes[0].dim_size(), 2);
  EXPECT_EQ(p_shapes[0].dim(0).size(), -1);  // [?, 3]

  const tensorflow::NodeDef& g = *by_name.at("grad");
  EXPECT_THAT(g.input(), ElementsAre(xent.loss.node->name() + ":1"));
  EXPECT_EQ(g.device(), assigned);  // the assigned device wins
  const tensorflow::NodeDef& l = *by_name.at("loss");
  ASSERT_EQ(l.input_size(), 2);  // the value and its reduction axes
  EXPECT_EQ(l.input(0), xent.loss.node->name());
  ASSERT_EQ(by_name.count(l.input(1)), 1u) << l.input(1);
  EXPECT_EQ(by_name.at(l.input(1))->op(), "Const");
  EXPECT_THAT(by_name.at(after.node->name())->input(), ElementsAre("loss", "^grad", "^loss"));
  EXPECT_TRUE(by_name.at(after.node->name())->device().empty());

  const tensorflow::NodeDef& p = *by_name.at("logits");
  EXPECT_TRUE(p.input().empty());
  EXPECT_EQ(p.attr().at("dtype").type(), tensorflow::DT_FLOAT);
  ASSERT_EQ(p.attr().at("shape").shape().dim_size(), 2);
  EXPECT_FALSE(p.attr().at("shape").shape().unknown_rank());
  EXPECT_EQ(p.attr().at("shape").shape().dim(0).size(), -1);

  const tensorflow::TensorProto& value = by_name.at("labels")->attr().at("value").tensor();
  EXPECT_EQ(value.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(value.tensor_shape().dim_size(), 2);
  EXPECT_EQ(value.tensor_shape().dim(1).size(), 3);
  const float want[] = {0.f, 1.f, 0.f, 1.f, 0.f, 0.f};
  ASSERT_EQ(value.tensor_content().size(), sizeof(want));
  EXPECT_EQ(std::memcmp(value.tensor_content().data(), want, sizeof(want)), 0);
}

TEST_F(EventWriterTest, ConcurrentWritersLoseNoEvent) {
  auto writer = MakeWriter(dir_);
  ASSERT_NE(writer, nullptr);
  constexpr int kThreads = 4, kEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_TRUE(writer->AddScalar("t" + std::to_string(t), i, i).ok());
        if (i % 50 == 0) {
          EXPECT_TRUE(writer->Flush().ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(writer->Close().ok());
  std::vector<EventRecord> events = Read(writer->path());
  ASSERT_EQ(events.size(), 1u + kThreads * kEach);
  std::map<std::string, int> next_step;  // each thread's events stay in its order
  for (size_t i = 1; i < events.size(); ++i) {
    const auto& v = events[i].event.summary().value(0);
    EXPECT_EQ(events[i].event.step(), next_step[v.tag()]++);
    EXPECT_EQ(v.simple_value(), static_cast<float>(events[i].event.step()));
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next_step["t" + std::to_string(t)], kEach);
}

TEST_F(EventWriterTest, UnusableLogdirIsAnErrorNamingIt) {
  const std::string file = dir_ + "/plain_file";
  std::ofstream(file) << "x";
  auto under_file = EventFileWriter::Create(file + "/logs");
  ASSERT_FALSE(under_file.ok());
  EXPECT_EQ(under_file.status().code(), Code::kInvalidArgument) << under_file.status().ToString();
  EXPECT_THAT(under_file.status().message(), HasSubstr(file + "/logs"));

  auto is_file = EventFileWriter::Create(file);
  ASSERT_FALSE(is_file.ok());
  EXPECT_EQ(is_file.status().code(), Code::kInvalidArgument) << is_file.status().ToString();
  EXPECT_THAT(is_file.status().message(), HasSubstr(file));

  auto empty = EventFileWriter::Create("");
  EXPECT_FALSE(empty.ok());
}

TEST_F(EventWriterTest, WritesAfterCloseFailNamingTheFile) {
  auto writer = MakeWriter(dir_);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_TRUE(writer->Close().ok());  // the first Close's result again
  Status s = writer->AddScalar("loss", 1, 1);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr(writer->path()));
  Graph graph;
  EXPECT_EQ(writer->AddGraph(graph).code(), Code::kFailedPrecondition);
  EXPECT_EQ(writer->Flush().code(), Code::kFailedPrecondition);
}

TEST_F(EventWriterTest, ReaderReportsCorruptRecordsAndNonEvents) {
  auto writer = MakeWriter(dir_);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->AddScalar("loss", 1, 1).ok());
  ASSERT_TRUE(writer->Close().ok());
  std::vector<EventRecord> events = Read(writer->path());
  ASSERT_EQ(events.size(), 2u);

  // Flip a byte of the second record's data: its CRC no longer checks.
  std::string bytes;
  {
    std::ifstream in(writer->path(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string corrupt = bytes;
  corrupt[events[1].offset + kRecordHeaderSize + 1] ^= 0x40;
  const std::string corrupt_path = dir_ + "/corrupt";
  std::ofstream(corrupt_path, std::ios::binary) << corrupt;
  auto r = ReadEventFile(corrupt_path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr(corrupt_path));
  EXPECT_THAT(r.status().message(), HasSubstr("at " + std::to_string(events[1].offset)));

  // A well-framed record that is not an Event (a truncated varint field).
  std::string framed = bytes;
  AppendFramedRecord(std::string_view("\x10", 1), &framed);
  const std::string not_event = dir_ + "/not_event";
  std::ofstream(not_event, std::ios::binary) << framed;
  r = ReadEventFile(not_event);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr(not_event + ": record 2 at byte offset " +
                                              std::to_string(bytes.size()) + " (1 bytes) is not an Event"));

  r = ReadEventFile(dir_ + "/missing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace tw::train
