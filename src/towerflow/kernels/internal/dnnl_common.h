// Internal to the oneDNN kernels (dnnl_conv.cc, dnnl_matmul.cc): the switch
// that turns each off, and, where oneDNN is built in, the CPU engine and the
// OpenMP guard both use.
#ifndef TOWERFLOW_KERNELS_INTERNAL_DNNL_COMMON_H_
#define TOWERFLOW_KERNELS_INTERNAL_DNNL_COMMON_H_

#include <cstdlib>
#include <cstring>

#if defined(TOWERFLOW_HAVE_DNNL)
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace tw::dnnl_common {

// oneDNN is built in and the environment variable `env` is not `off` (the
// switch benchmarks and parity tests use to compare with the other library).
inline bool EnabledUnless(const char* env, const char* off) {
#if defined(TOWERFLOW_HAVE_DNNL)
  const char* value = std::getenv(env);
  return value == nullptr || std::strcmp(value, off) != 0;
#else
  (void)env;
  (void)off;
  return false;
#endif
}

#if defined(TOWERFLOW_HAVE_DNNL)

// oneDNN runs a primitive with the OpenMP thread count in force when it was
// created, in a team started from the calling thread: one thread, for both.
// The caller's own setting (a user's thread may run a shard) is restored.
class OneOpenMpThread {
 public:
  OneOpenMpThread() : previous_(omp_get_max_threads()) {
    if (previous_ != 1) omp_set_num_threads(1);
  }
  ~OneOpenMpThread() {
    if (previous_ != 1) omp_set_num_threads(previous_);
  }
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  const int previous_;
};

// The CPU engine, created on first use and never destroyed.
inline dnnl::engine& Engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

#endif  // TOWERFLOW_HAVE_DNNL

}  // namespace tw::dnnl_common

#endif  // TOWERFLOW_KERNELS_INTERNAL_DNNL_COMMON_H_
