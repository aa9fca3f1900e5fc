// The `towerflow` command: dispatches to one subcommand per file (ops.cc, ...).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "towerflow/cli/commands.h"

namespace {

constexpr char kUsage[] =
    "usage: towerflow <command> [options]\n"
    "       towerflow <command> --help    a command's options\n\n"
    "commands:\n"
    "  train   train a model on TFRecord files on every device (towers);\n"
    "          progress, TensorBoard events, checkpoints, traces\n"
    "  eval    evaluate a checkpoint on TFRecord files\n"
    "  ops     list registered ops, their kernels and gradients;\n"
    "          --json, --check-gradients\n"
    "  records count|verify|show   inspect TFRecord files (CRCs, Examples as JSON)\n"
    "  convert fashion-mnist|seed-synthetic   write datasets as TFRecord shards\n";

// Out of memory anywhere (a thread of the input pipeline growing a buffer,
// a kernel): one line and status 1, where std::terminate would abort with
// "terminate called after throwing an instance of 'std::bad_alloc'" (status
// 134). Nothing is lost: checkpoints and events are written whole, then
// renamed. No allocation here, and write(2) only.
[[noreturn]] void OutOfMemory() {
  static constexpr char kMessage[] =
      "towerflow: ResourceExhausted: out of memory: the system refused an allocation (this machine's memory, or a "
      "limit such as ulimit -v); a smaller --batch-size, --min-after-dequeue or model needs less\n";
  ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::set_new_handler(OutOfMemory);
  // Asked for, the usage goes to stdout (help2man makes the man page from it);
  // a missing command is an error: the usage on stderr, exit 2.
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("towerflow %s\n", TOWERFLOW_VERSION);
    return 0;
  }
  if (cmd == "train") return tw::cli::RunTrain(argc - 1, argv + 1);
  if (cmd == "eval") return tw::cli::RunEval(argc - 1, argv + 1);
  if (cmd == "ops") return tw::cli::RunOps(argc - 1, argv + 1);
  if (cmd == "records") return tw::cli::RunRecords(argc - 1, argv + 1);
  if (cmd == "convert") return tw::cli::RunConvert(argc - 1, argv + 1);
  std::fprintf(stderr, "towerflow: unknown command '%s' (try `towerflow --help`)\n", cmd.c_str());
  return 2;
}
