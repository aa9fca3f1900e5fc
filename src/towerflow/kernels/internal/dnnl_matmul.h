// Internal to kernels/matmul_kernels.cc: float32 MatMul on oneDNN's matmul
// primitive (Debian's libdnnl, its JIT kernels for the machine's ISA).
//
// At the shapes of a training step (batch 100 against layers of 256 to 3136
// units) it runs 5 to 20% faster than OpenBLAS's sgemm here (bench/blas_bench,
// BM_MlpStepGemmsOneDnn against BM_MlpStepGemms), and it writes C without
// OpenBLAS's separate zeroing pass for beta = 0.
//
// Each call runs on the calling thread alone: MatMul splits the output over the
// device's intra-op threads, and the primitives are built and run with an
// OpenMP thread count of one (the caller's setting is restored), as
// dnnl_conv.h's. Primitives are cached per thread and shape (at most
// kCachedShapesPerThread, then the cache starts over), so a step's MatMuls
// build theirs once. Thread-safe.
//
// Used when oneDNN is built in (CMake TOWERFLOW_DNNL) and enabled: the
// environment variable TOWERFLOW_MATMUL=openblas turns it off for the kernels
// of sessions created afterwards (benchmarks and parity tests compare both).
#ifndef TOWERFLOW_KERNELS_INTERNAL_DNNL_MATMUL_H_
#define TOWERFLOW_KERNELS_INTERNAL_DNNL_MATMUL_H_

#include <cstdint>

namespace tw::dnnl_matmul {

inline constexpr int kCachedShapesPerThread = 64;

// oneDNN is built in and TOWERFLOW_MATMUL is not "openblas".
bool Enabled();

// Row-major C = op(A) * op(B), A m x k, B k x n, C m x n (C is overwritten).
// False, with C untouched, when oneDNN cannot run it (the caller then uses
// blas::Gemm). REQUIRES: m, n, k > 0.
bool Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace tw::dnnl_matmul

#endif  // TOWERFLOW_KERNELS_INTERNAL_DNNL_MATMUL_H_
