// Whether this process is one rank of a job started by a launcher (mpirun,
// srun, any launcher that speaks PMIx or PMI), read from the environment the
// launcher sets. Needs no MPI: a build without MPI support can still tell that
// it was launched as one of several processes and say that it cannot join them.
//
// Variables read: OpenMPI's OMPI_COMM_WORLD_SIZE / _RANK / _LOCAL_RANK /
// _LOCAL_SIZE; PMIx's PMIX_RANK (with OMPI_* or PMIX_SIZE for the size);
// MPICH/Hydra's and Slurm's PMI_SIZE / PMI_RANK. A size of one (mpirun -np 1)
// is not multi-process: training runs exactly as without a launcher.
#ifndef TOWERFLOW_DIST_LAUNCH_H_
#define TOWERFLOW_DIST_LAUNCH_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <string>

namespace tw::dist {

struct Launch {
  bool multi_process = false;  // size > 1
  int rank = 0;
  int size = 1;
  // Among the ranks on this host (-1: the launcher did not say; MPI tells).
  int local_rank = -1;
  int local_size = -1;
  std::string launcher;  // "OpenMPI", "PMIx", "PMI"; "" without a launcher
};

Launch DetectLaunch();

// True when this build can run multi-process jobs (it was built against MPI).
bool BuiltWithMpi();

}  // namespace tw::dist

#pragma GCC visibility pop

#endif  // TOWERFLOW_DIST_LAUNCH_H_
