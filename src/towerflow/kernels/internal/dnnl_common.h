// Internal to the oneDNN kernels (dnnl_conv.cc, dnnl_matmul.cc): the CPU
// engine and the OpenMP guard both use. Included only where oneDNN is built in.
#ifndef TOWERFLOW_KERNELS_INTERNAL_DNNL_COMMON_H_
#define TOWERFLOW_KERNELS_INTERNAL_DNNL_COMMON_H_

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace tw::dnnl_common {

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

}  // namespace tw::dnnl_common

#endif  // TOWERFLOW_KERNELS_INTERNAL_DNNL_COMMON_H_
