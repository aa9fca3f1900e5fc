// The BLAS behind MatMul and the convolutions: Debian's OpenBLAS, loaded on
// first use.
//
// OpenBLAS picks its kernels from CPUID when it loads. On virtual machines that
// report a generic "Intel Xeon Processor" it falls back to its oldest (Prescott,
// SSE3) kernels and runs sgemm ten times slower than it can (measured here: 11
// against 118 GFLOP/s). towerflow therefore loads it itself (dlopen) after
// choosing OPENBLAS_CORETYPE from the CPU features the compiler runtime sees
// (AVX-512 -> SkylakeX, AVX2+FMA -> Haswell), unless the user has set
// OPENBLAS_CORETYPE. OpenBLAS runs single-threaded: towerflow splits work over
// each device's intra-op threads. Thread-safe.
#ifndef TOWERFLOW_KERNELS_BLAS_H_
#define TOWERFLOW_KERNELS_BLAS_H_

#include <cstdint>
#include <string>

#include "towerflow/core/status.h"

namespace tw::blas {

// Loads the library once; Unavailable naming what to install when it is missing.
Status Init();
// The OpenBLAS core name in use ("SkylakeX"), or "" before Init.
std::string CoreName();

// Row-major C = A(^T) * B(^T) + beta * C, A m x k, B k x n, C m x n.
// REQUIRES: Init() returned OK.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

}  // namespace tw::blas

#endif  // TOWERFLOW_KERNELS_BLAS_H_
