// CPU kernels of the colour-space ops: RGBToHSV, HSVToRGB, AdjustHue,
// AdjustSaturation, and AdjustContrastv2. Pixels are the innermost dimension of 3 channels; each is
// converted on its own (split over the intra-op pool) in TF's arithmetic,
// which is not the same in the five ops:
//  - RGBToHSV: V = max, range = V - min, S = range / V (0 where V is 0),
//    H = (1 / range) * (1 / 6) times the difference of the other two channels
//    (+ 2/6 or 4/6 by which channel is the max; 0 where range is 0; + 1 where
//    negative).
//  - HSVToRGB: each channel's ramp clamp(|6H - k| ...) blended
//    ((1 - S) + S * ramp) * V.
//  - AdjustHue: hue on [0, 6) from the sorted channels (min, mid, max), the
//    delta (in turns) times 6 added and wrapped, the pixel rebuilt from the
//    same min and max.
//  - AdjustSaturation: HSV by the formulas of TF's adjust_saturation kernel
//    (1 / (6 * range), constants in double), S scaled and clamped to [0, 1],
//    back to RGB through chroma and an offset.
//  - AdjustContrastv2: per image and channel the mean over height and width
//    (summed by TF's halving folds: the second half of the rows added onto the
//    first until one row is left, then times 1 / pixels), each value moved to
//    mean + factor * (x - mean).
// Where TF's loops would spin forever (an infinite or huge hue delta) the hue
// is wrapped with fmod instead; a NaN hue gives a NaN middle channel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

// The number of RGB pixels of `input` (its last dimension 3, rank at least
// `min_rank`), or an error naming the op.
StatusOr<int64_t> Pixels(const Tensor& input, int min_rank, const char* op, bool failed_precondition) {
  if (input.rank() < min_rank) {
    return errors::InvalidArgument(op, ": input must be at least ", min_rank, "-D, got shape ",
                                   input.shape().ToString());
  }
  const int64_t channels = input.dim(input.rank() - 1);
  if (channels != 3) {
    std::string message = StrCat(op, ": input must have 3 channels but has ", channels, " channels (shape ",
                                 input.shape().ToString(), ")");
    return failed_precondition ? errors::FailedPrecondition(message) : errors::InvalidArgument(message);
  }
  return input.NumElements() / 3;
}

// Runs `pixel(in, out)` over every pixel of input 0 into output 0.
template <typename T, typename F>
void ForEachPixel(OpKernelContext* ctx, int64_t pixels, int64_t cost, F pixel) {
  Tensor* out = nullptr;
  TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
  const T* in = ctx->input(0).data<T>();
  T* o = out->data<T>();
  ParallelFor(ctx->intra_op_pool(), pixels, cost, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) pixel(in + p * 3, o + p * 3);
  });
}

template <typename T>
class RgbToHsvOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto pixels = Pixels(ctx->input(0), 1, "RGBToHSV", /*failed_precondition=*/true);
    TW_OP_REQUIRES_OK(ctx, pixels.status());
    ForEachPixel<T>(ctx, *pixels, 24, [](const T* rgb, T* hsv) {
      const T r = rgb[0], g = rgb[1], b = rgb[2];
      const T v = std::max(std::max(r, g), b);
      const T range = v - std::min(std::min(r, g), b);
      const T norm = (T(1) / range) * (T(1) / T(6));
      T h = r == v ? norm * (g - b) : g == v ? norm * (b - r) + T(2) / T(6) : norm * (r - g) + T(4) / T(6);
      if (!(range > T(0))) h = T(0);
      if (h < T(0)) h = h + T(1);
      hsv[0] = h;
      hsv[1] = v > T(0) ? range / v : T(0);
      hsv[2] = v;
    });
  }
};

// min(max(x, 0), 1) with NaN kept, as Eigen's cwiseMax(0).cwiseMin(1).
template <typename T>
T Clamp01(T x) {
  x = x < T(0) ? T(0) : x;
  return T(1) < x ? T(1) : x;
}

template <typename T>
class HsvToRgbOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto pixels = Pixels(ctx->input(0), 1, "HSVToRGB", /*failed_precondition=*/true);
    TW_OP_REQUIRES_OK(ctx, pixels.status());
    ForEachPixel<T>(ctx, *pixels, 24, [](const T* hsv, T* rgb) {
      const T h = hsv[0], s = hsv[1], v = hsv[2];
      const T dh = h * T(6);
      const T dr = Clamp01(std::abs(dh - T(3)) - T(1));
      const T dg = Clamp01(-std::abs(dh - T(2)) + T(2));
      const T db = Clamp01(-std::abs(dh - T(4)) + T(2));
      const T one_s = -s + T(1);
      rgb[0] = (one_s + s * dr) * v;
      rgb[1] = (one_s + s * dg) * v;
      rgb[2] = (one_s + s * db) * v;
    });
  }
};

// Input 1 of AdjustHue / AdjustSaturation: a float scalar.
StatusOr<float> ScalarArg(OpKernelContext* ctx, const char* op, const char* what) {
  const Tensor& t = ctx->input(1);
  if (t.rank() != 0 || t.dtype() != kFloat32) {
    return errors::InvalidArgument(op, ": ", what, " must be a float scalar, got ", t.DebugString());
  }
  return t.data<float>()[0];
}

// The hue of (r, g, b) on [0, 6) and its min and max channel, from the
// channels' order (TF's adjust_hue).
void RgbToHueRange(float r, float g, float b, float* h, float* v_min, float* v_max) {
  float v_mid;
  int category;
  if (r < g) {
    if (b < r) {
      *v_max = g, v_mid = r, *v_min = b, category = 1;
    } else if (b > g) {
      *v_max = b, v_mid = g, *v_min = r, category = 3;
    } else {
      *v_max = g, v_mid = b, *v_min = r, category = 2;
    }
  } else {
    if (b < g) {
      *v_max = r, v_mid = g, *v_min = b, category = 0;
    } else if (b > r) {
      *v_max = b, v_mid = r, *v_min = g, category = 4;
    } else {
      *v_max = r, v_mid = b, *v_min = g, category = 5;
    }
  }
  if (*v_max == *v_min) {
    *h = 0;
    return;
  }
  const float ratio = (v_mid - *v_min) / (*v_max - *v_min);
  *h = static_cast<float>(category) + ((category & 1) == 0 ? ratio : 1 - ratio);
}

void HueRangeToRgb(float h, float v_min, float v_max, float* rgb) {
  // A NaN hue falls to the last case, its mid channel NaN.
  const int category = h >= 0 && h < 6 ? static_cast<int>(h) : 5;
  float ratio = h - static_cast<float>(category);
  if ((category & 1) != 0) ratio = 1 - ratio;
  const float v_mid = v_min + ratio * (v_max - v_min);
  static constexpr int kOrder[6][3] = {{2, 1, 0}, {1, 2, 0}, {0, 2, 1}, {0, 1, 2}, {1, 0, 2}, {2, 0, 1}};
  const float levels[3] = {v_min, v_mid, v_max};
  for (int k = 0; k < 3; ++k) rgb[k] = levels[kOrder[category][k]];
}

// h + turns * 6 wrapped into [0, 6): TF's add-or-subtract loops for the
// deltas of [-1, 1] it documents, fmod beyond (where those loops would take
// long or, for huge or infinite deltas, forever).
float ShiftHue(float h, float turns) {
  constexpr float kRange = 6;
  h += turns * kRange;
  if (!std::isfinite(h)) return std::numeric_limits<float>::quiet_NaN();
  if (h < -4 * kRange || h >= 5 * kRange) h = std::fmod(h, kRange);
  while (h < 0) h += kRange;
  while (h >= kRange) h -= kRange;
  return h;
}

class AdjustHueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto pixels = Pixels(ctx->input(0), 3, "AdjustHue", false);
    TW_OP_REQUIRES_OK(ctx, pixels.status());
    auto delta = ScalarArg(ctx, "AdjustHue", "delta");
    TW_OP_REQUIRES_OK(ctx, delta.status());
    const float turns = *delta;
    ForEachPixel<float>(ctx, *pixels, 40, [turns](const float* in, float* out) {
      float h, v_min, v_max;
      RgbToHueRange(in[0], in[1], in[2], &h, &v_min, &v_max);
      HueRangeToRgb(ShiftHue(h, turns), v_min, v_max, out);
    });
  }
};

// TF's adjust_saturation kernel's RGB to HSV (its own formulas, not RGBToHSV's).
void RgbToHsv(float r, float g, float b, float* h, float* s, float* v) {
  const float vv = std::max(r, std::max(g, b));
  const float range = vv - std::min(r, std::min(g, b));
  *s = vv > 0 ? range / vv : 0;
  const float norm = 1.0f / (6.0f * range);
  float hh;
  if (r == vv) {
    hh = norm * (g - b);
  } else if (g == vv) {
    hh = static_cast<float>(norm * (b - r) + 2.0 / 6.0);
  } else {
    hh = static_cast<float>(norm * (r - g) + 4.0 / 6.0);
  }
  if (range <= 0.0) hh = 0;
  if (hh < 0.0) hh = hh + 1;
  *v = vv;
  *h = hh;
}

void HsvToRgb(float h, float s, float v, float* rgb) {
  const float c = s * v;
  const float m = v - c;
  const float dh = h * 6;
  // h is in [0, 1] or NaN here: dh's category is 0 to 6; 6 and NaN take the
  // default case (black plus m), as TF's switch does.
  const int category = dh >= 0 && dh < 7 ? static_cast<int>(dh) : 6;
  float fmodu = dh;
  if (std::isfinite(fmodu)) {
    while (fmodu <= 0) fmodu += 2.0f;
    while (fmodu >= 2.0f) fmodu -= 2.0f;
  }
  const float x = c * (1 - std::abs(fmodu - 1));
  float rr = 0, gg = 0, bb = 0;
  switch (category) {
    case 0: rr = c, gg = x, bb = 0; break;
    case 1: rr = x, gg = c, bb = 0; break;
    case 2: rr = 0, gg = c, bb = x; break;
    case 3: rr = 0, gg = x, bb = c; break;
    case 4: rr = x, gg = 0, bb = c; break;
    case 5: rr = c, gg = 0, bb = x; break;
    default: break;
  }
  rgb[0] = rr + m;
  rgb[1] = gg + m;
  rgb[2] = bb + m;
}

class AdjustSaturationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto pixels = Pixels(ctx->input(0), 3, "AdjustSaturation", false);
    TW_OP_REQUIRES_OK(ctx, pixels.status());
    auto scale = ScalarArg(ctx, "AdjustSaturation", "scale");
    TW_OP_REQUIRES_OK(ctx, scale.status());
    const float factor = *scale;
    ForEachPixel<float>(ctx, *pixels, 40, [factor](const float* in, float* out) {
      float h, s, v;
      RgbToHsv(in[0], in[1], in[2], &h, &s, &v);
      s = std::min(1.0f, std::max(0.0f, s * factor));
      HsvToRgb(h, s, v, out);
    });
  }
};

// The sum over the `pixels` rows of `channels` values in `plane`, by TF's
// folds (its order of additions, so that the mean is TF's to the bit).
void FoldedSum(const float* plane, int64_t pixels, int64_t channels, std::vector<float>& scratch, float* sum) {
  scratch.resize(static_cast<size_t>(pixels * channels));
  float* y = scratch.data();
  int64_t remaining = pixels;
  bool first = true;
  do {
    const int64_t right = remaining / 2, left = remaining - right;
    const float* from = first ? plane : y;
    for (int64_t i = 0; i < right * channels; ++i) {
      y[i] = first ? from[left * channels + i] + from[i] : y[i] + y[left * channels + i];
    }
    if (first && left > right) std::copy_n(plane + right * channels, channels, y + right * channels);
    remaining = left;
    first = false;
  } while (remaining > 1);
  std::copy_n(y, channels, sum);
}

class AdjustContrastOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    TW_OP_REQUIRES(ctx, in.rank() >= 3,
                   errors::InvalidArgument("AdjustContrastv2: input must be at least 3-D, got shape ",
                                           in.shape().ToString()));
    auto factor = ScalarArg(ctx, "AdjustContrastv2", "contrast_factor");
    TW_OP_REQUIRES_OK(ctx, factor.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    if (in.NumElements() == 0) return;  // (dims may be huge beside a 0: no products of them)
    const int64_t channels = in.dim(in.rank() - 1);
    const int64_t pixels = in.dim(in.rank() - 3) * in.dim(in.rank() - 2);
    const int64_t images = in.NumElements() / (pixels * channels);
    const float f = *factor;
    const float* x = in.data<float>();
    float* o = out->data<float>();
    ParallelFor(ctx->intra_op_pool(), images, pixels * channels * 4, [&](int64_t begin, int64_t end) {
      std::vector<float> scratch, mean(static_cast<size_t>(channels));
      for (int64_t b = begin; b < end; ++b) {
        const float* plane = x + b * pixels * channels;
        FoldedSum(plane, pixels, channels, scratch, mean.data());
        const float scaling = 1.0f / static_cast<float>(pixels);
        for (float& m : mean) m = m * scaling;
        float* dst = o + b * pixels * channels;
        for (int64_t p = 0; p < pixels; ++p) {
          for (int64_t k = 0; k < channels; ++k) {
            const float m = mean[static_cast<size_t>(k)];
            dst[p * channels + k] = m + f * (plane[p * channels + k] - m);
          }
        }
      }
    });
  }
};

}  // namespace

void RegisterColorKernels(KernelRegistry& r) {
  r.RegisterUntyped<AdjustContrastOp>("AdjustContrastv2", kDeviceCpu, "T", {kFloat32});
  r.RegisterTyped<RgbToHsvOp, float, double>("RGBToHSV", kDeviceCpu);
  r.RegisterTyped<HsvToRgbOp, float, double>("HSVToRGB", kDeviceCpu);
  r.RegisterUntyped<AdjustHueOp>("AdjustHue", kDeviceCpu, "T", {kFloat32});
  r.RegisterUntyped<AdjustSaturationOp>("AdjustSaturation", kDeviceCpu, "T", {kFloat32});
}

}  // namespace tw
