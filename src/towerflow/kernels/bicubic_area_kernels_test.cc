// ResizeBicubic, its gradient and ResizeArea (kernels/bicubic_area_kernels.cc):
// values worked out by hand for each mapping (a ramp is reproduced inside the
// image, a constant everywhere with half-pixel centers; area means of whole and
// cut cells), dtypes and static shapes, errors, and the gradient summing back
// one unit per output. The numeric gradient checks are AddIndexingGradChecks';
// tests/python/tf1_image_color_test.py compares the values with TensorFlow's.
#include <gtest/gtest.h>

#include <numeric>

#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/image_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

Tensor Eval(Graph& g, const Output& out) {
  Session sess(g);
  auto r = sess.Run({}, {out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0] : Tensor();
}

Output Size(const Scope& s, int32_t h, int32_t w) { return Const(s, std::vector<int32_t>{h, w}); }

// 0, 1, ..., n - 1 as a [1, 1, n, 1] image row.
Output Ramp(const Scope& s, int n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  return Const(s, Tensor::FromVector<float>(v, {1, 1, n, 1}));
}

TEST(ResizeBicubicTest, ReproducesARampInsideTheImage) {
  Graph g;
  Scope s(g);
  Output y = ResizeBicubic(s, Ramp(s, 8), Size(s, 1, 16));
  EXPECT_EQ(y.shape(), PartialShape({1, 1, 16, 1}));
  EXPECT_EQ(y.dtype(), kFloat32);
  const std::vector<float> v = Eval(g, y).ToVector<float>();
  // Output o reads at o / 2; its four taps lie inside the image for o in [2, 11].
  for (int o = 2; o <= 11; ++o) EXPECT_NEAR(v[static_cast<size_t>(o)], o / 2.0f, 1e-5) << "output " << o;
  // Legacy taps clamp to the edge: the first output is the first pixel.
  EXPECT_NEAR(v[0], 0.0f, 1e-6);
  // align_corners: 4 pixels to 7, each output at o / 2.
  const std::vector<float> a = Eval(g, ResizeBicubic(s, Ramp(s, 4), Size(s, 1, 7), {true, false})).ToVector<float>();
  EXPECT_NEAR(a[0], 0.0f, 1e-6);
  for (int o = 2; o <= 4; ++o) EXPECT_NEAR(a[static_cast<size_t>(o)], o / 2.0f, 1e-5) << "output " << o;
}

TEST(ResizeBicubicTest, HalfPixelCentersKeepAConstantAtTheEdges) {
  Graph g;
  Scope s(g);
  // Keys' kernel: taps outside the image weigh 0 and the rest are renormalized.
  Output x = Const(s, Tensor::FromVector<uint8_t>(std::vector<uint8_t>(2 * 3 * 2, 7), {1, 2, 3, 2}));
  const std::vector<float> v = Eval(g, ResizeBicubic(s, x, Size(s, 5, 4), {false, true})).ToVector<float>();
  ASSERT_EQ(v.size(), 5u * 4u * 2u);
  for (float f : v) EXPECT_NEAR(f, 7.0f, 1e-5);
}

TEST(ResizeBicubicTest, GradientSendsBackOneUnitPerOutput) {
  Graph g;
  Scope s(g);
  Output x = Const(s, Tensor::FromVector<double>({0, 1, 2, 3, 4, 5}, {1, 2, 3, 1}));
  for (const ResizeOptions o : {ResizeOptions{}, ResizeOptions{true, false}, ResizeOptions{false, true}}) {
    Output y = Cast(s, ResizeBicubic(s, x, Size(s, 4, 5), o), kFloat64);
    auto dx = Gradients(s, {Sum(s, y, {0, 1, 2, 3})}, {x});
    ASSERT_TRUE(dx.ok()) << dx.status().ToString();
    Tensor d = Eval(g, (*dx)[0]);
    EXPECT_EQ(d.dtype(), kFloat64);
    const std::vector<double> v = d.ToVector<double>();
    EXPECT_NEAR(std::accumulate(v.begin(), v.end(), 0.0), 20.0, 1e-4);
  }
  // Integer images have no gradient, as TF.
  Output ints = Const(s, Tensor::FromVector<int32_t>({1, 2, 3, 4}, {1, 2, 2, 1}));
  auto none = Gradients(s, {Sum(s, ResizeBicubic(s, ints, Size(s, 3, 3)), {0, 1, 2, 3})}, {ints});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ((*none)[0].node, nullptr);
}

TEST(ResizeAreaTest, MeansOfWholeAndCutCells) {
  Graph g;
  Scope s(g);
  std::vector<float> v(16);
  std::iota(v.begin(), v.end(), 0.0f);
  Output x = Const(s, Tensor::FromVector<float>(v, {1, 4, 4, 1}));
  Output down = ResizeArea(s, x, Size(s, 2, 2));
  EXPECT_EQ(down.shape(), PartialShape({1, 2, 2, 1}));
  EXPECT_EQ(Eval(g, down).ToVector<float>(), (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));
  // [0, 3, 6] to 2: each output covers 1.5 cells, the middle one cut in half.
  Output row = Const(s, Tensor::FromVector<int32_t>({0, 3, 6}, {1, 1, 3, 1}));
  const std::vector<float> cut = Eval(g, ResizeArea(s, row, Size(s, 1, 2))).ToVector<float>();
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_NEAR(cut[0], 1.0f, 1e-6);
  EXPECT_NEAR(cut[1], 5.0f, 1e-6);
  // Up: each output lies inside one cell and takes its value.
  Output two = Const(s, Tensor::FromVector<uint8_t>({0, 4}, {1, 1, 2, 1}));
  Output up = ResizeArea(s, two, Size(s, 1, 4));
  EXPECT_EQ(up.dtype(), kFloat32);
  EXPECT_EQ(Eval(g, up).ToVector<float>(), (std::vector<float>{0, 0, 4, 4}));
}

TEST(ResizeAreaTest, ArgumentsAreCheckedAsTheOtherResizes) {
  Graph g;
  Scope s(g);
  Session sess(g);
  Status st = sess.Run({}, {ResizeArea(s, Ramp(s, 3), Size(s, 0, 2))}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("output dimensions must be positive"), std::string::npos) << st.ToString();
  Scope bad(g);
  EXPECT_EQ(ResizeArea(bad, Ramp(bad, 3), Size(bad, 1, 2), {false, true}).node, nullptr);
  EXPECT_NE(bad.status().message().find("half_pixel_centers"), std::string::npos) << bad.status().ToString();
  // No gradient, as TF: asking for one is an error naming the op.
  Output x = Const(s, Tensor::FromVector<double>({1, 2}, {1, 1, 2, 1}));
  auto grads = Gradients(s, {Sum(s, ResizeArea(s, x, Size(s, 1, 3)), {0, 1, 2, 3})}, {x});
  EXPECT_EQ(grads.status().code(), Code::kUnimplemented);
  EXPECT_NE(grads.status().message().find("'ResizeArea' has no gradient"), std::string::npos)
      << grads.status().ToString();
  // An image of no channels, as TF.
  st = sess.Run({}, {ResizeArea(s, Const(s, Tensor(kFloat32, TensorShape{1, 2, 2, 0})), Size(s, 1, 1))}).status();
  EXPECT_NE(st.message().find("at least one channel"), std::string::npos) << st.ToString();
}

TEST(ResizeAreaTest, AlignCornersWithOnePixelOfInput) {
  Graph g;
  Scope s(g);
  // One input row: its scale is in / out (TF's), not (in - 1) / (out - 1) = 0.
  Output row = Const(s, Tensor::FromVector<float>({1, 2, 3}, {1, 1, 3, 1}));
  Output y = ResizeArea(s, row, Size(s, 2, 5), {true, false});
  EXPECT_EQ(Eval(g, y).ToVector<float>(), (std::vector<float>{1, 1, 2, 2, 3, 1, 1, 2, 2, 3}));
}

}  // namespace
}  // namespace tw
