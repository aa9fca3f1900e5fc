// World::Start over MPI (world_registry.h's StartMpiWorld): MPI_Init_thread,
// which ranks share this host, every rank's host name, and the world's
// communicators (one per channel and one for the heartbeats, dups of
// MPI_COMM_WORLD made in the same order on every rank); then the world
// itself (world_mpi.cc). None of these calls has a timeout of its own: a
// watchdog (internal/start_watchdog.h) ends the rank when some rank never
// arrives. Compiled only when towerflow is built with MPI.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "towerflow/dist/internal/collective_call.h"
#include "towerflow/dist/internal/mpi_world.h"
#include "towerflow/dist/internal/start_watchdog.h"
#include "towerflow/dist/internal/world_registry.h"

namespace tw::dist::internal {

StatusOr<std::unique_ptr<World>> StartMpiWorld(const Launch& launch, const WorldOptions& options) {
  // MPI_Init and the collectives below wait for every rank, untimed.
  const double collective = options.collective_timeout_seconds;
  const double start_limit = options.start_timeout_seconds >= 0       ? options.start_timeout_seconds
                             : collective <= 0 || collective > 1e9 ? 0
                                                                    : std::max(60.0, collective);
  StartWatchdog watchdog(launch.rank, launch.size, start_limit);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // A rank waiting in a collective gives its core away (sched_yield in
    // OpenMPI's progress loop) instead of spinning on it: its own input and
    // compute threads, and on a shared host the other ranks, need it more.
    // 2 ranks on 2 cores, MLP: the all-reduce 0.78 -> 0.26 ms a step, the
    // job 79-89k -> 104k examples/s. A setting of the user's wins.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    int provided = 0;
    TW_RETURN_IF_ERROR(MpiStatus("MPI_Init_thread", MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided)));
    if (provided < MPI_THREAD_MULTIPLE) {
      return errors::Internal("this MPI provides thread level ", provided,
                              "; towerflow needs MPI_THREAD_MULTIPLE (OpenMPI provides it)");
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != launch.size || rank != launch.rank) {
    return errors::Internal("MPI says rank ", rank, " of ", size, " but the launcher's environment says rank ",
                            launch.rank, " of ", launch.size);
  }
  MPI_Comm local;
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Comm_split_type",
                               MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local)));
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int name_len = 0;
  MPI_Get_processor_name(name, &name_len);
  std::vector<char> names(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Allgather", MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                                                              MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD)));
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) {
    const char* p = names.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    hosts.emplace_back(p, strnlen(p, MPI_MAX_PROCESSOR_NAME));
  }
  MPI_Comm channels[kNumChannels];
  for (auto& comm : channels) {
    TW_RETURN_IF_ERROR(MpiStatus("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &comm)));
  }
  MPI_Comm reports;
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &reports)));
  return NewMpiWorld(rank, size, local_rank, local_size, std::move(hosts), options, channels, reports);
}

}  // namespace tw::dist::internal
