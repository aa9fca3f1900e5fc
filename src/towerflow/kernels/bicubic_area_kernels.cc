// CPU kernels of ResizeBicubic, its gradient, and ResizeArea, NHWC, in TF's
// arithmetic and order:
//  - bicubic: each output coordinate maps back (legacy: out * scale;
//    half_pixel_centers: (out + 0.5) * scale - 0.5) to an input position
//    whose fraction picks four weights from a table of 1025 samples of Keys'
//    cubic kernel (a = -0.75 legacy, -0.5 with half_pixel_centers, where taps
//    outside the image get weight 0 and the rest are renormalized; legacy
//    clamps the taps to the edge). Four rows are combined per column first,
//    then the four columns: sum of value * weight, left to right, in float.
//  - area: each output pixel is the mean of the input area it covers, cells
//    cut by its edges weighted by the covered fraction: per row the columns
//    summed, the rows weighted and summed, times 1 / (h_scale * w_scale).
// Forward rows are split over the intra-op pool; the gradient splits over
// images, each summing into its own in TF's loop order (thread-count
// independent).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/resize_args.h"

namespace tw {
namespace {

constexpr int64_t kTableSize = 1024;

// Keys' cubic convolution kernel sampled at x = i / 1024 (entry 2i) and at
// x + 1 (entry 2i + 1), for i in [0, 1024]: computed in double, stored as
// float, as TF's table.
std::vector<float> CubicTable(double a) {
  std::vector<float> t(static_cast<size_t>((kTableSize + 1) * 2));
  for (int64_t i = 0; i <= kTableSize; ++i) {
    float x = static_cast<float>(static_cast<double>(i) * 1.0 / kTableSize);
    t[static_cast<size_t>(i * 2)] = static_cast<float>(((a + 2) * x - (a + 3)) * x * x + 1);
    x = static_cast<float>(x + 1.0);
    t[static_cast<size_t>(i * 2 + 1)] = static_cast<float>(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
  }
  return t;
}

const std::vector<float>& Table(bool keys_cubic) {
  static const std::vector<float> legacy = CubicTable(-0.75f);
  static const std::vector<float> keys = CubicTable(-0.5f);
  return keys_cubic ? keys : legacy;
}

int64_t Bound(int64_t v, int64_t limit) { return std::min(limit - 1, std::max(int64_t{0}, v)); }

// The four input taps of one output coordinate and their weights.
struct Taps {
  std::array<float, 4> weight{};
  std::array<int64_t, 4> index{};
};

Taps CubicTaps(float scale, int64_t out, int64_t limit, bool half_pixel_centers) {
  const float in_f = half_pixel_centers ? (static_cast<float>(out) + 0.5f) * scale - 0.5f
                                        : static_cast<float>(out) * scale;
  const auto in = static_cast<int64_t>(std::floor(in_f));
  const float delta = in_f - static_cast<float>(in);
  const int64_t offset = std::lrint(delta * static_cast<float>(kTableSize));
  const std::vector<float>& t = Table(half_pixel_centers);
  const std::array<float, 4> w = {t[static_cast<size_t>(offset * 2 + 1)], t[static_cast<size_t>(offset * 2)],
                                  t[static_cast<size_t>((kTableSize - offset) * 2)],
                                  t[static_cast<size_t>((kTableSize - offset) * 2 + 1)]};
  Taps taps;
  for (int k = 0; k < 4; ++k) {
    taps.index[k] = Bound(in - 1 + k, limit);
    // Keys' kernel (half_pixel_centers): a tap outside the image weighs 0.
    taps.weight[k] = !half_pixel_centers || taps.index[k] == in - 1 + k ? w[k] : 0.0f;
  }
  if (half_pixel_centers) {
    const float sum = taps.weight[0] + taps.weight[1] + taps.weight[2] + taps.weight[3];
    if (std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min()) {
      const float inverse = 1.0f / sum;
      for (float& x : taps.weight) x *= inverse;
    }
  }
  return taps;
}

std::vector<Taps> AllTaps(float scale, int64_t out_size, int64_t limit, bool half_pixel_centers) {
  std::vector<Taps> v(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) v[static_cast<size_t>(i)] = CubicTaps(scale, i, limit, half_pixel_centers);
  return v;
}

// sum of value[k] * weight[k], left to right, in float.
float Interpolate(const std::array<float, 4>& w, float v0, float v1, float v2, float v3) {
  return v0 * w[0] + v1 * w[1] + v2 * w[2] + v3 * w[3];
}

template <typename T>
class ResizeBicubicOp : public resize::KernelBase {
 public:
  using KernelBase::KernelBase;

  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto g = resize::Output(ctx, attrs_, "ResizeBicubic", &out);
    TW_OP_REQUIRES_OK(ctx, g.status());
    if (out->NumElements() == 0) return;
    const std::vector<Taps> ys = AllTaps(g->h_scale, g->out_h, g->in_h, attrs_.half_pixel_centers);
    const std::vector<Taps> xs = AllTaps(g->w_scale, g->out_w, g->in_w, attrs_.half_pixel_centers);
    const T* in = ctx->input(0).data<T>();
    float* o = out->data<float>();
    const int64_t c = g->channels, row = g->in_w * c;
    ParallelFor(ctx->intra_op_pool(), g->batch * g->out_h, g->out_w * c * 32, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const Taps& y = ys[static_cast<size_t>(r % g->out_h)];
        const T* image = in + (r / g->out_h) * g->in_h * row;
        const T* rows[4] = {image + y.index[0] * row, image + y.index[1] * row, image + y.index[2] * row,
                            image + y.index[3] * row};
        float* dst = o + r * g->out_w * c;
        for (int64_t x = 0; x < g->out_w; ++x) {
          const Taps& tx = xs[static_cast<size_t>(x)];
          for (int64_t k = 0; k < c; ++k) {
            float column[4];
            for (int j = 0; j < 4; ++j) {
              const int64_t at = tx.index[j] * c + k;
              column[j] = Interpolate(y.weight, static_cast<float>(rows[0][at]), static_cast<float>(rows[1][at]),
                                      static_cast<float>(rows[2][at]), static_cast<float>(rows[3][at]));
            }
            dst[x * c + k] = Interpolate(tx.weight, column[0], column[1], column[2], column[3]);
          }
        }
      }
    });
  }
};

// Inputs: grads (float32, the resized shape), original_image (T).
template <typename T>
class ResizeBicubicGradOp : public resize::KernelBase {
 public:
  using KernelBase::KernelBase;

  void Compute(OpKernelContext* ctx) override {
    auto g = resize::GradGeometry(ctx, attrs_, "ResizeBicubicGrad");
    TW_OP_REQUIRES_OK(ctx, g.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(1).shape(), &out));
    T* o = out->data<T>();
    std::fill_n(o, out->NumElements(), T(0));
    const Tensor& grads = ctx->input(0);
    if (grads.NumElements() == 0) return;
    const std::vector<Taps> ys = AllTaps(g->h_scale, g->out_h, g->in_h, attrs_.half_pixel_centers);
    const std::vector<Taps> xs = AllTaps(g->w_scale, g->out_w, g->in_w, attrs_.half_pixel_centers);
    const float* dy = grads.data<float>();
    const int64_t c = g->channels, row = g->in_w * c;
    ParallelFor(ctx->intra_op_pool(), g->batch, g->out_h * g->out_w * c * 64, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        T* image = o + b * g->in_h * row;
        for (int64_t y = 0; y < g->out_h; ++y) {
          const Taps& ty = ys[static_cast<size_t>(y)];
          for (int64_t x = 0; x < g->out_w; ++x) {
            const Taps& tx = xs[static_cast<size_t>(x)];
            const float* grad = dy + ((b * g->out_h + y) * g->out_w + x) * c;
            for (int64_t k = 0; k < c; ++k) {
              const T v = static_cast<T>(grad[k]);
              for (int i = 0; i < 4; ++i) {
                T* dst = image + ty.index[i] * row + k;
                for (int j = 0; j < 4; ++j) {
                  dst[tx.index[j] * c] += static_cast<T>(v * static_cast<T>(ty.weight[i]) * static_cast<T>(tx.weight[j]));
                }
              }
            }
          }
        }
      }
    });
  }
};

// The input cells one output coordinate covers along an axis: [start, end),
// the first and last weighted by how much of them it covers.
struct Span {
  int64_t start = 0, end = 0;
  float start_scale = 0, end_scale = 0;
};

// How much of cell v the output range [in0, in1) covers (TF's expression).
float Coverage(int64_t v, float in0, float in1, float scale) {
  const auto fv = static_cast<float>(v);
  if (fv < in0) return static_cast<float>(v + 1) > in1 ? scale : static_cast<float>(v + 1) - in0;
  return static_cast<float>(v + 1) > in1 ? in1 - fv : 1.0f;
}

Span AreaSpan(int64_t out, float scale) {
  const float in0 = static_cast<float>(out) * scale;
  const float in1 = static_cast<float>(out + 1) * scale;
  Span s;
  s.start = static_cast<int64_t>(std::floor(in0));
  s.start_scale = Coverage(s.start, in0, in1, scale);
  s.end = static_cast<int64_t>(std::ceil(in1));
  s.end_scale = Coverage(s.end - 1, in0, in1, scale);
  return s;
}

template <typename T>
class ResizeAreaOp : public resize::KernelBase {
 public:
  explicit ResizeAreaOp(OpKernelConstruction* c) : KernelBase(c, /*has_half_pixel_centers=*/false) {}

  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto g = resize::Output(ctx, attrs_, "ResizeArea", &out);
    TW_OP_REQUIRES_OK(ctx, g.status());
    if (out->NumElements() == 0) return;
    std::vector<Span> xs(static_cast<size_t>(g->out_w));
    for (int64_t x = 0; x < g->out_w; ++x) xs[static_cast<size_t>(x)] = AreaSpan(x, g->w_scale);
    const float scale = static_cast<float>(1.0 / (g->h_scale * g->w_scale));
    const T* in = ctx->input(0).data<T>();
    float* o = out->data<float>();
    const int64_t c = g->channels, row = g->in_w * c;
    // Each output pixel reads about h_scale * w_scale cells per channel.
    const int64_t cost = static_cast<int64_t>(std::min(1e9, 4.0 + g->h_scale * g->w_scale)) * g->out_w * c;
    ParallelFor(ctx->intra_op_pool(), g->batch * g->out_h, cost, [&](int64_t begin, int64_t end) {
      std::vector<float> y_scales;
      std::vector<const T*> rows;
      for (int64_t r = begin; r < end; ++r) {
        const int64_t y = r % g->out_h;
        const T* image = in + (r / g->out_h) * g->in_h * row;
        const float in0 = static_cast<float>(y) * g->h_scale, in1 = static_cast<float>(y + 1) * g->h_scale;
        y_scales.clear();
        rows.clear();
        for (auto i = static_cast<int64_t>(std::floor(in0)); i < static_cast<int64_t>(std::ceil(in1)); ++i) {
          y_scales.push_back(Coverage(i, in0, in1, g->h_scale));
          rows.push_back(image + Bound(i, g->in_h) * row);
        }
        float* dst = o + r * g->out_w * c;
        for (int64_t x = 0; x < g->out_w; ++x) {
          const Span& s = xs[static_cast<size_t>(x)];
          for (int64_t k = 0; k < c; ++k) {
            float sum = 0;
            for (size_t i = 0; i < rows.size(); ++i) {
              const T* p = rows[i] + k;
              float sum_y = static_cast<float>(p[Bound(s.start, g->in_w) * c]) * s.start_scale;
              if (s.start + 1 != s.end) {
                for (int64_t v = s.start + 1; v < s.end - 1; ++v) sum_y += static_cast<float>(p[Bound(v, g->in_w) * c]);
                sum_y += static_cast<float>(p[Bound(s.end - 1, g->in_w) * c]) * s.end_scale;
              }
              sum += sum_y * y_scales[i];
            }
            dst[x * c + k] = sum * scale;
          }
        }
      }
    });
  }
};

}  // namespace

void RegisterBicubicAreaKernels(KernelRegistry& r) {
  r.RegisterTyped<ResizeBicubicOp, float, double, int32_t, int64_t, uint8_t>("ResizeBicubic", kDeviceCpu);
  r.RegisterTyped<ResizeBicubicGradOp, float, double>("ResizeBicubicGrad", kDeviceCpu);
  r.RegisterTyped<ResizeAreaOp, float, double, int32_t, int64_t, uint8_t>("ResizeArea", kDeviceCpu);
}

}  // namespace tw
