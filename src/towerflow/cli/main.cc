// The `towerflow` command: dispatches to one subcommand per file (ops.cc, ...).
#include <cstdio>
#include <cstring>
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

}  // namespace

int main(int argc, char** argv) {
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
