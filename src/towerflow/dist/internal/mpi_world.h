// The MPI world's two halves (internal to dist/): world_start_mpi.cc starts
// MPI and makes the communicators; world_mpi.cc is the world over them.
// Compiled only when towerflow is built with MPI.
#ifndef TOWERFLOW_DIST_INTERNAL_MPI_WORLD_H_
#define TOWERFLOW_DIST_INTERNAL_MPI_WORLD_H_

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "towerflow/dist/internal/peer_reports.h"
#include "towerflow/dist/world.h"

namespace tw::dist::internal {

// The world of this rank over `channels` (one communicator per channel) and
// `reports` (the heartbeats'), which it owns from now on; it starts its
// channel and monitor threads.
std::unique_ptr<World> NewMpiWorld(int rank, int size, int local_rank, int local_size,
                                   std::vector<std::string> hosts, const WorldOptions& options,
                                   MPI_Comm channels[kNumChannels], MPI_Comm reports);

}  // namespace tw::dist::internal

#endif  // TOWERFLOW_DIST_INTERNAL_MPI_WORLD_H_
