// CPU kernels of the random ops: RandomStandardNormal, TruncatedNormal,
// RandomUniform. Each kernel instance owns a std::mt19937_64 seeded from its
// (seed, seed2) attrs (from std::random_device when both are 0), guarded by a
// mutex since steps may run it concurrently. Samples are derived from the raw
// 64-bit words with our own transforms (not std::*_distribution, whose output
// differs between standard libraries), so a seed gives the same numbers anywhere.
#include <cmath>
#include <mutex>
#include <numbers>
#include <random>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

enum class Distribution { kNormal, kTruncatedNormal, kUniform };

class Generator {
 public:
  Generator(int64_t seed, int64_t seed2) {
    if (seed == 0 && seed2 == 0) {
      std::random_device rd;
      seed = (static_cast<int64_t>(rd()) << 32) ^ rd();
      seed2 = (static_cast<int64_t>(rd()) << 32) ^ rd();
    }
    const auto s = static_cast<uint64_t>(seed), s2 = static_cast<uint64_t>(seed2);
    std::seed_seq seq{static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32),
                      static_cast<uint32_t>(s2), static_cast<uint32_t>(s2 >> 32)};
    engine_.seed(seq);
  }

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

// The output shape from an int32/int64 vector input; InvalidArgument naming the
// node for a negative dimension or a bad input.
StatusOr<TensorShape> ShapeFromInput(const OpKernelContext& ctx) {
  const Tensor& t = ctx.input(0);
  if (t.rank() != 1) {
    return errors::InvalidArgument("shape must be a vector, got ", t.DebugString());
  }
  std::vector<int64_t> dims;
  for (int64_t k = 0; k < t.NumElements(); ++k) {
    dims.push_back(t.dtype() == kInt32 ? t.data<int32_t>()[k] : t.data<int64_t>()[k]);
  }
  return TensorShape::Make(dims);
}

template <typename T, Distribution kDist>
class RandomOp : public OpKernel {
 public:
  explicit RandomOp(OpKernelConstruction* c) : OpKernel(c), gen_(SeedOf(c, "seed"), SeedOf(c, "seed2")) {}

  void Compute(OpKernelContext* ctx) override {
    auto shape = ShapeFromInput(*ctx);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* o = out->data<T>();
    const int64_t n = out->NumElements();
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t k = 0; k < n; ++k) {
      if constexpr (kDist == Distribution::kUniform) {
        o[k] = gen_.Uniform<T>();
      } else if constexpr (kDist == Distribution::kNormal) {
        o[k] = static_cast<T>(gen_.Normal());
      } else {
        // Redraw beyond two standard deviations, as TF's TruncatedNormal does.
        double x = gen_.Normal();
        while (std::abs(x) > 2.0) x = gen_.Normal();
        o[k] = static_cast<T>(x);
      }
    }
  }

 private:
  static int64_t SeedOf(OpKernelConstruction* c, const char* attr) {
    int64_t v = 0;
    Status s = c->GetAttr(attr, &v);
    if (!s.ok()) c->SetStatus(s);
    return v;
  }

  std::mutex mu_;
  Generator gen_;  // guarded by mu_
};

template <typename T>
using RandomStandardNormalOp = RandomOp<T, Distribution::kNormal>;
template <typename T>
using TruncatedNormalOp = RandomOp<T, Distribution::kTruncatedNormal>;
template <typename T>
using RandomUniformOp = RandomOp<T, Distribution::kUniform>;

}  // namespace

void RegisterRandomKernels(KernelRegistry& r) {
  r.RegisterTyped<RandomStandardNormalOp, float, double>("RandomStandardNormal", kDeviceCpu, "dtype");
  r.RegisterTyped<TruncatedNormalOp, float, double>("TruncatedNormal", kDeviceCpu, "dtype");
  r.RegisterTyped<RandomUniformOp, float, double>("RandomUniform", kDeviceCpu, "dtype");
}

}  // namespace tw
