#include "towerflow/kernels/internal/direct_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tw::direct_conv {

bool Enabled() {
  static const bool cpu = __builtin_cpu_supports("avx512f");
  const char* env = std::getenv("TOWERFLOW_CONV");
  return cpu && (env == nullptr || std::strcmp(env, "direct") == 0);
}

bool Supports(const conv::ConvGeometry& g) {
  return g.sh == 1 && g.sw == 1 && g.c >= 1 && g.c <= 4 && g.o > 0 && g.o % 16 == 0 && g.kh > 0 && g.kw > 0 &&
         g.oh > 0 && g.ow > 0;
}

namespace {

// Output pixels per block: a row's last block computes a full block (reading
// zero padding past the row) and stores the pixels that exist.
constexpr int64_t kMaxPixels = 16;

// The padded image: every window of the output, and of a row's last block,
// lies inside it, so the loops need no bounds checks.
int64_t PaddedRows(const conv::ConvGeometry& g) { return g.oh + g.kh - 1; }
int64_t PaddedCols(const conv::ConvGeometry& g) { return g.ow + kMaxPixels - 1 + g.kw - 1; }

void PadImage(const conv::ConvGeometry& g, const float* img, float* pad) {
  const int64_t rows = PaddedRows(g), cols = PaddedCols(g);
  std::fill_n(pad, rows * cols * g.c, 0.0f);
  // Input pixels past the last window (VALID's unread tail) are not needed.
  const int64_t x_end = std::min(g.w, cols - g.pad_left);
  if (x_end <= 0) return;
  for (int64_t y = 0; y < g.h && y + g.pad_top < rows; ++y) {
    std::memcpy(pad + ((y + g.pad_top) * cols + g.pad_left) * g.c, img + y * g.w * g.c,
                static_cast<size_t>(x_end * g.c) * sizeof(float));
  }
}

// P output pixels of one row times OB blocks of 16 channels starting at o0:
// P * OB accumulators (28 or 16 of the 32 zmm registers, with the weights and
// one broadcast beside them). Stores the first `count` pixels.
template <int P, int OB>
__attribute__((target("avx512f"))) inline void Block(const conv::ConvGeometry& g, const float* pad, int64_t oy,
                                                    int64_t ox, int64_t count, int64_t o0, const float* w,
                                                    const float* bias, bool relu, float* y) {
  const int64_t cols = PaddedCols(g), c = g.c;
  __m512 acc[P][OB];
  for (int j = 0; j < OB; ++j) {
    const __m512 b = bias != nullptr ? _mm512_loadu_ps(bias + o0 + 16 * j) : _mm512_setzero_ps();
    for (int p = 0; p < P; ++p) acc[p][j] = b;
  }
  // Along a padded row, tap t = kx * c + ci of pixel p is at row[t + p * c],
  // and its weights at w[(ky * kw * c + t) * o]: one loop over kw * c taps.
  const int64_t taps = g.kw * c;
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    const float* row = pad + ((oy + ky) * cols + ox) * c;
    const float* wk = w + ky * taps * g.o + o0;
    for (int64_t t = 0; t < taps; ++t) {
      __m512 wv[OB];
      for (int j = 0; j < OB; ++j) wv[j] = _mm512_loadu_ps(wk + t * g.o + 16 * j);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const __m512 xb = _mm512_set1_ps(row[t + p * c]);
        for (int j = 0; j < OB; ++j) acc[p][j] = _mm512_fmadd_ps(xb, wv[j], acc[p][j]);
      }
    }
  }
  float* out = y + (oy * g.ow + ox) * g.o + o0;
  const __m512 zero = _mm512_setzero_ps();
  for (int p = 0; p < P; ++p) {
    if (p == count) break;
    for (int j = 0; j < OB; ++j) {
      const __m512 v = relu ? _mm512_maskz_max_ps(__mmask16(0xFFFF), acc[p][j], zero) : acc[p][j];
      _mm512_storeu_ps(out + p * g.o + 16 * j, v);
    }
  }
}

// One output row, channels [o0, o0 + 16 * OB), in blocks of 14 pixels (32
// channels: the tutorial's 28-wide rows in two blocks) or 16 (16 channels).
template <int OB>
__attribute__((target("avx512f"))) void Row(const conv::ConvGeometry& g, const float* pad, int64_t oy, int64_t o0,
                                            const float* w, const float* bias, bool relu, float* y) {
  constexpr int P = OB == 2 ? 14 : 16;
  static_assert(P <= kMaxPixels);
  for (int64_t ox = 0; ox < g.ow; ox += P) {
    Block<P, OB>(g, pad, oy, ox, std::min<int64_t>(P, g.ow - ox), o0, w, bias, relu, y);
  }
}

}  // namespace

int64_t ScratchFloats(const conv::ConvGeometry& g) { return PaddedRows(g) * PaddedCols(g) * g.c; }

void Forward(const conv::ConvGeometry& g, int64_t n0, int64_t n1, const float* x, const float* w,
             const float* bias, bool relu, float* y, float* scratch) {
  const int64_t in_image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.o;
  for (int64_t n = n0; n < n1; ++n) {
    PadImage(g, x + n * in_image, scratch);
    float* yi = y + n * out_image;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      int64_t o0 = 0;
      for (; o0 + 32 <= g.o; o0 += 32) Row<2>(g, scratch, oy, o0, w, bias, relu, yi);
      if (o0 < g.o) Row<1>(g, scratch, oy, o0, w, bias, relu, yi);
    }
  }
}

}  // namespace tw::direct_conv
