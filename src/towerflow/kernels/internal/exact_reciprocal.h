// When a division may run as a multiplication without changing a bit.
//
// x / d and x * (1 / d) are equal for every x (zeros, infinities, NaNs,
// subnormal and overflowing quotients included) when d is plus or minus a
// power of two and both d and 1 / d are normal numbers: 1 / d is then exact,
// both sides are the correctly rounded value of the same real quotient, and
// flushing denormals (FTZ, DAZ: denormal.h) treats both alike (a subnormal d
// would read as zero to the division alone). A vector division costs several
// multiplications (on AVX-512 about ten times the throughput cost), and the
// divisors that matter most are powers of two: the towers' mean divides by
// their count.
// Internal to kernels/.
#ifndef TOWERFLOW_KERNELS_INTERNAL_EXACT_RECIPROCAL_H_
#define TOWERFLOW_KERNELS_INTERNAL_EXACT_RECIPROCAL_H_

#include <cmath>
#include <type_traits>

namespace tw::internal {

// True when x * (1 / divisor) == x / divisor bit for bit, for every x.
template <typename T>
inline bool ReciprocalIsExact(T divisor) {
  static_assert(std::is_floating_point_v<T>);
  if (!std::isnormal(divisor)) return false;
  int exponent = 0;
  if (std::abs(std::frexp(divisor, &exponent)) != T(0.5)) return false;
  return std::isnormal(T(1) / divisor);
}

}  // namespace tw::internal

#endif  // TOWERFLOW_KERNELS_INTERNAL_EXACT_RECIPROCAL_H_
