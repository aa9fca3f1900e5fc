// Dropout's random stream, shared by the CPU kernel (nn_kernels.cc) and its
// CUDA twin (nn_cuda.cu) so that both draw the same masks from the same
// (seed, seed2): element i of a call that starts at block `first` keeps its
// value when word i % 4 of Philox block first + i / 4 (philox.h) is at least
// rate * 2^32, and is then scaled by 1 / (1 - rate). Each call takes the next
// ceil(n / 4) blocks of the kernel instance's stream (so per session and
// node): a seed replays the same masks, call after call, on either device.
// Internal to kernels/. Reserve is thread-safe.
#ifndef TOWERFLOW_KERNELS_INTERNAL_DROPOUT_STREAM_H_
#define TOWERFLOW_KERNELS_INTERNAL_DROPOUT_STREAM_H_

#include <atomic>
#include <cstdint>
#include <random>

#include "towerflow/device/op_kernel.h"

namespace tw {

// What a call needs to compute its mask: plain values, passed to a CUDA kernel as they are.
struct DropoutDraw {
  uint64_t seed = 0, seed2 = 0;
  uint64_t first_block = 0;
  uint64_t threshold = 0;  // keep when the word >= threshold
};

class DropoutStream {
 public:
  // Reads the attrs rate (in [0, 1): InvalidArgument otherwise), seed and
  // seed2; both seeds 0 means "seed randomly" (TF's convention).
  explicit DropoutStream(OpKernelConstruction* c) {
    int64_t seed = 0, seed2 = 0;
    TW_OP_REQUIRES_OK(c, c->GetAttr("rate", &rate_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("seed", &seed));
    TW_OP_REQUIRES_OK(c, c->GetAttr("seed2", &seed2));
    TW_OP_REQUIRES(c, rate_ >= 0 && rate_ < 1, errors::InvalidArgument("Dropout: rate must be in [0, 1), got ", rate_));
    if (seed == 0 && seed2 == 0) {
      std::random_device rd;
      seed = static_cast<int64_t>((static_cast<uint64_t>(rd()) << 32) | rd());
      seed2 = static_cast<int64_t>((static_cast<uint64_t>(rd()) << 32) | rd());
    }
    seed_ = static_cast<uint64_t>(seed);
    seed2_ = static_cast<uint64_t>(seed2);
  }

  double rate() const { return rate_; }
  // The draw of a call over n elements: reserves its blocks of the stream.
  DropoutDraw Reserve(int64_t n) {
    DropoutDraw d;
    d.seed = seed_;
    d.seed2 = seed2_;
    d.first_block = next_block_.fetch_add(static_cast<uint64_t>((n + 3) / 4), std::memory_order_relaxed);
    d.threshold = static_cast<uint64_t>(rate_ * 4294967296.0);
    return d;
  }

 private:
  double rate_ = 0;
  uint64_t seed_ = 0, seed2_ = 0;
  std::atomic<uint64_t> next_block_{0};
};

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_INTERNAL_DROPOUT_STREAM_H_
