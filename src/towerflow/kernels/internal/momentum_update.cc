#include "towerflow/kernels/internal/momentum_update.h"

#include "towerflow/kernels/internal/cpu_clones.h"
#include "towerflow/kernels/internal/exact_reciprocal.h"

namespace tw::momentum_update {
namespace {

// How the gradient enters: as is, divided, or multiplied by the divisor's
// reciprocal when that gives the same bits as the division.
enum class Grad { kAsIs, kDivide, kScale };

// One loop per form, the branches hoisted and the arrays unaliased, so that
// each vectorises (the update is memory-bound outside the cache).
template <typename T, Grad kGrad>
TW_CPU_CLONES void Run(T* __restrict v, T* __restrict acc, const T* __restrict g, int64_t n, T lr, T momentum,
                       bool nesterov, T divisor) {
  const T scale = T(1) / divisor;
#define TW_GRADIENT(i) \
  (kGrad == Grad::kDivide ? g[i] / divisor : kGrad == Grad::kScale ? g[i] * scale : g[i])
  if (nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      const T gi = TW_GRADIENT(i);
      const T a = acc[i] * momentum + gi;
      acc[i] = a;
      v[i] -= gi * lr + a * momentum * lr;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T a = acc[i] * momentum + TW_GRADIENT(i);
      acc[i] = a;
      v[i] -= a * lr;
    }
  }
#undef TW_GRADIENT
}

// The towers' mean divides by their count, mostly a power of two.
template <typename T>
void RunDivided(T* v, T* acc, const T* g, int64_t n, T lr, T momentum, bool nesterov, T divisor) {
  if (internal::ReciprocalIsExact(divisor)) {
    Run<T, Grad::kScale>(v, acc, g, n, lr, momentum, nesterov, divisor);
  } else {
    Run<T, Grad::kDivide>(v, acc, g, n, lr, momentum, nesterov, divisor);
  }
}

}  // namespace

void Apply(float* var, float* accum, const float* grad, int64_t n, float lr, float momentum, bool nesterov) {
  Run<float, Grad::kAsIs>(var, accum, grad, n, lr, momentum, nesterov, 1.0f);
}
void Apply(double* var, double* accum, const double* grad, int64_t n, double lr, double momentum, bool nesterov) {
  Run<double, Grad::kAsIs>(var, accum, grad, n, lr, momentum, nesterov, 1.0);
}
void ApplyDivided(float* var, float* accum, const float* grad, int64_t n, float lr, float momentum, bool nesterov,
                  float divisor) {
  RunDivided<float>(var, accum, grad, n, lr, momentum, nesterov, divisor);
}
void ApplyDivided(double* var, double* accum, const double* grad, int64_t n, double lr, double momentum,
                  bool nesterov, double divisor) {
  RunDivided<double>(var, accum, grad, n, lr, momentum, nesterov, divisor);
}

}  // namespace tw::momentum_update
