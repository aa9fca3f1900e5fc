// Shared by the end-to-end tests that run the built `towerflow` binary
// (build/bin/towerflow, found next to the test's build/tests/): a fixture with
// a fresh temporary directory per test and Run(), which runs the binary with
// arguments through the shell and captures exit status, stdout and stderr.
#ifndef TOWERFLOW_TESTS_CLI_TEST_UTIL_H_
#define TOWERFLOW_TESTS_CLI_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tw::testing {

namespace fs = std::filesystem;

struct CliResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
};

inline fs::path CliBinary() {
  return fs::canonical("/proc/self/exe").parent_path().parent_path() / "bin" / "towerflow";
}

inline std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A single-quoted shell word.
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("tw_cli_") + info->test_suite_name() + "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_TRUE(fs::exists(CliBinary())) << CliBinary() << " is missing: build the towerflow_cli target first";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `prefix` runs before the binary (e.g. "timeout -s INT 2").
  CliResult Run(const std::vector<std::string>& args, const std::string& prefix = "") {
    std::string cmd = prefix.empty() ? "" : prefix + " ";
    cmd += ShellQuote(CliBinary().string());
    for (const auto& a : args) cmd.append(" ").append(ShellQuote(a));
    const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    cmd.append(" > ").append(ShellQuote(out.string())).append(" 2> ").append(ShellQuote(err.string()));
    const int status = std::system(cmd.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    return r;
  }

  fs::path dir_;
};

}  // namespace tw::testing

#endif  // TOWERFLOW_TESTS_CLI_TEST_UTIL_H_
