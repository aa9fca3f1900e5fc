// The resize ops (graph/ops/image_ops.cc, kernels/image_kernels.cc):
// hand-computed values for each mapping (legacy, align_corners,
// half_pixel_centers) up and down, dtypes in and out, the static shapes, the
// errors, and the gradients summing back exactly what the forward read. The
// numeric gradient checks are AddIndexingGradChecks' (indexing_kernels_test);
// tests/python/tf1_image_test.py compares the values with TensorFlow's.
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

Status RunStatus(Graph& g, const Output& out, const FeedList& feeds = {}) {
  Session sess(g);
  return sess.Run(feeds, {out}).status();
}

// The 2x2 picture [[0, 1], [2, 3]] as [1, 2, 2, 1].
Output Square(const Scope& s) { return Const(s, Tensor::FromVector<float>({0, 1, 2, 3}, {1, 2, 2, 1})); }

Output Size(const Scope& s, int32_t h, int32_t w) { return Const(s, std::vector<int32_t>{h, w}); }

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
}

TEST(ResizeTest, BilinearUpByEachMapping) {
  Graph g;
  Scope s(g);
  Output legacy = ResizeBilinear(s, Square(s), Size(s, 3, 3));
  EXPECT_EQ(legacy.shape(), PartialShape({1, 3, 3, 1}));
  EXPECT_EQ(legacy.dtype(), kFloat32);
  // Rows and columns read at 0, 2/3, 4/3 (the last clamped to the edge).
  const float t = 2.0f / 3.0f;
  ExpectNear(Eval(g, legacy).ToVector<float>(), {0, t, 1, 2 * t, 3 * t, 1 + 2 * t, 2, 2 + t, 3});
  ExpectNear(Eval(g, ResizeBilinear(s, Square(s), Size(s, 3, 3), {true, false})).ToVector<float>(),
             {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3});
  ExpectNear(Eval(g, ResizeBilinear(s, Square(s), Size(s, 3, 3), {false, true})).ToVector<float>(),
             {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3});
}

TEST(ResizeTest, BilinearDownAveragesNeighbours) {
  Graph g;
  Scope s(g);
  std::vector<float> v(16);
  std::iota(v.begin(), v.end(), 0.0f);
  Output x = Const(s, Tensor::FromVector<float>(v, {1, 4, 4, 1}));
  // Legacy: pixels 0 and 2 of each axis. Half-pixel: between 0,1 and 2,3.
  ExpectNear(Eval(g, ResizeBilinear(s, x, Size(s, 2, 2))).ToVector<float>(), {0, 2, 8, 10});
  ExpectNear(Eval(g, ResizeBilinear(s, x, Size(s, 2, 2), {false, true})).ToVector<float>(),
             {2.5f, 4.5f, 10.5f, 12.5f});
  ExpectNear(Eval(g, ResizeBilinear(s, x, Size(s, 2, 2), {true, false})).ToVector<float>(), {0, 3, 12, 15});
}

TEST(ResizeTest, BilinearOfIntegersAndChannels) {
  Graph g;
  Scope s(g);
  // Two channels of uint8: interpolated in float, each channel apart.
  Output x = Const(s, Tensor::FromVector<uint8_t>({0, 100, 10, 200}, {1, 1, 2, 2}));
  Output y = ResizeBilinear(s, x, Size(s, 1, 4));
  EXPECT_EQ(y.dtype(), kFloat32);
  ExpectNear(Eval(g, y).ToVector<float>(), {0, 100, 5, 150, 10, 200, 10, 200});
}

TEST(ResizeTest, NearestNeighbourByEachMapping) {
  Graph g;
  Scope s(g);
  Output legacy = ResizeNearestNeighbor(s, Square(s), Size(s, 3, 3));
  EXPECT_EQ(legacy.dtype(), kFloat32);
  EXPECT_EQ(Eval(g, legacy).ToVector<float>(), (std::vector<float>{0, 0, 1, 0, 0, 1, 2, 2, 3}));
  EXPECT_EQ(Eval(g, ResizeNearestNeighbor(s, Square(s), Size(s, 3, 3), {true, false})).ToVector<float>(),
            (std::vector<float>{0, 1, 1, 2, 3, 3, 2, 3, 3}));
  EXPECT_EQ(Eval(g, ResizeNearestNeighbor(s, Square(s), Size(s, 3, 3), {false, true})).ToVector<float>(),
            (std::vector<float>{0, 1, 1, 2, 3, 3, 2, 3, 3}));
  Output ints = Const(s, Tensor::FromVector<int64_t>({7, 8, 9, 10}, {1, 2, 2, 1}));
  Output down = ResizeNearestNeighbor(s, ints, Size(s, 1, 1));
  EXPECT_EQ(down.dtype(), kInt64);
  EXPECT_EQ(Eval(g, down).ToVector<int64_t>(), (std::vector<int64_t>{7}));
}

TEST(ResizeTest, GradientsSendBackWhatWasRead) {
  Graph g;
  Scope s(g);
  Output x = Const(s, Tensor::FromVector<double>({0, 1, 2, 3}, {1, 2, 2, 1}));
  // Each output's weights sum to 1: the image's gradient of sum(y) sums to
  // the number of outputs.
  for (const ResizeOptions o : {ResizeOptions{}, ResizeOptions{true, false}, ResizeOptions{false, true}}) {
    Output y = Cast(s, ResizeBilinear(s, x, Size(s, 5, 3), o), kFloat64);
    auto dx = Gradients(s, {Sum(s, y, {0, 1, 2, 3})}, {x});
    ASSERT_TRUE(dx.ok()) << dx.status().ToString();
    const std::vector<double> d = Eval(g, (*dx)[0]).ToVector<double>();
    EXPECT_NEAR(std::accumulate(d.begin(), d.end(), 0.0), 15.0, 1e-6);
    // Nearest neighbour: each input pixel's gradient counts the outputs that took it.
    Output n = ResizeNearestNeighbor(s, x, Size(s, 3, 3), o);
    auto dn = Gradients(s, {Sum(s, n, {0, 1, 2, 3})}, {x});
    ASSERT_TRUE(dn.ok()) << dn.status().ToString();
    const std::vector<double> counts = Eval(g, (*dn)[0]).ToVector<double>();
    const std::vector<double> want = o.align_corners || o.half_pixel_centers ? std::vector<double>{1, 2, 2, 4}
                                                                              : std::vector<double>{4, 2, 2, 1};
    EXPECT_EQ(counts, want);
  }
}

TEST(ResizeTest, ErrorsNameTheArgument) {
  Graph g;
  Scope s(g);
  Output size = Placeholder(s, kInt32, PartialShape({2}));
  Status st = RunStatus(g, ResizeBilinear(s, Square(s), size), {{size, Tensor::Vec<int32_t>({0, 3})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("output dimensions must be positive"), std::string::npos) << st.ToString();
  Output images = Placeholder(s, kFloat32, PartialShape::Unknown());
  st = RunStatus(g, ResizeNearestNeighbor(s, images, Size(s, 2, 2)),
                 {{images, Tensor::FromVector<float>({1, 2}, {1, 2, 1})}});
  EXPECT_NE(st.message().find("must be 4-dimensional"), std::string::npos) << st.ToString();
  st = RunStatus(g, ResizeBilinear(s, images, Size(s, 2, 2)), {{images, Tensor(kFloat32, TensorShape{1, 0, 3, 1})}});
  EXPECT_NE(st.message().find("input image must be of non-zero size"), std::string::npos) << st.ToString();
  // As TF's, both are checked when the op runs, not when it is built.
  st = RunStatus(g, ResizeBilinear(s, Square(s), Size(s, 2, 2), {true, true}));
  EXPECT_NE(st.message().find("If half_pixel_centers is True, align_corners must be False"), std::string::npos)
      << st.ToString();
  Output negative = ResizeBilinear(s, Square(s), Size(s, -1, 2));
  EXPECT_EQ(negative.shape(), PartialShape({1, -1, 2, 1}));
  EXPECT_EQ(RunStatus(g, negative).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tw
