// `towerflow train` as several processes under OpenMPI's mpirun on this
// machine (oversubscribed: 2 and 3 ranks on 2 cores): equivalence with towers
// in one process, distinct data on every rank, a rank started with other
// flags, a rank killed or stopped mid-training, Ctrl-C, and --resume.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/dist/mpirun_test_util.h"
#include "towerflow/train/checkpoint_manager.h"
#include "towerflow/train/safetensors.h"

namespace tw {
namespace {

namespace fs = std::filesystem;
using dist::testing::MpirunCommand;
using dist::testing::RunShell;
using dist::testing::ShellResult;
using dist::testing::ShellWord;
using nlohmann::json;

// The last line of `out` that parses as JSON (discarded when none does).
json LastJson(const std::string& out) {
  size_t end = out.size();
  while (end > 0) {
    size_t start = out.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    json j = json::parse(out.substr(start, end - start), nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
    if (start == 0) break;
    end = start - 1;
  }
  return json::parse("x", nullptr, false);
}

class TrainMpiTest : public testing::CliTest {
 protected:
  // Seed-schema data (F = 8), `shards` training files under dir_/data.
  void MakeData(int shards, int64_t examples = 3000) {
    auto r = Run({"convert", "seed-synthetic", "--out", (dir_ / "data").string(), "--n-features", "8", "--examples",
                  std::to_string(examples), "--shards", std::to_string(shards), "--seed", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    data_ = (dir_ / "data" / "train-*.tfrecord").string();
  }

  // Two files holding `n` copies each of the first training record: every
  // batch of every tower and rank is the same.
  void MakeIdenticalData(int64_t n = 2000) {
    MakeData(1, 200);
    auto reader = RecordReader::Open((dir_ / "data" / "train-00000-of-00001.tfrecord").string());
    ASSERT_TRUE(reader.ok());
    std::string record;
    ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
    fs::create_directories(dir_ / "same");
    for (const char* name : {"a.tfrecord", "b.tfrecord"}) {
      auto writer = RecordWriter::Open((dir_ / "same" / name).string());
      ASSERT_TRUE(writer.ok());
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE((*writer)->WriteRecord(record).ok());
      ASSERT_TRUE((*writer)->Close().ok());
    }
    data_ = (dir_ / "same" / "*.tfrecord").string();
  }

  std::vector<std::string> TrainArgs(const std::string& logdir, int64_t steps, const std::string& devices) {
    return {"train", "--data", data_, "--model", "seed", "--hidden", "32,32", "--devices", devices,
            "--batch-size", "32", "--steps", std::to_string(steps), "--lr", "0.05", "--logdir",
            (dir_ / logdir).string(), "--seed", "7", "--min-after-dequeue", "100", "--intra-op-threads", "1",
            "--checkpoint-every-secs", "0", "--log-every-secs", "1000"};
  }

  std::string Command(const std::vector<std::string>& args) const {
    std::string cmd = ShellWord(testing::CliBinary().string());
    for (const std::string& a : args) cmd += " " + ShellWord(a);
    return cmd;
  }

  ShellResult Mpirun(int np, const std::vector<std::string>& args, int timeout_seconds = 180) {
    return RunShell(MpirunCommand(np, Command(args)), timeout_seconds);
  }

  // Starts `mpirun -np 2` in the background, waits for the first checkpoint,
  // sends `signal` to rank 1 (found by OMPI_COMM_WORLD_RANK in its
  // environment), and waits for mpirun; prints "rc=<status> waited=<s>".
  ShellResult SignalRankOne(const std::vector<std::string>& args, const std::string& signal) {
    const std::string index = (dir_ / "run" / "checkpoint").string();
    const std::string script =
        MpirunCommand(2, Command(args)) + " & MP=$!\n" +
        "for i in $(seq 1 600); do [ -e " + ShellWord(index) + " ] && break; sleep 0.1; done\n" +
        "R1=''; for p in $(pgrep -P $MP); do "
        "if tr '\\0' '\\n' < /proc/$p/environ | grep -qx OMPI_COMM_WORLD_RANK=1; then R1=$p; fi; done\n" +
        "[ -n \"$R1\" ] || echo 'no rank 1 found'\n" +
        "T0=$(date +%s.%N); kill -" + signal + " $R1\n" +
        "wait $MP; RC=$?; T1=$(date +%s.%N)\n" +
        "kill -9 $R1 2>/dev/null\n" +
        "echo \"rc=$RC waited=$(echo \"$T1 - $T0\" | bc)\"\n";
    return RunShell(script, 180);
  }

  std::map<std::string, std::vector<float>> Variables(const std::string& checkpoint) {
    std::map<std::string, std::vector<float>> out;
    auto file = train::ReadSafetensors(checkpoint);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    if (!file.ok()) return out;
    for (const auto& [name, t] : file->tensors) {
      if (t.dtype() != kFloat32) continue;
      out[name].assign(t.data<float>(), t.data<float>() + t.NumElements());
    }
    return out;
  }

  std::string data_;
};

// N processes of one tower take the steps one process of N towers takes: the
// same initial variables (rank 0's, broadcast), the same mean gradient. Every
// batch is the same record here, so both runs see the same data.
TEST_F(TrainMpiTest, ProcessesOfOneTowerMatchOneProcessOfAsManyTowers) {
  MakeIdenticalData();
  for (int n : {2, 3}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    const std::string towers = n == 2 ? "cpu:0,cpu:1" : "cpu:0,cpu:1,cpu:2";
    ShellResult multi = Mpirun(n, TrainArgs("multi" + std::to_string(n), 30, "cpu:0"));
    ASSERT_EQ(multi.exit_code, 0) << multi.output;
    auto one = Run(TrainArgs("one" + std::to_string(n), 30, towers));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    json jm = LastJson(multi.output), jo = LastJson(one.out);
    ASSERT_FALSE(jm.is_discarded()) << multi.output;
    EXPECT_EQ(jm["ranks"], n);
    EXPECT_EQ(jm["towers"], 1);
    EXPECT_EQ(jm["global_batch"], 32 * n);
    EXPECT_EQ(jm["examples"], 30 * 32 * n);
    EXPECT_EQ(jm["global_step"], 30);
    EXPECT_NEAR(jm["final_loss"].get<double>(), jo["final_loss"].get<double>(), 1e-4);
    EXPECT_NE(multi.output.find("world: " + std::to_string(n) + " ranks on 1 host"), std::string::npos)
        << multi.output;
    EXPECT_NE(multi.output.find("bit-identical on the " + std::to_string(n) + " ranks"), std::string::npos)
        << multi.output;
    // Identical records: the ranks' batches are the same, and it is said.
    EXPECT_NE(multi.output.find("received the same first batch"), std::string::npos) << multi.output;
    auto vm = Variables(jm["checkpoint"]), vo = Variables(jo["checkpoint"]);
    ASSERT_FALSE(vm.empty());
    ASSERT_EQ(vm.size(), vo.size());
    for (const auto& [name, values] : vo) {
      ASSERT_EQ(vm[name].size(), values.size()) << name;
      for (size_t i = 0; i < values.size(); ++i) {
        ASSERT_NEAR(vm[name][i], values[i], 1e-5 + 1e-4 * std::abs(values[i])) << name << "[" << i << "]";
      }
    }
    // Only rank 0 wrote the logdir: one event file.
    int events = 0;
    for (const auto& e : fs::directory_iterator(dir_ / ("multi" + std::to_string(n)))) {
      events += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    }
    EXPECT_EQ(events, 1);
  }
}

// Ranks of one host sum their gradient buckets in memory they share: for 2
// ranks the same bits as MPI's all-reduce (one addition, which commutes), so
// --deterministic runs with --allreduce auto and mpi write the same weights.
TEST_F(TrainMpiTest, BucketsSummedInSharedMemoryTakeMpisSteps) {
  MakeIdenticalData();
  std::vector<std::string> args = TrainArgs("shared", 20, "cpu:0");
  // A bucket over 64 KiB: only those are shared.
  *(std::find(args.begin(), args.end(), "--hidden") + 1) = "160,96";
  args.push_back("--deterministic");
  std::vector<std::string> mpi_args = args;
  *(std::find(mpi_args.begin(), mpi_args.end(), (dir_ / "shared").string())) = (dir_ / "mpi").string();
  mpi_args.insert(mpi_args.end(), {"--allreduce", "mpi"});
  ShellResult shared = Mpirun(2, args);
  ASSERT_EQ(shared.exit_code, 0) << shared.output;
  ShellResult mpi = Mpirun(2, mpi_args);
  ASSERT_EQ(mpi.exit_code, 0) << mpi.output;
  json js = LastJson(shared.output), jm = LastJson(mpi.output);
  ASSERT_FALSE(js.is_discarded()) << shared.output;
  ASSERT_FALSE(jm.is_discarded()) << mpi.output;
  EXPECT_GE(js["allreduce_shared"].get<double>(), 0.9) << shared.output;  // every step after the first
  EXPECT_EQ(jm["allreduce_shared"].get<double>(), 0.0) << mpi.output;
  EXPECT_NE(shared.output.find("summed in shared memory"), std::string::npos) << shared.output;
  auto vs = Variables(js["checkpoint"]), vm = Variables(jm["checkpoint"]);
  ASSERT_FALSE(vs.empty());
  ASSERT_EQ(vs.size(), vm.size());
  for (const auto& [name, values] : vm) EXPECT_TRUE(vs[name] == values) << name;
  EXPECT_EQ(js["final_loss"], jm["final_loss"]);
}

// Real data: files split by rank (4 files, 2 ranks) or records by index
// (1 file, 3 ranks); no two ranks get the same batch, and training learns.
TEST_F(TrainMpiTest, EveryRankReadsItsOwnShard) {
  // Both inputs: TF1's queue and the dataset (--input dataset).
  for (const std::string input : {"queue", "dataset"}) {
    SCOPED_TRACE(input);
    fs::remove_all(dir_ / "data");
    MakeData(4);
    std::vector<std::string> args = TrainArgs("files-" + input, 200, "cpu:0");
    args.insert(args.end(), {"--input", input});
    ShellResult files = Mpirun(2, args);
    ASSERT_EQ(files.exit_code, 0) << files.output;
    EXPECT_NE(files.output.find("input: 4 files split by rank (2 each)"), std::string::npos) << files.output;
    EXPECT_EQ(files.output.find("same first batch"), std::string::npos) << files.output;
    EXPECT_LT(LastJson(files.output)["final_loss"].get<double>(), 0.6) << files.output;

    fs::remove_all(dir_ / "data");
    MakeData(1);
    args = TrainArgs("records-" + input, 50, "cpu:0");
    args.insert(args.end(), {"--input", input});
    ShellResult records = Mpirun(3, args);
    ASSERT_EQ(records.exit_code, 0) << records.output;
    EXPECT_NE(records.output.find("split by record"), std::string::npos) << records.output;
    EXPECT_EQ(records.output.find("same first batch"), std::string::npos) << records.output;
  }
}

// Ranks sharing a host that their launcher left unbound each take their share
// of the cores they may use (rank 0 the first half of 2 ranks', of this
// test's cores: mpirun's ranks inherit them); --bind-cores none leaves them
// on every core; a launcher's binding is kept.
TEST_F(TrainMpiTest, RanksSharingAHostRunOnTheirShareOfItsCores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  if (cores.size() < 2) GTEST_SKIP() << "needs 2 cores or more";
  MakeData(2);
  ShellResult bound = Mpirun(2, TrainArgs("bound", 5, "cpu:0"));
  ASSERT_EQ(bound.exit_code, 0) << bound.output;
  // "rank 0 runs on core 0 (towerflow's share; ...)", or "cores 0-3,8-11":
  // some of this test's cores, not all (whole physical cores, so not
  // necessarily the first half).
  const std::string said = "rank 0 runs on ", share = " (towerflow's share";
  const size_t at = bound.output.find(said), end = bound.output.find(share);
  ASSERT_TRUE(at != std::string::npos && end != std::string::npos && end > at) << bound.output;
  std::string list = bound.output.substr(at + said.size(), end - at - said.size());
  ASSERT_TRUE(list.rfind("core ", 0) == 0 || list.rfind("cores ", 0) == 0) << list;
  list = list.substr(list.find(' ') + 1);
  std::set<int> mine;
  for (size_t i = 0; i < list.size();) {
    size_t next = list.find(',', i);
    const std::string item = list.substr(i, next == std::string::npos ? std::string::npos : next - i);
    const size_t dash = item.find('-');
    const int lo = std::stoi(item.substr(0, dash)), hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) mine.insert(c);
    i = next == std::string::npos ? list.size() : next + 1;
  }
  EXPECT_FALSE(mine.empty()) << list;
  EXPECT_LT(mine.size(), cores.size()) << list;
  for (int c : mine) EXPECT_TRUE(CPU_ISSET(c, &set)) << "core " << c << " is not this test's: " << list;

  std::vector<std::string> args = TrainArgs("free", 5, "cpu:0");
  args.insert(args.end(), {"--bind-cores", "none"});
  ShellResult free = Mpirun(2, args);
  ASSERT_EQ(free.exit_code, 0) << free.output;
  EXPECT_NE(free.output.find("rank 0 runs on every core"), std::string::npos) << free.output;

  std::string launcher = MpirunCommand(2, Command(TrainArgs("launcher", 5, "cpu:0")));
  launcher.replace(launcher.find("--bind-to none"), std::string("--bind-to none").size(), "--bind-to core");
  ShellResult by_launcher = RunShell(launcher, 180);
  ASSERT_EQ(by_launcher.exit_code, 0) << by_launcher.output;
  EXPECT_NE(by_launcher.output.find(" (the launcher's binding)"), std::string::npos) << by_launcher.output;
}

// A rank built with another --hidden is refused, naming the difference, by
// every rank; nobody hangs.
TEST_F(TrainMpiTest, ARankWithOtherFlagsIsRefused) {
  MakeData(2);
  std::vector<std::string> other = TrainArgs("run", 20, "cpu:0");
  std::replace(other.begin(), other.end(), std::string("32,32"), std::string("16,16"));
  const std::string mpmd = MpirunCommand(1, Command(TrainArgs("run", 20, "cpu:0"))) + " : -np 1 " + Command(other);
  ShellResult r = RunShell(mpmd, 120);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "hung: " << r.output;
  EXPECT_NE(r.output.find("rank 1 was started differently from rank 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hidden 32,32"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hidden 16,16"), std::string::npos) << r.output;
}

// Flags that make a rank join collectives the others do not (checkpoints by
// step gather the ranks' input positions, --resume broadcasts a step) are
// compared before any of them: a rank started with others is refused by
// every rank at once, where it used to hang until the collective timeout.
TEST_F(TrainMpiTest, ARankWithOtherCheckpointOrResumeFlagsIsRefused) {
  MakeData(2);
  std::vector<std::string> every = TrainArgs("run", 20, "cpu:0");
  every.insert(every.end(), {"--checkpoint-every-steps", "5", "--collective-timeout", "600"});
  std::vector<std::string> resumed = TrainArgs("run", 20, "cpu:0");
  resumed.insert(resumed.end(), {"--resume", "--collective-timeout", "600"});
  std::vector<std::string> by_mpi = TrainArgs("run", 20, "cpu:0");
  by_mpi.insert(by_mpi.end(), {"--allreduce", "mpi", "--collective-timeout", "600"});
  const std::vector<std::string> plain = [&] {
    std::vector<std::string> a = TrainArgs("run", 20, "cpu:0");
    a.insert(a.end(), {"--collective-timeout", "600"});
    return a;
  }();
  for (const auto& [other, line] : {std::pair{every, std::string("checkpoint every 5 steps")},
                                    std::pair{resumed, std::string("resume yes")},
                                    std::pair{by_mpi, std::string("all-reduce mpi")}}) {
    SCOPED_TRACE(line);
    const std::string mpmd = MpirunCommand(1, Command(plain)) + " : -np 1 " + Command(other);
    ShellResult r = RunShell(mpmd, 120);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.exit_code, 124) << "hung: " << r.output;
    EXPECT_NE(r.output.find("rank 1 was started differently from rank 0"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  }
}

// kill -9 of one rank mid-training: the others end (non-zero) within 60 s,
// and the newest checkpoint is loadable.
TEST_F(TrainMpiTest, ARankKilledEndsTheJobAndKeepsTheNewestCheckpoint) {
  MakeData(2);
  std::vector<std::string> args = TrainArgs("run", 1000000, "cpu:0");
  args.insert(args.end(), {"--checkpoint-every-steps", "20"});
  ShellResult r = SignalRankOne(args, "9");
  ASSERT_NE(r.output.find("rc="), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rc=0 "), std::string::npos) << r.output;
  const double waited = std::stod(r.output.substr(r.output.find("waited=") + 7));
  EXPECT_LT(waited, 60) << r.output;
  train::CheckpointManager checkpoints((dir_ / "run").string());
  ASSERT_FALSE(checkpoints.Checkpoints().empty());
  EXPECT_TRUE(train::ReadSafetensors(checkpoints.Checkpoints().back()).ok()) << checkpoints.Checkpoints().back();
}

// A rank that hangs (SIGSTOP): rank 0 names it and the step after
// --collective-timeout, and the job ends.
TEST_F(TrainMpiTest, AHungRankIsNamedAfterTheCollectiveTimeout) {
  MakeData(2);
  std::vector<std::string> args = TrainArgs("run", 1000000, "cpu:0");
  args.insert(args.end(), {"--checkpoint-every-steps", "20", "--collective-timeout", "3"});
  ShellResult r = SignalRankOne(args, "STOP");
  ASSERT_NE(r.output.find("rc="), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rc=0 "), std::string::npos) << r.output;
  EXPECT_LT(std::stod(r.output.substr(r.output.find("waited=") + 7)), 60) << r.output;
  EXPECT_NE(r.output.find("rank 0 of 2 (step "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("): DeadlineExceeded: "), std::string::npos) << r.output;
  // Said once, as the collective gave up (the world's hook), not again when
  // the error has unwound the step.
  const size_t said = r.output.find("rank 0 of 2 (step ");
  EXPECT_EQ(r.output.find("rank 0 of 2 (step ", said + 1), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 0 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step "), std::string::npos) << r.output;
  // Rank 1 stopped before the collective (it never joined) or inside it (it
  // went silent): either way it is named.
  const bool never_joined = r.output.find("rank 1 (") != std::string::npos &&
                            r.output.find("never joined it") != std::string::npos;
  const bool silent = r.output.find("has been silent for") != std::string::npos;
  EXPECT_TRUE(never_joined || silent) << r.output;
  EXPECT_NE(r.output.find("rank 1 ("), std::string::npos) << r.output;
}

// Rank 1's input fails mid-training (a corrupt record in its shard, TF1's
// queue pipeline): the job fails naming the error, on every rank alike; it is
// never taken for a clean stop ("interrupted", exit 0).
TEST_F(TrainMpiTest, AnInputThatFailsOnOneRankFailsTheJob) {
  MakeData(2);
  const fs::path file = dir_ / "data" / "train-00001-of-00002.tfrecord";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
    f.put('\x5a');
    f.put('\xa5');
  }
  std::vector<std::string> args = TrainArgs("run", 1000000, "cpu:0");
  args.insert(args.end(), {"--input", "queue", "--collective-timeout", "60"});
  ShellResult r = Mpirun(2, args, 120);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << r.output;
  EXPECT_NE(r.output.find("DataLoss"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\"interrupted\": true"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("interrupted at step"), std::string::npos) << r.output;
}

// Ctrl-C on mpirun (SIGINT: it sends SIGTERM to every rank): the ranks stop
// after the same step and rank 0 writes a final checkpoint at that step.
TEST_F(TrainMpiTest, CtrlCOnMpirunStopsEveryRankWithAFinalCheckpoint) {
  MakeData(2);
  std::vector<std::string> args = TrainArgs("run", 1000000, "cpu:0");
  args.insert(args.end(), {"--checkpoint-every-steps", "20"});
  const std::string index = (dir_ / "run" / "checkpoint").string();
  const std::string script = MpirunCommand(2, Command(args)) + " & MP=$!\n" +
                             "for i in $(seq 1 600); do [ -e " + ShellWord(index) + " ] && break; sleep 0.1; done\n" +
                             "kill -INT $MP; wait $MP; echo \"rc=$?\"\n";
  ShellResult r = RunShell(script, 120);
  ASSERT_NE(r.output.find("rc="), std::string::npos) << r.output;
  const json j = LastJson(r.output);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["interrupted"], true);
  const int64_t step = j["global_step"];
  EXPECT_GT(step, 0);
  EXPECT_EQ(fs::path(j["checkpoint"].get<std::string>()).filename(), "ckpt-" + std::to_string(step) + ".safetensors");
  auto file = train::ReadSafetensors(j["checkpoint"].get<std::string>());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->Find("global_step")->scalar<int64_t>(), step);
  EXPECT_NE(r.output.find("bit-identical on the 2 ranks at step " + std::to_string(step)), std::string::npos)
      << r.output;
}

// --resume of a two-process job continues from rank 0's newest checkpoint.
TEST_F(TrainMpiTest, ATwoProcessJobResumes) {
  MakeData(2);
  std::vector<std::string> traced = TrainArgs("run", 20, "cpu:0");
  // In a directory not made yet: every rank makes it at start (they used to
  // race, and the loser refused to start).
  traced.insert(traced.end(), {"--trace", (dir_ / "traces" / "job.json").string(), "--trace-steps", "2"});
  ShellResult first = Mpirun(2, traced);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  // One trace for the job: every rank's devices, as processes "rank r: ...".
  const json trace = json::parse(testing::ReadFile(dir_ / "traces" / "job.json"), nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  std::set<std::string> ranks;
  for (const json& e : trace["traceEvents"]) {
    if (e["name"] == "process_name") ranks.insert(e["args"]["name"].get<std::string>().substr(0, 7));
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"rank 0:", "rank 1:"}));
  std::vector<std::string> args = TrainArgs("run", 40, "cpu:0");
  args.push_back("--resume");
  ShellResult second = Mpirun(2, args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("(global step 20)"), std::string::npos) << second.output;
  json j = LastJson(second.output);
  EXPECT_EQ(j["global_step"], 40);
  EXPECT_EQ(j["steps"], 20);
  EXPECT_NE(second.output.find("bit-identical on the 2 ranks at step 40"), std::string::npos) << second.output;
  // Each rank's input went on from its own position in rank 0's checkpoint.
  EXPECT_NE(second.output.find("the input continues its epoch"), std::string::npos) << second.output;
  auto metadata = train::ReadSafetensorsMetadata(j["checkpoint"].get<std::string>());
  ASSERT_TRUE(metadata.ok()) << metadata.status().ToString();
  EXPECT_EQ(metadata->count("input_state"), 1u);
  EXPECT_EQ(metadata->count("input_state.1"), 1u);
  EXPECT_EQ(metadata->count("input_state.2"), 0u);
  EXPECT_EQ((*metadata)["input_state_ranks"], "2");
  // eval on the job's checkpoint just works.
  auto eval = Run({"eval", "--checkpoint", j["checkpoint"].get<std::string>(), "--data", data_});
  EXPECT_EQ(eval.exit_code, 0) << eval.err << eval.out;
}

// A checkpoint of 2 processes resumed by 1 (and one of 1 by 3): the
// variables are restored, the input positions are said to be for another
// number of processes and the input starts afresh (a single process used to
// fail, restoring rank 0's position into an input of another shape).
TEST_F(TrainMpiTest, ACheckpointResumedByAnotherNumberOfProcessesSaysWhyTheInputStartsAfresh) {
  MakeData(2);
  ShellResult first = Mpirun(2, TrainArgs("run", 10, "cpu:0"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::vector<std::string> alone = TrainArgs("run", 20, "cpu:0");
  alone.push_back("--resume");
  ShellResult one = RunShell(Command(alone) + " 2>&1", 120);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("the checkpoint's input positions are for 2 processes, not 1"), std::string::npos)
      << one.output;
  std::vector<std::string> three = TrainArgs("run", 30, "cpu:0");
  three.push_back("--resume");
  ShellResult more = Mpirun(3, three);
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_NE(more.output.find("the checkpoint's input positions are for 1 process, not 3"), std::string::npos)
      << more.output;
}

}  // namespace
}  // namespace tw
