// CPU kernels of the random ops: RandomStandardNormal, TruncatedNormal,
// RandomUniform. Each kernel instance owns a RandomGenerator
// (internal/random_generator.h) seeded from its (seed, seed2) attrs, guarded
// by a mutex since steps may run it concurrently.
#include <cmath>
#include <mutex>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/internal/random_generator.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

enum class Distribution { kNormal, kTruncatedNormal, kUniform };

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
  RandomGenerator gen_;  // guarded by mu_
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
