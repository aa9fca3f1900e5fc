// Tests that run several processes under OpenMPI's mpirun on one machine:
// MpirunCommand builds the command line (oversubscribed, so that 3 ranks run
// on 2 cores; allowed as root, as CI runs), RunShell runs it with a hard
// timeout and captures its output and exit status; RunRankProgram runs one
// DISABLED_ test of this binary on every rank.
#ifndef TOWERFLOW_DIST_MPIRUN_TEST_UTIL_H_
#define TOWERFLOW_DIST_MPIRUN_TEST_UTIL_H_

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

namespace tw::dist::testing {

struct ShellResult {
  int exit_code = -1;  // 124: the hard timeout ended it
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

// "mpirun -np N --oversubscribe ..." for `program`; `env` is a list of NAME=VALUE
// words put before mpirun (they reach every rank).
inline std::string MpirunCommand(int np, const std::string& program, const std::string& env = "") {
  return "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 " + env +
         " mpirun -np " + std::to_string(np) + " --oversubscribe --bind-to none " + program;
}

// A single-quoted shell word.
inline std::string ShellWord(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `command` with `sh -c` (stdout and stderr together), killed with
// SIGKILL after `timeout_seconds`.
inline ShellResult RunShell(const std::string& command, int timeout_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const std::string wrapped =
      "timeout -s KILL " + std::to_string(timeout_seconds) + " sh -c " + ShellWord(command) + " 2>&1";
  ShellResult r;
  FILE* pipe = ::popen(wrapped.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (r.exit_code == 137) r.exit_code = 124;  // timeout's SIGKILL
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// Runs the test `name` ("WorldRanks.DISABLED_Collectives") of this binary
// under `mpirun -np np`: every rank runs it, and mpirun's exit status says
// whether every rank passed.
inline ShellResult RunRankProgram(int np, const std::string& name, int timeout_seconds = 120) {
  const std::string self = std::filesystem::canonical("/proc/self/exe").string();
  return RunShell(
      MpirunCommand(np, self + " --gtest_color=no --gtest_also_run_disabled_tests --gtest_filter=" + name),
      timeout_seconds);
}

}  // namespace tw::dist::testing

#endif  // TOWERFLOW_DIST_MPIRUN_TEST_UTIL_H_
