// How a World implementation (mpi_world.cc) registers itself as
// World::Current() and is started (world.cc). Internal to dist/.
#ifndef TOWERFLOW_DIST_INTERNAL_WORLD_REGISTRY_H_
#define TOWERFLOW_DIST_INTERNAL_WORLD_REGISTRY_H_

#include <memory>

#include "towerflow/dist/launch.h"
#include "towerflow/dist/world.h"

namespace tw::dist::internal {

// Sets (or, with nullptr, clears) what World::Current() returns.
void SetCurrentWorld(World* world);

#ifdef TOWERFLOW_HAVE_MPI
// mpi_world.cc: MPI_Init_thread, the world's communicators and its
// communication thread.
StatusOr<std::unique_ptr<World>> StartMpiWorld(const Launch& launch, const WorldOptions& options);
#endif

}  // namespace tw::dist::internal

#endif  // TOWERFLOW_DIST_INTERNAL_WORLD_REGISTRY_H_
