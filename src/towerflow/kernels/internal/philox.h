// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011): a counter-based generator. Four 32-bit words
// come from a 128-bit counter and a 64-bit key, with no state between calls,
// so any element's random word is computed directly from its index: a CPU loop
// and a CUDA thread per block of four elements draw the same numbers, which is
// what lets the GPU Dropout kernel match its CPU twin bit for bit (TF and
// PyTorch draw their dropout masks from Philox for the same reason).
//
// Compiled by the host compiler and by nvcc (host and device); internal to
// kernels/. Known-answer tests: the Random123 vectors (nn_kernels_test.cc).
#ifndef TOWERFLOW_KERNELS_INTERNAL_PHILOX_H_
#define TOWERFLOW_KERNELS_INTERNAL_PHILOX_H_

#include <cstdint>

#if defined(__CUDACC__)
#define TW_PHILOX_FN __host__ __device__ __forceinline__
#else
#define TW_PHILOX_FN inline
#endif

namespace tw::philox {

struct Words {
  uint32_t w[4];
};

// Philox4x32 with 10 rounds: counter (c0..c3), key (k0, k1) -> four words.
TW_PHILOX_FN Words Philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // key schedule (Weyl) increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return Words{{c0, c1, c2, c3}};
}

// The stream of a (seed, seed2) pair, as TF's Philox random ops lay it out:
// key = seed, counter = (block, seed2), 64 bits each, low words first. Block
// b gives the stream's words 4b .. 4b + 3.
TW_PHILOX_FN Words Block(uint64_t seed, uint64_t seed2, uint64_t block) {
  return Philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                       static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32),
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

}  // namespace tw::philox

#undef TW_PHILOX_FN

#endif  // TOWERFLOW_KERNELS_INTERNAL_PHILOX_H_
