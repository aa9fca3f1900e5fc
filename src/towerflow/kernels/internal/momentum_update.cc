#include "towerflow/kernels/internal/momentum_update.h"

#include "towerflow/kernels/internal/cpu_clones.h"

namespace tw::momentum_update {
namespace {

// One loop per form, the branches hoisted and the arrays unaliased, so that
// each vectorises (the update is memory-bound outside the cache).
template <typename T, bool kDivide>
TW_CPU_CLONES void Run(T* __restrict v, T* __restrict acc, const T* __restrict g, int64_t n, T lr, T momentum,
                       bool nesterov, T divisor) {
  if (nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      const T gi = kDivide ? g[i] / divisor : g[i];
      const T a = acc[i] * momentum + gi;
      acc[i] = a;
      v[i] -= gi * lr + a * momentum * lr;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T a = acc[i] * momentum + (kDivide ? g[i] / divisor : g[i]);
      acc[i] = a;
      v[i] -= a * lr;
    }
  }
}

}  // namespace

void Apply(float* var, float* accum, const float* grad, int64_t n, float lr, float momentum, bool nesterov) {
  Run<float, false>(var, accum, grad, n, lr, momentum, nesterov, 1.0f);
}
void Apply(double* var, double* accum, const double* grad, int64_t n, double lr, double momentum, bool nesterov) {
  Run<double, false>(var, accum, grad, n, lr, momentum, nesterov, 1.0);
}
void ApplyDivided(float* var, float* accum, const float* grad, int64_t n, float lr, float momentum, bool nesterov,
                  float divisor) {
  Run<float, true>(var, accum, grad, n, lr, momentum, nesterov, divisor);
}
void ApplyDivided(double* var, double* accum, const double* grad, int64_t n, double lr, double momentum,
                  bool nesterov, double divisor) {
  Run<double, true>(var, accum, grad, n, lr, momentum, nesterov, divisor);
}

}  // namespace tw::momentum_update
