// The `towerflow` command: dispatches to one subcommand per file (ops.cc, ...).
#include <cstdio>
#include <cstring>
#include <string>

#include "towerflow/cli/commands.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(stderr,
                 "usage: towerflow <command> [options]\n\n"
                 "commands:\n"
                 "  train   train a model on TFRecord files on every device (towers);\n"
                 "          progress, TensorBoard events, checkpoints, traces\n"
                 "  eval    evaluate a checkpoint on TFRecord files\n"
                 "  ops     list registered ops, their kernels and gradients;\n"
                 "          --json, --check-gradients\n"
                 "  records count|verify|show   inspect TFRecord files (CRCs, Examples as JSON)\n"
                 "  convert fashion-mnist|seed-synthetic   write datasets as TFRecord shards\n");
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "train") return tw::cli::RunTrain(argc - 1, argv + 1);
  if (cmd == "eval") return tw::cli::RunEval(argc - 1, argv + 1);
  if (cmd == "ops") return tw::cli::RunOps(argc - 1, argv + 1);
  if (cmd == "records") return tw::cli::RunRecords(argc - 1, argv + 1);
  if (cmd == "convert") return tw::cli::RunConvert(argc - 1, argv + 1);
  std::fprintf(stderr, "towerflow: unknown command '%s' (try `towerflow --help`)\n", cmd.c_str());
  return 2;
}
