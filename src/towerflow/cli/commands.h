// The subcommands of the `towerflow` tool, one file each. Each takes the
// arguments after `towerflow` (argv[0] is the subcommand) and returns the exit
// status: 0 success, 1 failure of the work, 2 bad usage.
#ifndef TOWERFLOW_CLI_COMMANDS_H_
#define TOWERFLOW_CLI_COMMANDS_H_

namespace tw::cli {

int RunOps(int argc, char** argv);
int RunRecords(int argc, char** argv);
int RunConvert(int argc, char** argv);
int RunTrain(int argc, char** argv);
int RunEval(int argc, char** argv);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_COMMANDS_H_
