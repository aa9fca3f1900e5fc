// c = op(a) op(b) on the calling thread, row-major, as MatMul's CPU kernel
// computes it: oneDNN's matmul for float where `use_dnnl`
// (dnnl_matmul::Enabled(): faster at a training step's shapes), else BLAS
// (blas.h). MatMul (matmul_kernels.cc) and the fused MatMul -> ApplyMomentum
// (momentum_fusions.cc) share it, so both compute an element the same way.
// Internal to kernels/. Thread-safe.
#ifndef TOWERFLOW_KERNELS_INTERNAL_CPU_GEMM_H_
#define TOWERFLOW_KERNELS_INTERNAL_CPU_GEMM_H_

#include <cstdint>
#include <type_traits>

#include "towerflow/kernels/blas.h"
#include "towerflow/kernels/internal/dnnl_matmul.h"

namespace tw {

template <typename T>
void CpuGemm(bool use_dnnl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
             int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_dnnl && dnnl_matmul::Gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc)) return;
  }
  blas::Gemm(ta, tb, m, n, k, a, lda, b, ldb, T(0), c, ldc);
}

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_INTERNAL_CPU_GEMM_H_
