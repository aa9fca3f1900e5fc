#include "towerflow/dist/world.h"

#include <mutex>

#include "towerflow/dist/internal/world_registry.h"
#include "towerflow/dist/launch.h"

namespace tw::dist {
namespace {

std::atomic<World*> g_current{nullptr};
std::mutex g_start_mu;
// The started world lives until the process ends (Finalize leaves the job but
// keeps the object, which a late reader of Current() may still hold).
std::unique_ptr<World>& Started() {
  static auto* world = new std::unique_ptr<World>();
  return *world;
}

}  // namespace

const char* ChannelName(Channel c) {
  switch (c) {
    case Channel::kControl:
      return "control";
    case Channel::kGradients:
      return "gradients";
  }
  return "?";
}

namespace internal {
void SetCurrentWorld(World* world) { g_current.store(world, std::memory_order_release); }
}  // namespace internal

World* World::Current() { return g_current.load(std::memory_order_acquire); }

StatusOr<World*> World::Start(const WorldOptions& options) {
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (Started()) return errors::AlreadyExists("the multi-process world was started before");
  const Launch launch = DetectLaunch();
  if (!launch.multi_process) {
    return errors::FailedPrecondition("this process was not launched as one of several (mpirun -np N sets ",
                                      "OMPI_COMM_WORLD_SIZE; none of the launcher variables is set above 1)");
  }
#ifdef TOWERFLOW_HAVE_MPI
  if (options.collective_timeout_seconds < 0) {
    return errors::InvalidArgument("collective timeout ", options.collective_timeout_seconds, " s is negative");
  }
  TW_ASSIGN_OR_RETURN(std::unique_ptr<World> world, internal::StartMpiWorld(launch, options));
  Started() = std::move(world);
  internal::SetCurrentWorld(Started().get());
  return Started().get();
#else
  return errors::FailedPrecondition("launched as rank ", launch.rank, " of ", launch.size, " by ", launch.launcher,
                                    ", but this towerflow was built without MPI support: install libopenmpi-dev ",
                                    "and rebuild (cmake -DTOWERFLOW_MPI=ON), or run one process without mpirun");
#endif
}

}  // namespace tw::dist
