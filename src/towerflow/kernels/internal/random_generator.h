// RandomGenerator: the seeded stream of the CPU's random kernels (random
// ops, SampleDistortedBoundingBox): a std::mt19937_64 seeded by
// core/seeded_engine.h's rule from an op's (seed, seed2) attrs. Samples are
// derived from the raw 64-bit words with our own transforms (not
// std::*_distribution, whose output differs between standard libraries), so
// a seed gives the same numbers anywhere. Not thread-safe:
// kernels guard theirs with a mutex. Internal to kernels/.
#ifndef TOWERFLOW_KERNELS_INTERNAL_RANDOM_GENERATOR_H_
#define TOWERFLOW_KERNELS_INTERNAL_RANDOM_GENERATOR_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <type_traits>

#include "towerflow/core/seeded_engine.h"

namespace tw {

class RandomGenerator {
 public:
  RandomGenerator(int64_t seed, int64_t seed2) : engine_(SeededEngine(seed, seed2)) {}

  // Uniform in [0, 1) with every value exactly representable in T, so a float
  // never rounds up to 1.
  template <typename T>
  T Uniform() {
    if constexpr (std::is_same_v<T, float>) {
      return static_cast<float>(engine_() >> 40) * 0x1.0p-24f;
    } else {
      return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    }
  }

  // Uniform in [0, n) for n > 0, without modulo bias (a word in the last
  // partial block of n is drawn again).
  uint64_t UniformInt(uint64_t n) {
    const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
    uint64_t w = engine_();
    while (w >= limit) w = engine_();
    return w % n;
  }

  // Standard normal by the Box-Muller transform; the second value of each pair
  // is kept for the next call.
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    // u1 in (0, 1] keeps log(u1) finite.
    const double u1 = 1.0 - Uniform<double>();
    const double u2 = Uniform<double>();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_INTERNAL_RANDOM_GENERATOR_H_
