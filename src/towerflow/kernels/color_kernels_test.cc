// The colour-space ops (kernels/color_kernels.cc): hues of the primaries and
// of gray, round trips, hue turns and saturation scales worked out by hand,
// static shapes and the errors, and the inputs on which TF's AdjustHue
// loops forever (an infinite or huge delta) ending here.
// tests/python/tf1_image_color_test.py compares the values with TensorFlow's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/color_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

StatusOr<Tensor> RunOne(Graph& g, const Output& out, const FeedList& feeds = {}) {
  Session sess(g);
  TW_ASSIGN_OR_RETURN(std::vector<Tensor> r, sess.Run(feeds, {out}));
  return r[0];
}

std::vector<float> Values(Graph& g, const Output& out) {
  auto r = RunOne(g, out);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->ToVector<float>() : std::vector<float>{};
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tolerance = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
}

// red, green, blue, gray, black, orange as [6, 3].
Output Pixels(const Scope& s) {
  return Const(s, Tensor::FromVector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1, 0.5f, 0.5f, 0.5f, 0, 0, 0, 1, 0.5f, 0},
                                            {6, 3}));
}

TEST(ColorTest, RgbToHsvOfPrimariesAndGrays) {
  Graph g;
  Scope s(g);
  Output hsv = RGBToHSV(s, Pixels(s));
  EXPECT_EQ(hsv.shape(), PartialShape({6, 3}));
  ExpectNear(Values(g, hsv), {0, 1, 1, 1.0f / 3, 1, 1, 2.0f / 3, 1, 1, 0, 0, 0.5f, 0, 0, 0, 1.0f / 12, 1, 1});
  ExpectNear(Values(g, HSVToRGB(s, hsv)), Values(g, Pixels(s)));
}

TEST(ColorTest, RoundTripOfRandomPixelsInDouble) {
  Graph g;
  Scope s(g);
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> v(4 * 5 * 3);
  for (double& x : v) x = u(gen);
  Output x = Const(s, Tensor::FromVector<double>(v, {4, 5, 3}));
  auto back = RunOne(g, HSVToRGB(s, RGBToHSV(s, x)));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->dtype(), kFloat64);
  const std::vector<double> b = back->ToVector<double>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(b[i], v[i], 1e-12) << "element " << i;
}

TEST(ColorTest, AdjustHueTurnsAndKeepsMinAndMax) {
  Graph g;
  Scope s(g);
  Output red = Const(s, Tensor::FromVector<float>({1, 0, 0}, {1, 1, 3}));
  ExpectNear(Values(g, AdjustHue(s, red, Const(s, 1.0f / 3))), {0, 1, 0}, 1e-5f);
  ExpectNear(Values(g, AdjustHue(s, red, Const(s, -1.0f / 3))), {0, 0, 1}, 1e-5f);
  // Half a turn: the complement, each channel min + max - itself.
  Output px = Const(s, Tensor::FromVector<float>({0.2f, 0.6f, 0.4f}, {1, 1, 3}));
  ExpectNear(Values(g, AdjustHue(s, px, Const(s, 0.5f))), {0.6f, 0.2f, 0.4f}, 1e-6f);
  ExpectNear(Values(g, AdjustHue(s, px, Const(s, 1.0f))), {0.2f, 0.6f, 0.4f}, 1e-6f);
}

TEST(ColorTest, AdjustHueEndsWhereTheLoopsOfTfNeverDo) {
  Graph g;
  Scope s(g);
  Output px = Const(s, Tensor::FromVector<float>({0.2f, 0.6f, 0.4f}, {1, 1, 3}));
  // A huge delta is wrapped; an infinite one gives NaN channels, not a hang.
  EXPECT_EQ(Values(g, AdjustHue(s, px, Const(s, 1e30f))).size(), 3u);
  const std::vector<float> inf = Values(g, AdjustHue(s, px, Const(s, INFINITY)));
  ASSERT_EQ(inf.size(), 3u);
  EXPECT_TRUE(std::isnan(inf[2])) << inf[2];
}

TEST(ColorTest, AdjustSaturationScalesAndClamps) {
  Graph g;
  Scope s(g);
  Output px = Const(s, Tensor::FromVector<float>({0.8f, 0.4f, 0.4f, 1, 0.5f, 0}, {1, 2, 3}));
  ExpectNear(Values(g, AdjustSaturation(s, px, Const(s, 0.0f))), {0.8f, 0.8f, 0.8f, 1, 1, 1});
  ExpectNear(Values(g, AdjustSaturation(s, px, Const(s, 2.0f))), {0.8f, 0, 0, 1, 0.5f, 0});
  ExpectNear(Values(g, AdjustSaturation(s, px, Const(s, 1.0f))), {0.8f, 0.4f, 0.4f, 1, 0.5f, 0});
}

TEST(ColorTest, AdjustContrastAroundEachChannelsMean) {
  Graph g;
  Scope s(g);
  // Two images of 3 pixels x 2 channels; means (2, 20) and (5, 0).
  Output x = Const(s, Tensor::FromVector<float>({1, 10, 2, 20, 3, 30, 5, 1, 5, -1, 5, 0}, {2, 1, 3, 2}));
  ExpectNear(Values(g, AdjustContrast(s, x, Const(s, 2.0f))), {0, 0, 2, 20, 4, 40, 5, 2, 5, -2, 5, 0});
  ExpectNear(Values(g, AdjustContrast(s, x, Const(s, 0.0f))), {2, 20, 2, 20, 2, 20, 5, 0, 5, 0, 5, 0});
  // An odd number of pixels, folded unevenly, still sums every one.
  std::vector<float> v(7 * 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 5 == 0 ? i : 0);
  const std::vector<float> out = Values(g, AdjustContrast(s, Const(s, Tensor::FromVector<float>(v, {7, 5, 1})),
                                                          Const(s, 0.0f)));
  for (float f : out) EXPECT_NEAR(f, (0 + 5 + 10 + 15 + 20 + 25 + 30) / 35.0f, 1e-5);
}

TEST(ColorTest, ShapesAndErrors) {
  Graph g;
  Scope s(g);
  // Known shapes are checked when the graph is built.
  Scope four(g);
  EXPECT_EQ(RGBToHSV(four, Const(s, Tensor(kFloat32, TensorShape{2, 4}))).node, nullptr);
  EXPECT_NE(four.status().message().find("3 channels"), std::string::npos) << four.status().ToString();
  Scope flat(g);
  EXPECT_EQ(AdjustHue(flat, Const(s, Tensor(kFloat32, TensorShape{2, 3})), Const(s, 0.1f)).node, nullptr);
  // Others when the op runs: RGBToHSV's is FailedPrecondition, as TF's.
  Output any = Placeholder(s, kFloat32, PartialShape::Unknown());
  const Tensor four_channels(kFloat32, TensorShape{1, 1, 4});
  Status st = RunOne(g, RGBToHSV(s, any), {{any, four_channels}}).status();
  EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st.ToString();
  st = RunOne(g, AdjustSaturation(s, any, Const(s, 2.0f)), {{any, four_channels}}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("3 channels"), std::string::npos) << st.ToString();
  // A hue delta of rank 1 builds (as TF's) and fails when run; a contrast
  // factor of rank 1 is refused when built (as TF's).
  Output image = Const(s, Tensor(kFloat32, TensorShape{1, 1, 3}));
  Output hue = AdjustHue(s, image, Const(s, std::vector<float>{0.1f}, {1}));
  ASSERT_NE(hue.node, nullptr) << s.status().ToString();
  st = RunOne(g, hue).status();
  EXPECT_NE(st.message().find("delta must be a float scalar"), std::string::npos) << st.ToString();
  Scope contrast(g);
  EXPECT_EQ(AdjustContrast(contrast, image, Const(s, std::vector<float>{2.0f}, {1})).node, nullptr);
}

}  // namespace
}  // namespace tw
