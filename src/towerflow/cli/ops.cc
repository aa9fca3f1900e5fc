#include "towerflow/cli/commands.h"
namespace tw::cli {
int RunOps(int, char**) { return 0; }
int RunTrain(int, char**) { return 0; }
}
