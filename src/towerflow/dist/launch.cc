#include "towerflow/dist/launch.h"

#include <cerrno>
#include <cstdlib>

namespace tw::dist {
namespace {

// The variable as a non-negative int; -1 when unset or not a number.
int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || errno != 0 || n < 0 || n > (1 << 24)) return -1;
  return static_cast<int>(n);
}

}  // namespace

Launch DetectLaunch() {
  Launch l;
  struct Source {
    const char* launcher;
    const char* size;
    const char* rank;
    const char* local_rank;
    const char* local_size;
  };
  static constexpr Source kSources[] = {
      {"OpenMPI", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"PMIx", "PMIX_SIZE", "PMIX_RANK", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"},
      {"PMI", "PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
  };
  for (const Source& s : kSources) {
    const int size = EnvInt(s.size), rank = EnvInt(s.rank);
    if (size < 1 || rank < 0 || rank >= size) continue;
    l.launcher = s.launcher;
    l.size = size;
    l.rank = rank;
    l.local_rank = EnvInt(s.local_rank);
    l.local_size = EnvInt(s.local_size);
    l.multi_process = size > 1;
    return l;
  }
  return l;
}

bool BuiltWithMpi() {
#ifdef TOWERFLOW_HAVE_MPI
  return true;
#else
  return false;
#endif
}

}  // namespace tw::dist
