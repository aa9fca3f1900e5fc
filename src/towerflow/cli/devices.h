// Where `towerflow train` puts its towers (train.cc): --devices resolved to
// canonical devices, the share of a host's cores and GPUs that each rank of a
// multi-process job takes, and the line that describes the job's world.
#ifndef TOWERFLOW_CLI_DEVICES_H_
#define TOWERFLOW_CLI_DEVICES_H_

#include <string>
#include <vector>

#include "towerflow/cli/trainer.h"
#include "towerflow/core/status.h"
#include "towerflow/dist/launch.h"
#include "towerflow/dist/world.h"

namespace tw::cli {

// The ranks of a multi-process job on this host (dist/launch.h; one without a
// launcher, or when the launcher does not say): they share its cores and GPUs.
struct HostShare {
  int local_rank = 0;
  int local_size = 1;
};
HostShare ThisHostShare(const dist::Launch& launch);

// The cores this process may use: the host's, split between its ranks (>= 1).
int CoresOfThisProcess(const HostShare& share);

// "auto": every GPU when there is one, else one virtual CPU device per core;
// "gpu": every GPU; else a list (cpu:0,cpu:1 or /gpu:0,/gpu:1). A GPU is one
// of `logical_gpus` logical GPUs of each visible physical GPU. Ranks of a job
// on one host split "auto" and "gpu" between them: its cores, or its GPUs
// (each rank its own when there are enough, else GPU local_rank modulo the
// count). Returns the canonical devices and sets how many CPU devices the
// session needs and whether any tower is on a GPU. InvalidArgument naming the
// entry for a device that does not parse or does not exist.
StatusOr<std::vector<std::string>> ResolveDevices(const std::string& flag, int logical_gpus, const HostShare& share,
                                                  int* num_cpu_devices, bool* uses_gpus);

// The job, printed once by rank 0: "world: 3 ranks on 1 host (vm: ranks
// 0-2), 2 tower(s) per rank, global batch 600 = 100 x 2 tower(s) x 3 ranks;
// input: 8 files split by rank (2-3 each)" (dist/sharding.h's split).
std::string DescribeWorld(const dist::World& world, const TrainConfig& c);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_DEVICES_H_
