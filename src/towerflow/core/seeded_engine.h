// SeededEngine: the seeding rule of towerflow's random streams (the random
// ops, SampleDistortedBoundingBox, shuffle queues, RandomShuffle): a std::mt19937_64 seeded
// from an op's (seed, seed2) attrs through a std::seed_seq of their four
// 32-bit halves, from std::random_device when both are 0 (TF's rule for "no
// seed"). A seed pair gives the same stream on every platform. Internal to
// the library; stateless.
#ifndef TOWERFLOW_CORE_SEEDED_ENGINE_H_
#define TOWERFLOW_CORE_SEEDED_ENGINE_H_

#include <cstdint>
#include <random>

namespace tw {

inline std::mt19937_64 SeededEngine(int64_t seed, int64_t seed2) {
  if (seed == 0 && seed2 == 0) {
    std::random_device rd;
    seed = (static_cast<int64_t>(rd()) << 32) ^ rd();
    seed2 = (static_cast<int64_t>(rd()) << 32) ^ rd();
  }
  const auto s = static_cast<uint64_t>(seed), s2 = static_cast<uint64_t>(seed2);
  std::seed_seq seq{static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(s2),
                    static_cast<uint32_t>(s2 >> 32)};
  return std::mt19937_64(seq);
}

}  // namespace tw

#endif  // TOWERFLOW_CORE_SEEDED_ENGINE_H_
