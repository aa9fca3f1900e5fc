// Every flag of every `towerflow` command, given hostile values: the command
// exits 2 with a one-line message, or succeeds where the value is a documented
// one; never a signal, never a hang (a hard timeout), never more memory than a
// bound (ulimit -v). The flags are read from each command's --help, so a flag
// added later is fuzzed without a change here.
//
// Each command runs from valid base arguments with one flag replaced (or
// added); the values are the classes a hostile user tries: empty, NaN, the
// infinities, negative, zero, huge, not a number, a directory, a FIFO (fed
// garbage), /dev/zero (through a link). A success is accepted only where the table below says
// why the value is valid for that flag; a failure of the work (exit 1) only
// as DataLoss, for a data flag given bytes that are not records (a FIFO of
// garbage, /dev/zero), which is the documented status for corrupt data.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli_test_util.h"

namespace tw {
namespace {

namespace fs = std::filesystem;

// Virtual memory allowed each run (KiB): far above what these commands need
// (tens of MB) and far below what an unbounded allocation reaches. Sanitizer
// builds reserve terabytes of address space for their shadow memory at start,
// so there the bound is left to their own allocator (ASan fails an allocation
// past its limit with a report, which fails the run).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TW_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TW_SANITIZED 1
#endif
#endif
#ifdef TW_SANITIZED
constexpr const char* kMemoryLimit = "";
#else
constexpr const char* kMemoryLimit = "ulimit -v 6000000 && ";
#endif
constexpr int kTimeoutSeconds = 60;

struct Command {
  std::vector<std::string> words;  // {"records", "show"}
  std::vector<std::string> base;   // valid arguments: the command succeeds with them
};

// The long flags a --help lists ("--data", "--lr", ...), but --help itself.
std::vector<std::string> FlagsOf(const std::string& help) {
  std::set<std::string> flags;
  static const std::regex kFlag(R"(^\s+(?:-\w,\s*)?(--[a-z0-9][a-z0-9-]*))");
  std::istringstream in(help);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kFlag) && m[1] != "--help") flags.insert(m[1]);
  }
  return {flags.begin(), flags.end()};
}

class FlagFuzzTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    fs::create_directories(dir_ / "a_directory");
    fs::create_directories(dir_ / "cwd");
    // /dev/zero itself is never named: a command that wrongly replaced the file
    // it is given would replace the link, not the device.
    fs::create_symlink("/dev/zero", dir_ / "dev_zero");
    ASSERT_EQ(::mkfifo((dir_ / "a_fifo").c_str(), 0600), 0);
    testing::CliResult made = Run({"convert", "seed-synthetic", "--out", (dir_ / "data").string(), "--n-features",
                                   "4", "--examples", "64", "--shards", "1", "--seed", "1"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    data_ = (dir_ / "data" / "train-00000-of-00001.tfrecord").string();
  }

  // The command with `flag` set to `value` in place of its base value, under
  // the memory limit and the timeout.
  testing::CliResult RunWith(const Command& c, const std::string& flag, const std::string& value) {
    // Each run starts from the same files: what an earlier run made (a logdir
    // called "nan") must not turn a later value into a valid one.
    for (const char* d : {"cwd", "a_directory"}) {
      fs::remove_all(dir_ / d);
      fs::create_directories(dir_ / d);
    }
    std::vector<std::string> args = c.words;
    bool replaced = false;
    for (size_t i = 0; i < c.base.size(); ++i) {
      args.push_back(c.base[i]);
      if (c.base[i] == flag && i + 1 < c.base.size() && c.base[i + 1].rfind("--", 0) != 0) {
        args.push_back(value);
        ++i;
        replaced = true;
      }
    }
    if (!replaced) {
      args.push_back(flag);
      args.push_back(value);
    }
    // A FIFO gets a writer of garbage, gone after 5 s whether or not it was
    // read: a FIFO without one blocks its reader in open(2), as for any tool.
    const std::string fifo = (dir_ / "a_fifo").string();
    const std::string writer = value == fifo ? "(timeout -s KILL 5 sh -c 'printf garbage-bytes > " +
                                                   testing::ShellQuote(fifo) + "' 2>/dev/null &); "
                                             : "";
    // In a directory of its own: relative names ("nan") land there.
    return Run(args, writer + "cd " + testing::ShellQuote((dir_ / "cwd").string()) + " && " + kMemoryLimit +
                         "timeout -s KILL " + std::to_string(kTimeoutSeconds));
  }

  std::string data_;
};

TEST_F(FlagFuzzTest, EveryFlagOfEveryCommandRefusesHostileValuesOnOneLine) {
  const std::string logdir = (dir_ / "run").string();
  const std::string ckpt = (dir_ / "run").string();
  const std::vector<Command> commands = {
      {{"train"},
       {"--data", data_, "--logdir", logdir, "--model", "seed", "--hidden", "4", "--devices", "cpu:0", "--batch-size",
        "8", "--steps", "2", "--min-after-dequeue", "0", "--intra-op-threads", "1", "--checkpoint-every-secs", "0"}},
      {{"eval"}, {"--checkpoint", ckpt, "--data", data_, "--batch-size", "16"}},
      {{"records", "count"}, {data_}},
      {{"records", "verify"}, {data_}},
      {{"records", "show"}, {data_, "--limit", "1"}},
      {{"convert", "seed-synthetic"},
       {"--out", (dir_ / "synthetic").string(), "--n-features", "2", "--examples", "4", "--shards", "1"}},
      {{"convert", "fashion-mnist"}, {"--out", (dir_ / "fashion").string()}},
      {{"ops"}, {"--json"}},
  };
  // A checkpoint for eval to read.
  testing::CliResult trained = Run([&] {
    std::vector<std::string> a = {"train"};
    a.insert(a.end(), commands[0].base.begin(), commands[0].base.end());
    return a;
  }());
  ASSERT_EQ(trained.exit_code, 0) << trained.err;

  const std::vector<std::string> values = {"",
                                           "nan",
                                           "inf",
                                           "-inf",
                                           "-1",
                                           "0",
                                           "1e300",
                                           "99999999999999999999999",
                                           "not-a-number",
                                           (dir_ / "a_directory").string(),
                                           (dir_ / "a_fifo").string(),
                                           (dir_ / "dev_zero").string()};
  // Flags that name a file or directory to create: every plain word is a
  // valid name for one (a logdir called "nan").
  const std::set<std::string> names_something = {"train --logdir", "train --trace", "convert seed-synthetic --out",
                                                 "convert fashion-mnist --out"};
  const std::set<std::string> plain_words = {"nan", "inf", "-inf", "-1", "0", "1e300", "99999999999999999999999",
                                             "not-a-number"};
  // Numbers a training accepts that make it diverge: it stops at the first NaN
  // or infinite loss, one line and exit status 1, as documented (or ends
  // before it diverges).
  const std::set<std::string> may_diverge = {"train --lr", "train --l2"};
  // (command, flag, value) that succeed, and why that is right. Values not
  // listed must be refused.
  const std::map<std::string, std::string> valid = {
      // Periods longer than any run: never.
      {"train --checkpoint-every-secs 1e300", "no checkpoint by time (a period longer than any run)"},
      {"train --checkpoint-every-secs 99999999999999999999999", "no checkpoint by time"},
      {"train --log-every-secs 1e300", "no progress line by time"},
      {"train --log-every-secs 99999999999999999999999", "no progress line by time"},
      {"train --collective-timeout 1e300", "collectives wait forever (and one process has none)"},
      {"train --collective-timeout 99999999999999999999999", "collectives wait forever"},
      // Seeds are any integer, as TF's.
      {"train --seed -1", "any integer seeds the graph"},
      {"train --seed 0", "any integer seeds the graph"},
      {"convert seed-synthetic --seed -1", "any integer seeds the data"},
      {"convert seed-synthetic --seed 0", "any integer seeds the data"},
      {"ops --seed -1", "any integer seeds the gradient check"},
      {"ops --seed 0", "any integer seeds the gradient check"},
      // 0 means "off" or "all" where the help says so.
      {"train --l2 0", "no weight decay"},
      {"train --checkpoint-every-steps 0", "checkpoints by time only (help: 0: off)"},
      {"train --checkpoint-every-secs 0", "checkpoints by steps only (help: 0: off)"},
      {"train --log-every-secs 0", "a progress line every step"},
      {"train --collective-timeout 0", "0: collectives wait forever (help)"},
      {"train --intra-op-threads 0", "0: all cores"},
      {"train --inter-op-threads 0", "0: one per core"},
      {"train --gpu-memory-mb 0", "0: an even share (no GPU here: unused)"},
      {"train --min-after-dequeue 0", "no shuffle buffer"},
      {"eval --intra-op-threads 0", "0: all cores"},
      {"records show --limit 0", "prints nothing"},
      // A directory is what --out and --logdir name; eval takes a logdir too.
      {"train --logdir " + (dir_ / "a_directory").string(), "a logdir is a directory"},
      {"convert seed-synthetic --out " + (dir_ / "a_directory").string(), "an output directory"},
      {"convert fashion-mnist --out " + (dir_ / "a_directory").string(), "an output directory"},
  };
  // Boolean flags take no value: a value after one is an unexpected argument
  // (exit 2), which the loop checks like any other refusal.
  int runs = 0, refused = 0, succeeded = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const Command& c : commands) {
    std::vector<std::string> help_args = c.words;
    help_args.push_back("--help");
    testing::CliResult help = Run(help_args);
    ASSERT_EQ(help.exit_code, 0) << help.err;
    const std::vector<std::string> flags = FlagsOf(help.out + help.err);
    ASSERT_FALSE(flags.empty()) << help.out;
    std::string name;
    for (const std::string& w : c.words) name += (name.empty() ? "" : " ") + w;
    for (const std::string& flag : flags) {
      for (const std::string& value : values) {
        const std::string what = name + " " + flag + " " + value;
        SCOPED_TRACE(what);
        testing::CliResult r = RunWith(c, flag, value);
        ++runs;
        ASSERT_NE(r.exit_code, -1) << "killed by a signal: " << r.err;
        ASSERT_NE(r.exit_code, 137) << "ran past " << kTimeoutSeconds << " s, or past the memory bound";
        const std::string command_flag = name + " " + flag;
        if (r.exit_code == 0) {
          ++succeeded;
          const bool documented = valid.count(what) > 0 ||
                                  (names_something.count(command_flag) && plain_words.count(value)) ||
                                  may_diverge.count(command_flag);
          EXPECT_TRUE(documented) << "accepted: " << r.out.substr(0, 300);
          continue;
        }
        ++refused;
        if (r.exit_code == 1 && may_diverge.count(command_flag)) {
          EXPECT_NE(r.err.find("training diverged"), std::string::npos) << r.err;
        } else if (r.exit_code == 1) {
          EXPECT_NE(r.err.find("DataLoss"), std::string::npos) << r.err;
        } else {
          EXPECT_EQ(r.exit_code, 2) << r.err;
        }
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_LT(r.err.size(), 500u) << r.err;
      }
    }
  }
  std::printf("[ flag fuzz ] %d runs in %.1f s: %d refused with one line and status 2, %d documented successes\n",
              runs,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), refused, succeeded);
}

}  // namespace
}  // namespace tw
