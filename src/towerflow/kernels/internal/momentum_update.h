// ApplyMomentum's arithmetic over contiguous elements, shared by the
// ApplyMomentum kernel (training_kernels.cc) and the fused updates
// (momentum_fusions.cc) so that every path computes an element the same way,
// in TF's order (tensorflow/core/kernels/training_ops.cc):
//
//   accum = accum * momentum + g
//   var  -= accum * lr                                  (plain)
//   var  -= g * lr + accum * momentum * lr              (Nesterov)
//
// where g is grad[i], or grad[i] / divisor for the Divided form (the towers'
// averaged gradient, divided as the Div kernel divides: bit for bit, also
// where a power-of-two divisor is applied as a multiplication by its exact
// reciprocal, exact_reciprocal.h). Compiled for the
// host's widest vectors (cpu_clones.h), the same bits on every clone.
// Internal to kernels/. REQUIRES: the three arrays do not overlap.
#ifndef TOWERFLOW_KERNELS_INTERNAL_MOMENTUM_UPDATE_H_
#define TOWERFLOW_KERNELS_INTERNAL_MOMENTUM_UPDATE_H_

#include <cstdint>

namespace tw::momentum_update {

void Apply(float* var, float* accum, const float* grad, int64_t n, float lr, float momentum, bool nesterov);
void Apply(double* var, double* accum, const double* grad, int64_t n, double lr, double momentum, bool nesterov);

void ApplyDivided(float* var, float* accum, const float* grad, int64_t n, float lr, float momentum, bool nesterov,
                  float divisor);
void ApplyDivided(double* var, double* accum, const double* grad, int64_t n, double lr, double momentum,
                  bool nesterov, double divisor);

}  // namespace tw::momentum_update

#endif  // TOWERFLOW_KERNELS_INTERNAL_MOMENTUM_UPDATE_H_
