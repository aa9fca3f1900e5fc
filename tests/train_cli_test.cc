// End-to-end tests of `towerflow train` and `towerflow eval`: runs the built
// binary on seed-schema data written by `towerflow convert seed-synthetic`
// (a linear rule a small MLP learns in a few hundred steps) with two virtual
// CPU towers, and checks the JSON line, checkpoints, event files, resume,
// Ctrl-C, corrupt data and usage errors.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "towerflow/data/record_writer.h"
#include "example.pb.h"
#include "towerflow/train/checkpoint_manager.h"
#include "towerflow/train/event_reader.h"
#include "towerflow/train/logdir_lock.h"
#include "towerflow/train/safetensors.h"
#include "cli_test_util.h"

namespace tw {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A CLI run and the last line of its stdout, parsed (discarded when not JSON).
struct Result : testing::CliResult {
  json last() const {
    std::string s = out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    const size_t nl = s.rfind('\n');
    return json::parse(nl == std::string::npos ? s : s.substr(nl + 1), nullptr, false);
  }
};
using testing::ReadFile;

class TrainCliTest : public testing::CliTest {
 protected:
  Result Run(const std::vector<std::string>& args, const std::string& prefix = "") {
    return Result{CliTest::Run(args, prefix)};
  }

  // Seed-schema train and test data (F = 8) under dir_/data.
  void MakeData(int64_t examples = 4000) {
    Result r = Run({"convert", "seed-synthetic", "--out", (dir_ / "data").string(), "--n-features", "8", "--examples",
                    std::to_string(examples), "--shards", "2", "--seed", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    data_ = (dir_ / "data" / "train-*.tfrecord").string();
  }

  // `r` ran with status 0 and said `line` (on stdout or stderr).
  static void ExpectSaid(const Result& r, const std::string& line) {
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE((r.out + r.err).find(line), std::string::npos) << r.out << r.err;
  }

  // Seed-schema data of 784 features (MNIST-sized matrices) under dir_/wide;
  // its glob.
  std::string MakeWideData(int64_t examples) {
    Result made = Run({"convert", "seed-synthetic", "--out", (dir_ / "wide").string(), "--n-features", "784",
                       "--examples", std::to_string(examples), "--shards", "1", "--seed", "3"});
    EXPECT_EQ(made.exit_code, 0) << made.err;
    return (dir_ / "wide" / "train-*.tfrecord").string();
  }

  // A glob over one plain and one GZIP copy of the first training file.
  std::string MixedCompression() {
    fs::create_directories(dir_ / "mixed");
    fs::copy_file(dir_ / "data" / "train-00000-of-00002.tfrecord", dir_ / "mixed" / "a.tfrecord",
                  fs::copy_options::overwrite_existing);
    std::ifstream in(dir_ / "mixed" / "a.tfrecord", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    gzFile gz = gzopen((dir_ / "mixed" / "b.tfrecord").c_str(), "wb");
    EXPECT_NE(gz, nullptr);
    EXPECT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(gz);
    return (dir_ / "mixed" / "*.tfrecord").string();
  }

  std::vector<std::string> TrainArgs(const std::string& logdir, int64_t steps) {
    return {"train", "--data", data_, "--model", "seed", "--hidden", "32,32", "--devices", "cpu:0,cpu:1",
            "--batch-size", "32", "--steps", std::to_string(steps), "--lr", "0.01", "--logdir",
            (dir_ / logdir).string(), "--seed", "7", "--min-after-dequeue", "200", "--intra-op-threads", "1",
            // Checkpoints by step only, however slow the machine: the tests count them.
            "--checkpoint-every-secs", "0"};
  }

  std::vector<fs::path> Files(const std::string& logdir, const std::string& prefix) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_ / logdir)) {
      if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string data_;
};

TEST_F(TrainCliTest, TwoTowersTrainCheckpointAndReportJson) {
  MakeData();
  std::vector<std::string> args = TrainArgs("run", 300);
  // The trace goes inside the logdir, which does not exist yet (as scripts/demo does).
  args.insert(args.end(), {"--eval-data", data_, "--trace", (dir_ / "run" / "trace.json").string()});
  Result r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = r.last();
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["steps"], 300);
  EXPECT_EQ(j["global_step"], 300);
  EXPECT_EQ(j["examples"], 300 * 64);
  EXPECT_EQ(j["towers"], 2);
  EXPECT_EQ(j["devices"], json::array({"/device:CPU:0", "/device:CPU:1"}));
  EXPECT_GT(j["examples_per_sec"].get<double>(), 0);
  EXPECT_LT(j["final_loss"].get<double>(), 0.5);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.9) << r.out;
  EXPECT_EQ(j["test_examples"], 4000);
  // The final checkpoint holds every variable, the momentum slots and the global step.
  const std::string ckpt = j["checkpoint"];
  EXPECT_EQ(fs::path(ckpt).filename(), "ckpt-300.safetensors");
  auto file = train::ReadSafetensors(ckpt);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->metadata["model"], "seed");
  EXPECT_NE(file->Find("hidden1/kernel"), nullptr);
  EXPECT_NE(file->Find("hidden1/kernel/Momentum"), nullptr);
  ASSERT_NE(file->Find("global_step"), nullptr);
  EXPECT_EQ(file->Find("global_step")->scalar<int64_t>(), 300);
  EXPECT_EQ(Files("run", "events.out.tfevents.").size(), 1u);
  // The trace is JSON with kernel events on both towers' devices.
  json trace = json::parse(ReadFile(dir_ / "run" / "trace.json"), nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  std::set<std::string> processes;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
  }
  EXPECT_TRUE(processes.count("/job:localhost/replica:0/task:0/device:CPU:1")) << trace.dump().substr(0, 2000);

  // eval on the logdir: the newest checkpoint, the same accuracy.
  Result e = Run({"eval", "--checkpoint", (dir_ / "run").string(), "--data", data_});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  json ej = e.last();
  EXPECT_EQ(ej["examples"], 4000);
  EXPECT_NEAR(ej["accuracy"].get<double>(), j["test_accuracy"].get<double>(), 1e-4);
  EXPECT_EQ(ej["global_step"], 300);
  EXPECT_EQ(Run({"eval", "--checkpoint", (dir_ / "run").string(), "--data", data_, "--model", "mlp"}).exit_code, 2);
}

// --input-threads 2: two readers, each on its own file (shuffle_batch_join),
// feed the towers; training runs and learns as with one.
TEST_F(TrainCliTest, TwoInputThreadsEachWithItsOwnReader) {
  MakeData();
  std::vector<std::string> args = TrainArgs("two_readers", 200);
  args.insert(args.end(),
              {"--input", "queue", "--input-threads", "2", "--eval-data", data_, "--log-device-placement"});
  Result r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = r.last();
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["steps"], 200);
  EXPECT_EQ(j["examples"], 200 * 64);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.9) << r.out;
  // The placement log lists both readers' ReadUpTo ops and one join queue.
  const std::string log = r.err + r.out;
  EXPECT_NE(log.find("input/ReaderReadUpTo_1: (ReaderReadUpTo)"), std::string::npos) << log.substr(0, 3000);
  EXPECT_NE(log.find("input/shuffle_batch_join/random_shuffle_queue: (RandomShuffleQueue)"), std::string::npos);
}

// The variables live on the first tower's device unless --variables says
// otherwise: a GPU tower keeps its weights in its own memory (no copy of every
// weight and gradient per step); --variables cpu pins them to /device:CPU:0.
TEST_F(TrainCliTest, VariablesLiveOnTheFirstTowersDeviceByDefault) {
  MakeData(1000);
  for (const std::string variables : {"", "auto", "cpu"}) {
    SCOPED_TRACE("--variables " + variables);
    std::vector<std::string> args = TrainArgs("variables_" + variables, 3);
    args[std::find(args.begin(), args.end(), "--devices") - args.begin() + 1] = "cpu:1,cpu:0";
    args.push_back("--log-device-placement");
    if (!variables.empty()) args.insert(args.end(), {"--variables", variables});
    Result r = Run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const std::string log = r.err + r.out;
    const std::string device = variables == "cpu" ? "CPU:0" : "CPU:1";
    for (const std::string var : {"hidden1/kernel", "hidden2/bias", "global_step"}) {
      EXPECT_NE(log.find(var + ": (VariableV2): /job:localhost/replica:0/task:0/device:" + device), std::string::npos)
          << var << "\n" << log.substr(0, 3000);
    }
  }
}

// --inter-op-threads 1 runs the whole step on the calling thread (TF's
// inter_op_parallelism_threads = 1): the trace holds one executor thread, where
// the default pool spreads a step's independent branches over more.
TEST_F(TrainCliTest, OneInterOpThreadRunsTheStepOnOneThread) {
  MakeData(1000);
  auto executor_threads = [&](const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> args = TrainArgs(name, 30);
    args[std::find(args.begin(), args.end(), "--devices") - args.begin() + 1] = "cpu:0";
    // Wide layers: each gradient MatMul long enough for a pool thread to take one.
    args[std::find(args.begin(), args.end(), "--hidden") - args.begin() + 1] = "1024,1024";
    args.insert(args.end(), {"--trace", (dir_ / (name + ".json")).string(), "--trace-steps", "20"});
    args.insert(args.end(), extra.begin(), extra.end());
    Result r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    json trace = json::parse(ReadFile(dir_ / (name + ".json")), nullptr, false);
    std::set<int> tids;
    if (trace.is_discarded()) return tids;
    for (const json& e : trace["traceEvents"]) {
      if (e["ph"] == "X" && e["pid"] == 1) tids.insert(e["tid"].get<int>());
    }
    return tids;
  };
  EXPECT_EQ(executor_threads("one", {"--inter-op-threads", "1"}), std::set<int>{0});
  EXPECT_GT(executor_threads("default", {"--inter-op-threads", "3"}).size(), 1u);
}

// The loss of step `step` in a run's progress lines (--log-every-secs 0: one per
// step), or -1 when it is not there.
double StepLoss(const std::string& out, int64_t step, int64_t total) {
  const std::string tag = "step " + std::to_string(step) + "/" + std::to_string(total) + " loss ";
  const size_t at = out.find(tag);
  return at == std::string::npos ? -1 : std::stod(out.substr(at + tag.size()));
}

TEST_F(TrainCliTest, ResumeContinuesTheGlobalStepAndTheLossCurve) {
  MakeData();
  std::vector<std::string> args = TrainArgs("split", 200);
  args.insert(args.end(), {"--eval-data", data_, "--log-every-secs", "0"});
  Result first = Run(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  args = TrainArgs("split", 400);
  args.insert(args.end(), {"--resume", "--eval-data", data_, "--log-every-secs", "0"});
  Result second = Run(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("restored"), std::string::npos) << second.out;
  json b = second.last();
  EXPECT_EQ(b["global_step"], 400);
  EXPECT_EQ(b["steps"], 200);
  // The curve goes on where it was: the resumed run's first step (weights and
  // momentum restored) is far below the first run's first step (measured: 0.69-0.70
  // from the initial weights, 0.12-0.16 after 200 steps). The loss at a
  // given step moves with the input order (queues are not checkpointed: a
  // resumed run draws an order of its own), so losses of whole runs are not
  // compared here.
  const double fresh = StepLoss(first.out, 1, 200), resumed = StepLoss(second.out, 201, 400);
  ASSERT_GT(fresh, 0) << first.out;
  ASSERT_GT(resumed, 0) << second.out;
  EXPECT_LT(resumed, 0.5 * fresh) << second.out;
  EXPECT_GT(b["test_accuracy"].get<double>(), 0.9);
  // A second resume at the total has nothing left to do.
  Result again = Run(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.last()["steps"], 0);
  EXPECT_EQ(again.last()["global_step"], 400);
}

TEST_F(TrainCliTest, ResumeSkipsATruncatedCheckpoint) {
  MakeData(1000);
  std::vector<std::string> args = TrainArgs("run", 40);
  args.insert(args.end(), {"--checkpoint-every-steps", "20"});
  ASSERT_EQ(Run(args).exit_code, 0);
  const fs::path newest = dir_ / "run" / "ckpt-40.safetensors";
  ASSERT_TRUE(fs::exists(newest));
  fs::resize_file(newest, fs::file_size(newest) / 2);
  args = TrainArgs("run", 50);
  args.push_back("--resume");
  Result r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("ckpt-40.safetensors"), std::string::npos) << r.out;  // named as skipped
  EXPECT_NE(r.out.find("restored " + (dir_ / "run" / "ckpt-20.safetensors").string()), std::string::npos) << r.out;
  EXPECT_EQ(r.last()["steps"], 30);
}

TEST_F(TrainCliTest, CtrlCStopsCleanlyWithAFinalCheckpoint) {
  MakeData(1000);
  // SIGINT once a first checkpoint is saved (however slow the start:
  // sanitizers, a loaded machine), or after 60 s; the run's status is kept.
  const std::string interrupt =
      "sh -c 'f=$1; shift; \"$@\" & p=$!; i=0; while [ ! -e \"$f\" ] && [ $i -lt 600 ] && kill -0 $p 2>/dev/null; do sleep 0.1; "
      "i=$((i+1)); done; kill -INT $p; wait $p' sh " +
      testing::ShellQuote((dir_ / "run" / "checkpoint").string());  // the index: the first checkpoint saved
  std::vector<std::string> args = TrainArgs("run", 100000000);
  args.insert(args.end(), {"--checkpoint-every-steps", "1"});
  Result r = Run(args, interrupt);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = r.last();
  EXPECT_EQ(j["interrupted"], true);
  ASSERT_GT(j["global_step"].get<int64_t>(), 0);
  const std::string ckpt = j["checkpoint"];
  auto file = train::ReadSafetensors(ckpt);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->Find("global_step")->scalar<int64_t>(), j["global_step"].get<int64_t>());
}

// A Ctrl-C at any moment of a start never crashes the process: before
// training starts it ends it as by default (status 130), after it stops
// cleanly with a checkpoint that loads. Signals are taken by one thread
// (train.cc): delivered to the main thread inside oneDNN's matmul, a SIGINT
// crashed 3 runs of 20 with SIGSEGV. Matrices of 784 x 256 as there.
TEST_F(TrainCliTest, ACtrlCAtAnyMomentOfTheStartNeverCrashes) {
  const std::string wide = MakeWideData(2000);
  ASSERT_FALSE(HasFailure());
  for (int k = 0; k < 12; ++k) {
    const std::string delay = std::to_string(0.05 + 0.07 * k);
    SCOPED_TRACE("SIGINT after " + delay + " s");
    const fs::path logdir = dir_ / ("run" + std::to_string(k));
    const std::string interrupt = "sh -c '\"$@\" & p=$!; sleep " + delay + "; kill -INT $p; wait $p' sh";
    Result r = Run({"train", "--data", wide, "--model", "seed", "--hidden",
                    "256,256", "--devices", "cpu:0", "--batch-size", "16", "--steps", "100000000", "--logdir",
                    logdir.string(), "--min-after-dequeue", "100", "--checkpoint-every-secs", "0"},
                   interrupt);
    if (r.exit_code == 128 + SIGINT) continue;  // before training started
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const std::string ckpt = r.last()["checkpoint"];
    auto file = train::ReadSafetensors(ckpt);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
  }
}

// A shuffle buffer too large for a checkpoint's header (its position would
// make a file no reader accepts) is left out of the checkpoint, with a
// warning, and --resume says so and starts the input afresh: the checkpoint
// still loads. (It used to be written unreadable, replacing the last good one.)
TEST_F(TrainCliTest, AnInputPositionTooLargeForACheckpointIsLeftOutAndSaid) {
  const std::string wide = MakeWideData(17000);
  ASSERT_FALSE(HasFailure());
  std::vector<std::string> args = {"train", "--data", wide, "--model",
                                   "seed", "--hidden", "8", "--devices", "cpu:0", "--batch-size", "16",
                                   "--steps", "2", "--logdir", (dir_ / "run").string(), "--min-after-dequeue",
                                   "16000", "--checkpoint-every-secs", "0", "--keep-checkpoints", "1"};
  Result r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("more than the 64 MB a checkpoint keeps"), std::string::npos) << r.err;
  auto file = train::ReadSafetensors(r.last()["checkpoint"].get<std::string>());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  args[std::find(args.begin(), args.end(), "--steps") - args.begin() + 1] = "3";
  args.push_back("--resume");
  Result resumed = Run(args);
  ExpectSaid(resumed, "the checkpoint holds no input position (its ");
}

// --resume of a checkpoint already at --steps or past it trains nothing and
// says so (it used to end silently, its JSON's loss 0).
TEST_F(TrainCliTest, ResumeWithNothingLeftToTrainSaysSo) {
  MakeData(1000);
  ASSERT_EQ(Run(TrainArgs("run", 10)).exit_code, 0);
  std::vector<std::string> args = TrainArgs("run", 5);
  args.push_back("--resume");
  Result r = Run(args);
  ExpectSaid(r, "the checkpoint is at step 10, --steps 5: nothing left to train");
  EXPECT_EQ(r.last()["steps"], 0);
  // A --resume that fails (another model) leaves no events file behind.
  const size_t before = Files("run", "events.out.tfevents.").size();
  args = TrainArgs("run", 30);
  std::replace(args.begin(), args.end(), std::string("32,32"), std::string("16,16"));
  args.push_back("--resume");
  Result refused = Run(args);
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_EQ(Files("run", "events.out.tfevents.").size(), before) << refused.err;
}

// --resume with other --data files than the checkpoint's: the checkpoint's
// input position (in the old files) is not restored, the run says so and
// reads the files it was given. (It used to go on reading the old ones.)
TEST_F(TrainCliTest, ResumeWithOtherDataFilesStartsTheInputAfreshAndSaysSo) {
  MakeData(1000);
  std::vector<std::string> args = TrainArgs("run", 10);
  Result first = Run(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  args = TrainArgs("run", 20);
  args[2] = (dir_ / "data" / "train-00000-of-00002.tfrecord").string();  // --data: one of the two files
  args.push_back("--resume");
  Result r = Run(args);
  ExpectSaid(r, "the checkpoint's input positions are in other files than --data's");
  args = TrainArgs("run", 30);
  args.push_back("--resume");
  Result same = Run(args);  // the files of its checkpoint (step 20's: one file)
  ExpectSaid(same, "other files than --data's");
}

// Out of memory (here a limit on the address space, under which the shuffle
// buffer cannot grow) ends the run with one line and status 1, not an abort
// from an uncaught std::bad_alloc (status 134). Sanitizers reserve more
// address space than any such limit: skipped under them.
TEST_F(TrainCliTest, OutOfMemoryIsOneLineAndStatusOne) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers need more address space than the limit";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
  GTEST_SKIP() << "sanitizers need more address space than the limit";
#endif
#endif
  const std::string wide = MakeWideData(3000);
  ASSERT_FALSE(HasFailure());
  // 1.5 GB of address space: the session starts, the buffer of 400,000
  // examples (6.3 KB each, 2.5 GB: less than any machine's memory, so not
  // refused at start) cannot be made.
  Result r = Run({"train", "--data", wide, "--model", "seed", "--hidden",
                  "8", "--devices", "cpu:0", "--batch-size", "16", "--steps", "5", "--logdir", (dir_ / "run").string(),
                  "--min-after-dequeue", "400000", "--input", "queue"},
                 "sh -c 'ulimit -v 1500000; exec \"$@\"' sh");
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("ResourceExhausted: out of memory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
}

// Steps run one ahead of their metrics (each before the previous one's loss
// is read), except before a checkpoint: every checkpoint holds the state of
// the step it is named after, and a Ctrl-C between checkpoints ends with a
// final one at the step the run counted.
TEST_F(TrainCliTest, CheckpointsHoldTheStepTheyAreNamedAfter) {
  MakeData(1000);
  std::vector<std::string> args = TrainArgs("run", 45);
  args.insert(args.end(), {"--checkpoint-every-steps", "7", "--keep-checkpoints", "100"});
  Result r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  int checked = 0;
  for (const fs::path& f : Files("run", "ckpt-")) {
    if (f.extension() != ".safetensors") continue;
    const std::string stem = f.stem().string();
    const int64_t step = std::stoll(stem.substr(stem.find('-') + 1));
    auto file = train::ReadSafetensors(f.string());
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_EQ(file->Find("global_step")->scalar<int64_t>(), step) << f;
    ++checked;
  }
  EXPECT_EQ(checked, 7) << "steps 7, 14, .., 42 and the final 45";

  const std::string interrupt =
      "sh -c 'f=$1; shift; \"$@\" & p=$!; i=0; while [ ! -e \"$f\" ] && [ $i -lt 600 ] && kill -0 $p 2>/dev/null; do sleep 0.1; "
      "i=$((i+1)); done; sleep 0.3; kill -INT $p; wait $p' sh " +
      testing::ShellQuote((dir_ / "long" / "checkpoint").string());
  args = TrainArgs("long", 100000000);
  args.insert(args.end(), {"--checkpoint-every-steps", "1000"});
  // The first checkpoint by time, so that the interrupt comes mid-run.
  *(std::find(args.begin(), args.end(), "--checkpoint-every-secs") + 1) = "1";
  r = Run(args, interrupt);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = r.last();
  EXPECT_EQ(j["interrupted"], true);
  auto file = train::ReadSafetensors(j["checkpoint"].get<std::string>());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->Find("global_step")->scalar<int64_t>(), j["global_step"].get<int64_t>());
  EXPECT_EQ(j["steps"].get<int64_t>(), j["global_step"].get<int64_t>());
}

TEST_F(TrainCliTest, CorruptRecordStopsWithDataLossAndKeepsTheCheckpoint) {
  MakeData(1000);
  std::vector<std::string> args = TrainArgs("run", 20);
  ASSERT_EQ(Run(args).exit_code, 0);
  const fs::path ckpt = dir_ / "run" / "ckpt-20.safetensors";
  const std::string before = ReadFile(ckpt);
  // Damage a record's data in the middle of the first shard.
  const fs::path shard = dir_ / "data" / "train-00000-of-00002.tfrecord";
  const uint64_t size = fs::file_size(shard);
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\x5a');
    f.put('\xa5');
  }
  args = TrainArgs("run", 100000);
  args.push_back("--resume");
  Result r = Run(args);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("DataLoss"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(shard.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("corrupted record at "), std::string::npos) << r.err;  // the byte offset
  EXPECT_EQ(ReadFile(ckpt), before);
  EXPECT_EQ(Files("run", "ckpt-").size(), 1u);
  // Skipping corrupt records trains through them.
  args = TrainArgs("skip", 100);
  args.push_back("--skip-corrupt-records");
  Result skipped = Run(args);
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_EQ(skipped.last()["global_step"], 100);
  // Its very first record damaged too (the one the schema is read from):
  // skipping starts from the first readable one, as the count and eval do.
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);  // inside the first record's data
    f.put('\x5a');
  }
  args = TrainArgs("skip_first", 50);
  Result refused = Run(args);
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("corrupted record at 0"), std::string::npos) << refused.err;
  args.push_back("--skip-corrupt-records");
  Result first_skipped = Run(args);
  EXPECT_EQ(first_skipped.exit_code, 0) << first_skipped.err;
  EXPECT_EQ(first_skipped.last()["global_step"], 50);
}

TEST_F(TrainCliTest, CheckNumericsStopsAtTheFirstNaNAndNamesTheOp) {
  MakeData(1000);
  std::vector<std::string> args = TrainArgs("run", 200);
  // A learning rate that makes the weights blow up within a few steps.
  *(std::find(args.begin(), args.end(), "--lr") + 1) = "1e30";
  args.push_back("--check-numerics");
  Result r = Run(args);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("InvalidArgument"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("values (first at flat index"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("node '"), std::string::npos) << r.err;
}

TEST_F(TrainCliTest, UsageErrorsAreOneLineWithStatusTwo) {
  MakeData(200);
  const std::string logdir = (dir_ / "run").string();
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"train", "--data", data_, "--logdir", logdir, "--no-such-flag"}, "no-such-flag"},
      {{"train", "--data", (dir_ / "nothing-*").string(), "--logdir", logdir}, "no files match"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "mlp"}, "does not fit --model mlp: no feature 'image'"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--epochs", "1", "--steps", "5"}, "not both"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--hidden", "32,x"}, "'x' is not a layer width"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--devices", "tpu:0"}, "--devices"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--devices", "gpu:99"}, "/device:GPU:99"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--batch-size", "0"}, "batch-size"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--inter-op-threads", "-1"}, "inter-op-threads"},
      {{"train", "--data", MixedCompression(), "--logdir", logdir, "--model", "seed"},
       "b.tfrecord is GZIP but " + (dir_ / "mixed" / "a.tfrecord").string() + " is not compressed"},
      // Regressions found by probing: an empty device list crashed (SIGSEGV),
      // a huge CPU index allocated 10^8 devices, NaN flags were taken, range
      // errors printed DBL_MAX in 309 digits.
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--devices", ""}, "names no device"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--devices", " , "}, "--devices"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--devices", "cpu:100000000"},
       "past the last virtual CPU device a run may have (/device:CPU:1023)"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--lr", "nan"},
       "--lr: 'nan' is not a finite number > 0"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--lr", "0"}, "'0' is not a finite number > 0"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--lr", "inf"}, "'inf' is not a finite"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--l2", "nan"}, "--l2: 'nan' is not a finite"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--l2", "-1"}, "'-1' is not a finite number >= 0"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--checkpoint-every-secs", "nan"},
       "--checkpoint-every-secs: 'nan'"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--log-every-secs", "-inf"},
       "--log-every-secs: '-inf'"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--input", "queue", "--deterministic",
        "--input-threads", "2"},
       "--deterministic reads with one input thread"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--input", "tf.data"}, "--input: tf.data"},
      {{"train", "--data", dir_.string(), "--logdir", logdir, "--model", "seed"}, "is a directory"},
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--cuda-graphs", "sometimes"},
       "--cuda-graphs: sometimes"},
      // Found by probing: a trace that could not be written failed only after
      // the training. /proc takes no new file, even from root.
      {{"train", "--data", data_, "--logdir", logdir, "--model", "seed", "--trace", "/proc/towerflow-trace.json"},
       "--trace /proc/towerflow-trace.json: cannot write beside it (/proc/towerflow-trace.json.probe."},
  };
  for (const Case& c : cases) {
    Result r = Run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.want << ": " << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_LT(r.err.size(), 400u) << r.err;
  }
}

TEST_F(TrainCliTest, LogicalGpusWithCpuTowersSayTheyChangeNothing) {
  MakeData(200);
  std::vector<std::string> args = TrainArgs("run", 2);
  args.insert(args.end(), {"--logical-gpus", "2", "--trace", (dir_ / "traces" / "t.json").string()});
  Result r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: --logical-gpus 2 changes nothing: every tower is on a CPU (--devices cpu:0,cpu:1)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.last()["towers"], 2) << r.out;
  // The check that the trace can be written leaves nothing beside it.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_ / "traces")) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>({"t.json"}));
}

TEST_F(TrainCliTest, ANanLossStopsNamingTheStepAndKeepsTheLastFiniteCheckpoint) {
  MakeData(1000);
  std::vector<std::string> args = TrainArgs("run", 200);
  *(std::find(args.begin(), args.end(), "--lr") + 1) = "1e30";  // diverges within a few steps
  args.insert(args.end(), {"--checkpoint-every-steps", "1", "--keep-checkpoints", "2"});
  Result r = Run(args);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("the loss is NaN at global step "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--on-nan-loss continue"), std::string::npos) << r.err;
  // Every checkpoint written is finite (the step that diverged wrote none).
  train::CheckpointManager manager((dir_ / "run").string());
  for (const std::string& ckpt : manager.Checkpoints()) {
    auto file = train::ReadSafetensors(ckpt);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_TRUE(train::CheckFinite(ckpt, *file).ok()) << ckpt;
  }

  // Asked to go on, it trains to the end; the JSON line stays JSON (null for NaN).
  args = TrainArgs("on", 30);
  *(std::find(args.begin(), args.end(), "--lr") + 1) = "1e30";
  args.insert(args.end(), {"--on-nan-loss", "continue", "--checkpoint-every-steps", "10", "--keep-checkpoints", "1"});
  Result on = Run(args);
  ASSERT_EQ(on.exit_code, 0) << on.err;
  json j = on.last();
  ASSERT_FALSE(j.is_discarded()) << on.out;
  EXPECT_TRUE(j["final_loss"].is_null()) << on.out;
  EXPECT_EQ(j["global_step"], 30);
  // Evaluating the diverged weights prints the result and fails: a script
  // that goes on from a good evaluation stops there.
  const std::string diverged = j["checkpoint"].get<std::string>();
  Result e = Run({"eval", "--checkpoint", diverged, "--data", data_});
  EXPECT_EQ(e.exit_code, 1) << e.out << e.err;
  EXPECT_TRUE(e.last()["loss"].is_null()) << e.out;
  EXPECT_NE(e.err.find(": the weights of " + diverged + " give no finite loss"), std::string::npos) << e.err;
  // The newest is NaN; the last finite one (step 0's weights were finite, the
  // first checkpoint at step 10 may already be NaN) is never rotated out, and a
  // resume restores it rather than the NaN weights.
  train::CheckpointManager kept((dir_ / "on").string());
  auto latest = kept.ReadLatest();
  if (latest.ok()) {
    EXPECT_TRUE(train::CheckFinite(latest->path, latest->file).ok());
    EXPECT_FALSE(latest->rejected.empty());
  } else {
    EXPECT_EQ(latest.status().code(), Code::kNotFound) << latest.status().ToString();
  }
}

TEST_F(TrainCliTest, ARecordOfAnotherSchemaNamesItsFileAndOffset) {
  MakeData(400);
  // The second file (by name) holds Fashion-MNIST-schema records.
  fs::create_directories(dir_ / "mixed");
  fs::copy_file(dir_ / "data" / "train-00000-of-00002.tfrecord", dir_ / "mixed" / "a.tfrecord");
  {
    auto writer = RecordWriter::Open((dir_ / "mixed" / "b.tfrecord").string());
    ASSERT_TRUE(writer.ok());
    for (int i = 0; i < 300; ++i) {
      tensorflow::Example ex;
      (*ex.mutable_features()->mutable_feature())["label"].mutable_int64_list()->add_value(i % 10);
      std::string bytes;
      ex.SerializeToString(&bytes);
      ASSERT_TRUE((*writer)->WriteRecord(bytes).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  data_ = (dir_ / "mixed" / "*.tfrecord").string();
  Result r = Run(TrainArgs("run", 1000));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string b = (dir_ / "mixed" / "b.tfrecord").string();
  EXPECT_NE(r.err.find("Name: " + b + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is required but could not be found"), std::string::npos) << r.err;
}

TEST_F(TrainCliTest, ASecondTrainingInTheSameLogdirIsRefused) {
  MakeData(200);
  auto lock = train::LogdirLock::Acquire((dir_ / "run").string());  // as a running training holds it
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  Result r = Run(TrainArgs("run", 5));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("is in use by another training (pid " + std::to_string(::getpid())), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "run" / "checkpoint"));
  lock->reset();
  EXPECT_EQ(Run(TrainArgs("run", 5)).exit_code, 0);
}

TEST_F(TrainCliTest, DeterministicRunsAreBitIdentical) {
  MakeData(2000);
  std::vector<std::string> args = TrainArgs("a", 60);
  args.push_back("--deterministic");
  Result a = Run(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  *(std::find(args.begin(), args.end(), (dir_ / "a").string())) = (dir_ / "b").string();
  Result b = Run(args);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.last()["deterministic"], true);
  EXPECT_EQ(a.last()["final_loss"], b.last()["final_loss"]);
  // Every weight and slot, bit for bit, and the metadata but the input's
  // position (how far the dataset had read ahead when it was saved depends on
  // its threads; the elements it goes on with do not).
  auto fa = train::ReadSafetensors((dir_ / "a" / "ckpt-60.safetensors").string());
  auto fb = train::ReadSafetensors((dir_ / "b" / "ckpt-60.safetensors").string());
  ASSERT_TRUE(fa.ok() && fb.ok());
  ASSERT_EQ(fa->tensors.size(), fb->tensors.size());
  for (size_t i = 0; i < fa->tensors.size(); ++i) {
    const auto& [name, t] = fa->tensors[i];
    ASSERT_EQ(name, fb->tensors[i].first);
    ASSERT_EQ(t.TotalBytes(), fb->tensors[i].second.TotalBytes()) << name;
    EXPECT_EQ(std::memcmp(t.raw_data(), fb->tensors[i].second.raw_data(), t.TotalBytes()), 0) << name;
  }
  fa->metadata.erase("input_state");
  fb->metadata.erase("input_state");
  EXPECT_EQ(fa->metadata, fb->metadata);
}

TEST_F(TrainCliTest, ALinearScheduleDecaysTheRateWithTheGlobalStep) {
  MakeData(1000);
  std::vector<std::string> args = TrainArgs("run", 40);
  args.insert(args.end(), {"--lr-schedule", "linear", "--summary-every-steps", "10"});
  Result r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The learning_rate scalars: 0.01 * (1 - step / 40).
  std::vector<fs::path> events = Files("run", "events.out.tfevents.");
  ASSERT_EQ(events.size(), 1u);
  auto records = train::ReadEventFile(events[0].string());
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  std::map<int64_t, float> lr;
  for (const auto& rec : *records) {
    for (const auto& v : rec.event.summary().value()) {
      if (v.tag() == "learning_rate") lr[rec.event.step()] = v.simple_value();
    }
  }
  EXPECT_FLOAT_EQ(lr[10], 0.0075f);
  EXPECT_FLOAT_EQ(lr[20], 0.005f);
  EXPECT_FLOAT_EQ(lr[40], 0.0f);
  // The graph reads the rate from the global step: the first update uses the
  // full rate (the same bits as a constant rate), later ones less.
  auto run = [&](const std::string& logdir, const std::string& schedule) {
    std::vector<std::string> a = TrainArgs(logdir, 40);
    a.insert(a.end(), {"--lr-schedule", schedule, "--deterministic", "--checkpoint-every-steps", "1",
                       "--keep-checkpoints", "100"});
    ASSERT_EQ(Run(a).exit_code, 0);
  };
  run("linear", "linear");
  run("constant", "constant");
  for (const char* ckpt : {"ckpt-1.safetensors", "ckpt-40.safetensors"}) {
    auto linear = train::ReadSafetensors((dir_ / "linear" / ckpt).string());
    auto constant = train::ReadSafetensors((dir_ / "constant" / ckpt).string());
    ASSERT_TRUE(linear.ok() && constant.ok()) << ckpt;
    const Tensor* a = linear->Find("hidden1/kernel");
    const Tensor* b = constant->Find("hidden1/kernel");
    ASSERT_TRUE(a != nullptr && b != nullptr);
    const bool same = std::memcmp(a->raw_data(), b->raw_data(), a->TotalBytes()) == 0;
    EXPECT_EQ(same, std::string(ckpt) == "ckpt-1.safetensors") << ckpt;
  }
}

TEST_F(TrainCliTest, EvalRefusesACheckpointThatIsNotAFile) {
  MakeData(200);
  for (const std::string path : {"/dev/zero", "/dev/null"}) {
    Result r = Run({"eval", "--checkpoint", path, "--data", data_});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(path + " is a character device"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace tw
