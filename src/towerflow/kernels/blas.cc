#include "towerflow/kernels/blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "towerflow/core/logging.h"

namespace tw::blas {
namespace {

// cblas.h's enums, as plain ints: the library is loaded at run time, not linked.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int,
                         double, double*, int);
using SetThreadsFn = void (*)(int);
using CoreNameFn = char* (*)();

struct Library {
  Status status;
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  std::string core;
};

// The OpenBLAS kernel set for this CPU when CPUID-based detection cannot be
// trusted; empty to let OpenBLAS decide.
const char* CoreTypeFor() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
    return "SkylakeX";  // measured best of SkylakeX/Cooperlake/SapphireRapids here
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

const Library& Load() {
  static Library* lib = [] {
    auto* l = new Library();
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    if (forced == nullptr || *forced == '\0') {
      const char* core = CoreTypeFor();
      if (*core) setenv("OPENBLAS_CORETYPE", core, 0);
    }
    // OpenBLAS starts its own threads only when asked for more than one.
    if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) setenv("OPENBLAS_NUM_THREADS", "1", 0);
    void* h = nullptr;
    for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
      h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (h) break;
    }
    if (h == nullptr) {
      l->status = errors::Unavailable("cannot load OpenBLAS (", dlerror(),
                                      "); install Debian's libopenblas0-pthread (scripts/setup does)");
      return l;
    }
    l->sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
    l->dgemm = reinterpret_cast<DgemmFn>(dlsym(h, "cblas_dgemm"));
    auto set_threads = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
    auto core_name = reinterpret_cast<CoreNameFn>(dlsym(h, "openblas_get_corename"));
    if (!l->sgemm || !l->dgemm) {
      l->status = errors::Unavailable("the loaded BLAS has no cblas_sgemm/cblas_dgemm");
      return l;
    }
    if (set_threads) set_threads(1);
    if (core_name) l->core = core_name();
    TW_LOG(INFO) << "OpenBLAS loaded, core " << l->core;
    return l;
  }();
  return *lib;
}

}  // namespace

Status Init() { return Load().status; }
std::string CoreName() { return Load().core; }

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  Load().sgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, static_cast<int>(m),
               static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b,
               static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc) {
  Load().dgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, static_cast<int>(m),
               static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b,
               static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

}  // namespace tw::blas
