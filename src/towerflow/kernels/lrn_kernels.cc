// CPU kernels of local response normalization: LRN and LRNGrad, float and
// double, over the depth (last) axis of NHWC tensors. The arithmetic, and
// its order, is lrn_args.h's (shared with the GPU twins in lrn_cuda.cu); rows
// (the positions n, h, w) are split over the intra-op pool.
#include <algorithm>
#include <cmath>
#include <vector>

#include "towerflow/kernels/lrn_args.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

// The row's norms: norm[c] = (sum of the squares of its window) * alpha + bias.
template <typename T>
void RowNorms(const T* in, int64_t depth, int64_t radius, T alpha, T bias, T* norm) {
  for (int64_t c = 0; c < depth; ++c) {
    const int64_t begin = std::max<int64_t>(0, c - radius), end = std::min<int64_t>(depth, c + radius + 1);
    T sum = T(0);
    for (int64_t k = begin; k < end; ++k) sum += in[k] * in[k];
    norm[c] = sum * alpha + bias;
  }
}

template <typename T>
T Scale(T norm, double beta) {
  if (beta == 1.0) return T(1) / norm;
  if (beta == 0.5) return T(1) / std::sqrt(norm);
  return std::exp(std::log(norm) * static_cast<T>(-beta));
}

class LrnBase : public OpKernel {
 public:
  explicit LrnBase(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, lrn::ReadAttrs(*c, &attrs_)); }

 protected:
  lrn::Attrs attrs_;
};

template <typename T>
class LrnOp : public LrnBase {
 public:
  using LrnBase::LrnBase;
  void Compute(OpKernelContext* ctx) override {
    TW_OP_REQUIRES_OK(ctx, lrn::CheckInput(ctx));
    const Tensor& input = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &out));
    const int64_t depth = input.dim(3);
    if (out->NumElements() == 0) return;
    const int64_t rows = input.NumElements() / depth;
    const T* x = input.data<T>();
    T* y = out->data<T>();
    const lrn::Attrs a = attrs_;
    ParallelFor(ctx->intra_op_pool(), rows, depth * (2 * a.depth_radius + 3), [&](int64_t b, int64_t e) {
      std::vector<T> norm(static_cast<size_t>(depth));
      for (int64_t r = b; r < e; ++r) {
        const T* in = x + r * depth;
        RowNorms(in, depth, a.depth_radius, static_cast<T>(a.alpha), static_cast<T>(a.bias), norm.data());
        for (int64_t c = 0; c < depth; ++c) y[r * depth + c] = in[c] * Scale(norm[static_cast<size_t>(c)], a.beta);
      }
    });
  }
};

// Inputs: input_grads (dy), input_image (LRN's input), output_image (its output).
template <typename T>
class LrnGradOp : public LrnBase {
 public:
  using LrnBase::LrnBase;
  void Compute(OpKernelContext* ctx) override {
    TW_OP_REQUIRES_OK(ctx, lrn::CheckGradInputs(ctx));
    const Tensor& grads = ctx->input(0);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, grads.shape(), &out));
    const int64_t depth = grads.dim(3);
    if (out->NumElements() == 0) return;
    const int64_t rows = grads.NumElements() / depth;
    const T* dy = grads.data<T>();
    const T* x = ctx->input(1).data<T>();
    const T* y = ctx->input(2).data<T>();
    T* dx = out->data<T>();
    const lrn::Attrs a = attrs_;
    const T alpha = static_cast<T>(a.alpha), beta = static_cast<T>(a.beta), bias = static_cast<T>(a.bias);
    const int64_t radius = a.depth_radius;
    ParallelFor(ctx->intra_op_pool(), rows, depth * (4 * radius + 6), [&](int64_t b, int64_t e) {
      std::vector<T> norm(static_cast<size_t>(depth));
      for (int64_t r = b; r < e; ++r) {
        const T* in = x + r * depth;
        const T* o = y + r * depth;
        const T* g = dy + r * depth;
        RowNorms(in, depth, radius, alpha, bias, norm.data());
        for (int64_t k = 0; k < depth; ++k) {
          const int64_t begin = std::max<int64_t>(0, k - radius), end = std::min<int64_t>(depth, k + radius + 1);
          T acc = T(0);
          for (int64_t j = begin; j < end; ++j) {
            const T n = norm[static_cast<size_t>(j)];
            T dyi = T(-2) * alpha * beta * in[k] * o[j] / n;
            if (j == k) dyi += Scale(n, a.beta);
            acc += dyi * g[j];
          }
          dx[r * depth + k] = acc;
        }
      }
    });
  }
};

}  // namespace

void RegisterLrnKernels(KernelRegistry& r) {
  r.RegisterTyped<LrnOp, float, double>("LRN", kDeviceCpu);
  r.RegisterTyped<LrnGradOp, float, double>("LRNGrad", kDeviceCpu);
}

}  // namespace tw
