// Checkpoints survive SIGKILL (issue 8, item 4): a process killed at a random
// moment while it writes checkpoints always leaves the newest checkpoint that
// it finished loadable and whole, and `towerflow train --resume` goes on from it.
// A checkpoint whose tensor bytes are then damaged is rejected by its CRC32C and
// the one before it restored.
//
// Library: a forked child fills every variable of a ~4 MB model with the step
// number and saves it through Saver + CheckpointManager (keep 3), step after
// step, telling the parent on a pipe each step it finished; the parent kills it
// with SIGKILL after a random delay (seeded), then restores the directory with
// RestoreLatest in a fresh session: the restore must succeed, reject nothing,
// give a step the child finished (or the one it was writing, if only the index
// update remained), and every variable must hold exactly that step. Leftover
// "*.tmp-<pid>" files of the killed writers are ignored. The next trial's child
// goes on in the same directory from the restored step, as a resumed run does.
//
// CLI: `towerflow train --checkpoint-every-steps 1` is killed at random moments;
// then `towerflow train --resume` must restore the newest checkpoint in the
// index, say so, and train on to its target.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "towerflow/towerflow.h"

namespace tw {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Reads what is available on `fd` (non-blocking) and appends it to *text.
void Drain(int fd, std::string* text) {
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return;
    text->append(buf, static_cast<size_t>(n));
  }
}

// The last number on a line of `text` that starts with `tag` (-1 if none).
int64_t LastTagged(const std::string& text, const std::string& tag) {
  int64_t last = -1;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(tag, 0) == 0 && line.size() > tag.size()) last = std::stoll(line.substr(tag.size()));
  }
  return last;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A model of 4 float variables of 1 MiB each and an int64 "step"; `set` fills
// every float with the fed step and `step` with it too.
struct Model {
  Graph graph;
  std::vector<Variable> weights;
  Variable step;
  Output value;  // float scalar placeholder
  Node* set = nullptr;
  Node* init = nullptr;
  std::unique_ptr<train::Saver> saver;
};

std::unique_ptr<Model> BuildModel() {
  auto m = std::make_unique<Model>();
  Scope root(m->graph);
  m->value = Placeholder(root.WithOpName("value"), kFloat32, PartialShape({}));
  std::vector<Output> sets;
  for (int i = 0; i < 4; ++i) {
    Variable v = GetVariable(root, StrCat("layer", i, "/kernel"), TensorShape{256, 1024},
                             {.initializer = ZerosInitializer()});
    sets.push_back(Assign(root, v, Fill(root, Const(root, std::vector<int32_t>{256, 1024}), m->value)));
    m->weights.push_back(v);
  }
  m->step = GetVariable(root, "step", TensorShape{}, {.dtype = kInt64, .initializer = ZerosInitializer()});
  sets.push_back(Assign(root, m->step, Cast(root, m->value, kInt64)));
  m->set = Group(root.WithOpName("set"), sets);
  m->init = GlobalVariablesInitializer(m->graph);
  m->saver = std::make_unique<train::Saver>(root);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  return m;
}

SessionOptions OneThread() { return {.inter_op_threads = 1, .intra_op_threads = 1}; }

// The child: saves steps first, first + 1, ... until killed. Writes "ready" when
// its session is set up and "saved N" after each Save returned.
[[noreturn]] void SaveForever(Model& m, const std::string& dir, int64_t first, int fd) {
  auto say = [fd](const std::string& line) {
    if (write(fd, line.data(), line.size()) < 0) _exit(3);
  };
  Session session(m.graph, OneThread());
  if (!session.Run(m.init).ok()) _exit(2);
  train::CheckpointManager manager(dir, 3);
  say("ready\n");
  for (int64_t step = first;; ++step) {
    if (!session.Run({{m.value, Tensor::Scalar<float>(static_cast<float>(step))}}, {}, {m.set}).ok())
      _exit(2);
    auto saved = manager.Save(session, *m.saver, step);
    if (!saved.ok()) {
      say("error " + saved.status().ToString() + "\n");
      _exit(1);
    }
    say(StrCat("saved ", step, "\n"));
  }
}

TEST(CheckpointKillTest, SigkillDuringSavesNeverLosesTheNewestFinishedCheckpoint) {
  constexpr int kTrials = 100;
  const std::string dir = (fs::path(::testing::TempDir()) / StrCat("tw_ckpt_kill_", ::getpid())).string();
  fs::remove_all(dir);
  std::unique_ptr<Model> model = BuildModel();
  std::mt19937 rng(20240611);
  int64_t next = 1;            // the step the next child starts from
  int64_t restored_last = -1;  // the step restored after the last trial (-1: none yet)
  double save_seconds = 0.05;  // measured on the first trial
  int index_in_place = 0, killed_in_write = 0, corrupted_trials = 0;
  std::set<int64_t> corrupted;  // steps whose newest file was damaged and not saved again since
  const Clock::time_point start = Clock::now();
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE(StrCat("trial ", trial));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::fflush(nullptr);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      SaveForever(*model, dir, next, fds[1]);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    std::string text;
    // Wait for the child's session, then kill it after a random delay of up to
    // five saves (the first trial lets it finish a few saves to time them).
    const Clock::time_point spawned = Clock::now();
    while (text.find("ready\n") == std::string::npos && SecondsSince(spawned) < 30) {
      Drain(fds[0], &text);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_NE(text.find("ready\n"), std::string::npos) << text;
    const Clock::time_point ready = Clock::now();
    if (trial == 0) {
      while (LastTagged(text, "saved ") < next + 3 && SecondsSince(ready) < 30) {
        Drain(fds[0], &text);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      save_seconds = SecondsSince(ready) / 4;
    } else {
      const double delay = std::uniform_real_distribution<double>(0, 5 * save_seconds)(rng);
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    Drain(fds[0], &text);
    close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child ended by itself: " << text;
    ASSERT_EQ(text.find("error"), std::string::npos) << text;

    // What the child finished, and what it may have been finishing.
    const int64_t saved = LastTagged(text, "saved ");
    for (int64_t step = next; step <= saved; ++step) corrupted.erase(step);  // saved again, whole
    const int64_t finished = saved >= 0 ? saved : restored_last;
    const int64_t writing = (saved >= 0 ? saved : next - 1) + 1;
    if (saved < 0 && restored_last < 0) {
      // Killed before its first checkpoint ever: nothing to restore, or the one it was writing.
      Session session(model->graph, OneThread());
      auto r = train::CheckpointManager(dir, 3).RestoreLatest(session, *model->saver);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), Code::kNotFound) << r.status().ToString();
        continue;
      }
    }
    Session session(model->graph, OneThread());
    ASSERT_TRUE(session.Run(model->init).ok());
    train::CheckpointManager manager(dir, 3);
    // Every fourth trial, one byte of the newest checkpoint's tensor data is
    // flipped as well (a bad disk, a bad copy): its CRC32C must reject it and
    // the one before it must be restored, whole.
    int64_t corrupted_step = -1, previous_step = -1;
    if (trial % 4 == 3 && manager.Checkpoints().size() >= 2) {
      const std::vector<std::string> kept = manager.Checkpoints();
      const std::string newest = kept.back();
      std::string bytes = ReadAll(newest);
      uint64_t header = 0;
      std::memcpy(&header, bytes.data(), sizeof(header));
      const size_t at = std::uniform_int_distribution<size_t>(8 + header, bytes.size() - 1)(rng);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
      std::ofstream(newest, std::ios::binary | std::ios::trunc) << bytes;
      corrupted_step = *manager.StepOf(fs::path(newest).filename().string());
      previous_step = *manager.StepOf(fs::path(kept[kept.size() - 2]).filename().string());
      ++corrupted_trials;
      corrupted.insert(corrupted_step);
    }
    auto restored = manager.RestoreLatest(session, *model->saver);
    ASSERT_TRUE(restored.ok()) << restored.status().ToString() << "\nchild: " << text;
    if (corrupted_step >= 0) {
      ASSERT_EQ(restored->rejected.size(), 1u);
      EXPECT_EQ(restored->rejected[0].code(), Code::kDataLoss) << restored->rejected[0].ToString();
      EXPECT_NE(restored->rejected[0].message().find("the data is corrupt"), std::string::npos)
          << restored->rejected[0].ToString();
      EXPECT_EQ(restored->step, previous_step) << "step " << corrupted_step << " was corrupted";
    } else {
      // Only a checkpoint corrupted in an earlier trial, and not yet saved
      // again, may be rejected.
      for (const Status& r : restored->rejected) {
        EXPECT_EQ(r.code(), Code::kDataLoss) << r.ToString();
        bool earlier = false;
        for (int64_t step : corrupted) earlier |= r.message().find(StrCat("ckpt-", step, ".safetensors")) != std::string::npos;
        EXPECT_TRUE(earlier) << r.ToString();
      }
      EXPECT_GE(restored->step, finished) << text;
      EXPECT_LE(restored->step, writing) << text;
      if (restored->step == writing) ++index_in_place;  // killed after the index's rename, before the report
    }
    EXPECT_LE(manager.Checkpoints().size(), 3u);
    // Every variable holds the step, in every element: a whole checkpoint.
    std::vector<Output> fetches;
    for (const Variable& v : model->weights) fetches.push_back(v.value);
    fetches.push_back(model->step.value);
    auto values = session.Run(fetches);
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    for (size_t i = 0; i + 1 < values->size(); ++i) {
      const auto flat = (*values)[i].flat<float>();
      int64_t wrong = 0;
      for (float f : flat) wrong += f != static_cast<float>(restored->step);
      EXPECT_EQ(wrong, 0) << model->weights[i].name << " is not all " << restored->step;
    }
    EXPECT_EQ(values->back().scalar<int64_t>(), restored->step);
    // A file "<name>.tmp-<pid>" of this child: it was killed inside a write.
    const std::string mine = StrCat(".tmp-", pid);
    bool left_tmp = false;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      left_tmp |=
          name.size() > mine.size() && name.compare(name.size() - mine.size(), mine.size(), mine) == 0;
    }
    killed_in_write += left_tmp;
    restored_last = restored->step;
    next = restored->step + 1;
  }
  std::printf(
      "[ checkpoint kill ] %d trials in %.1f s, one save %.1f ms: %d kills landed inside a file write "
      "(a tmp file left), %d after the index's rename but before the save returned (that step restored); "
      "%d with a flipped byte in the newest checkpoint (rejected by its CRC32C, the one before restored); "
      "every restore whole; last step %lld\n",
      kTrials, SecondsSince(start), save_seconds * 1000, killed_in_write, index_in_place, corrupted_trials,
      static_cast<long long>(restored_last));
  fs::remove_all(dir);
}

// ---- The CLI ---------------------------------------------------------------------

fs::path Binary() {
  return fs::canonical("/proc/self/exe").parent_path().parent_path() / "bin" / "towerflow";
}


// Starts the binary with `args`, stdout and stderr to files; returns its pid.
pid_t Spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  std::vector<std::string> argv = {Binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` at most `seconds`; kills it after that. The exit code, or
// 128 + the signal.
int Wait(pid_t pid, double seconds) {
  const Clock::time_point start = Clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (SecondsSince(start) > seconds) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CheckpointKillCliTest, TrainKilledAtRandomResumesFromTheNewestCheckpoint) {
  constexpr int kTrials = 10;
  ASSERT_TRUE(fs::exists(Binary())) << Binary() << " is missing: build the towerflow_cli target first";
  const fs::path dir = fs::path(::testing::TempDir()) / StrCat("tw_ckpt_kill_cli_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "stdout", err = dir / "stderr";
  pid_t pid = Spawn({"convert", "seed-synthetic", "--out", (dir / "data").string(), "--n-features", "8",
                     "--examples", "2000", "--shards", "2", "--seed", "3"},
                    out, err);
  ASSERT_EQ(Wait(pid, 60), 0) << ReadAll(err);
  const std::string logdir = (dir / "run").string();
  auto args = [&](int64_t steps, bool resume) {
    std::vector<std::string> a = {"train",
                                  "--data",
                                  (dir / "data" / "train-*.tfrecord").string(),
                                  "--model",
                                  "seed",
                                  "--hidden",
                                  "256,256",
                                  "--devices",
                                  "cpu:0",
                                  "--batch-size",
                                  "32",
                                  "--steps",
                                  std::to_string(steps),
                                  "--logdir",
                                  logdir,
                                  "--seed",
                                  "7",
                                  "--min-after-dequeue",
                                  "100",
                                  "--intra-op-threads",
                                  "1",
                                  "--checkpoint-every-steps",
                                  "1",
                                  "--keep-checkpoints",
                                  "3",
                                  "--summary-every-steps",
                                  "10"};
    if (resume) a.push_back("--resume");
    return a;
  };
  std::mt19937 rng(7);
  const Clock::time_point start = Clock::now();
  int64_t global_step = 0;
  int kills_with_checkpoint = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE(StrCat("trial ", trial));
    // Killed somewhere in start-up, training or a checkpoint write.
    pid = Spawn(args(1'000'000, trial > 0), out, err);
    const double delay = std::uniform_real_distribution<double>(0.3, 1.5)(rng);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    ASSERT_EQ(Wait(pid, 30), 128 + SIGKILL) << ReadAll(out) << ReadAll(err);

    // The newest checkpoint the index names, and its global step.
    train::CheckpointManager manager(logdir, 3);
    const std::vector<std::string> kept = manager.Checkpoints();
    int64_t newest = global_step;
    if (!kept.empty()) {
      auto file = train::ReadSafetensors(kept.back());
      ASSERT_TRUE(file.ok()) << file.status().ToString();  // complete, never partial
      ASSERT_NE(file->Find("global_step"), nullptr);
      newest = file->Find("global_step")->scalar<int64_t>();
      EXPECT_GE(newest, global_step);  // nothing saved before is lost
      ++kills_with_checkpoint;
    }
    // --resume goes on from it, for 3 more steps.
    pid = Spawn(args(newest + 3, true), out, err);
    ASSERT_EQ(Wait(pid, 60), 0) << ReadAll(out) << ReadAll(err);
    const std::string text = ReadAll(out);
    if (!kept.empty()) {
      EXPECT_NE(text.find(StrCat("resume: restored ", kept.back(), " (global step ", newest, ")")),
                std::string::npos)
          << text;
    }
    EXPECT_NE(text.find(StrCat("\"global_step\": ", newest + 3)), std::string::npos) << text;
    global_step = newest + 3;
  }
  std::printf(
      "[ checkpoint kill cli ] %d trials in %.1f s, %d killed after a checkpoint existed; "
      "final global step %lld\n",
      kTrials, SecondsSince(start), kills_with_checkpoint, static_cast<long long>(global_step));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tw
