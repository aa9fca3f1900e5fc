// SampleDistortedBoundingBox (kernels/bounding_box_kernels.cc): every draw
// of a seeded stream satisfies the constraints (inside the image, area and
// aspect ratio in range up to a pixel of rounding, enough of the box
// covered, bboxes equal to begin and size); impossible constraints give the
// whole image; a seed repeats its sequence; static shapes; errors.
#include <gtest/gtest.h>

#include <cmath>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/image_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

struct Draw {
  std::vector<int32_t> begin, size;
  std::vector<float> bboxes;
};

std::vector<Draw> Draws(Graph& g, const DistortedBox& box, int n) {
  Session sess(g);
  std::vector<Draw> draws;
  for (int i = 0; i < n; ++i) {
    auto r = sess.Run({}, {box.begin, box.size, box.bboxes});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) break;
    draws.push_back({(*r)[0].ToVector<int32_t>(), (*r)[1].ToVector<int32_t>(), (*r)[2].ToVector<float>()});
  }
  return draws;
}

Output Boxes(const Scope& s, std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size() / 4);
  return Const(s, Tensor::FromVector<float>(std::move(v), {1, n, 4}));
}

TEST(SampleDistortedBoundingBoxTest, EveryDrawMeetsTheConstraints) {
  Graph g;
  Scope s(g);
  const int h = 40, w = 60;
  DistortedBoxOptions o;
  o.seed = 3;
  o.aspect_ratio_range = {0.5f, 2.0f};
  o.area_range = {0.1f, 0.9f};
  // The box: rows [10, 30), columns [15, 45).
  DistortedBox box = SampleDistortedBoundingBox(s, Const(s, std::vector<int32_t>{h, w, 3}),
                                                Boxes(s, {0.25f, 0.25f, 0.75f, 0.75f}), Const(s, 0.5f), o);
  EXPECT_EQ(box.begin.shape(), PartialShape({3}));
  EXPECT_EQ(box.bboxes.shape(), PartialShape({1, 1, 4}));
  EXPECT_EQ(box.size.dtype(), kInt32);
  int whole = 0;
  for (const Draw& d : Draws(g, box, 300)) {
    const int y = d.begin[0], x = d.begin[1], ch = d.size[0], cw = d.size[1];
    EXPECT_EQ(d.begin[2], 0);
    EXPECT_EQ(d.size[2], -1);
    ASSERT_TRUE(y >= 0 && x >= 0 && ch > 0 && cw > 0 && y + ch <= h && x + cw <= w)
        << y << " " << x << " " << ch << " " << cw;
    if (ch == h && cw == w) {
      ++whole;
      continue;
    }
    const double area = static_cast<double>(ch) * cw / (h * w);
    EXPECT_GE(area, 0.1 - 1e-6);
    EXPECT_LE(area, 0.9 + 1e-6);
    // The width is the height times the ratio, rounded.
    EXPECT_GE(cw, std::floor(0.5 * ch) - 1);
    EXPECT_LE(cw, std::ceil(2.0 * ch) + 1);
    const int covered = std::max(0, std::min(y + ch, 30) - std::max(y, 10)) *
                        std::max(0, std::min(x + cw, 45) - std::max(x, 15));
    EXPECT_GE(covered, 0.5 * 20 * 30) << y << " " << x << " " << ch << " " << cw;
    EXPECT_FLOAT_EQ(d.bboxes[0], static_cast<float>(y) / h);
    EXPECT_FLOAT_EQ(d.bboxes[1], static_cast<float>(x) / w);
    EXPECT_FLOAT_EQ(d.bboxes[2], static_cast<float>(y + ch) / h);
    EXPECT_FLOAT_EQ(d.bboxes[3], static_cast<float>(x + cw) / w);
  }
  EXPECT_LT(whole, 30);  // a fallback now and then, not the rule
}

TEST(SampleDistortedBoundingBoxTest, ASeedRepeatsAndImpossibleConstraintsGiveTheImage) {
  Graph g;
  Scope s(g);
  DistortedBoxOptions o;
  o.seed = 11;
  o.seed2 = 5;
  Output size = Const(s, std::vector<int32_t>{30, 30, 1});
  Output boxes = Boxes(s, {0, 0, 1, 1});
  DistortedBox a = SampleDistortedBoundingBox(s, size, boxes, Const(s, 0.1f), o);
  DistortedBox b = SampleDistortedBoundingBox(s, size, boxes, Const(s, 0.1f), o);
  const std::vector<Draw> da = Draws(g, a, 20), db = Draws(g, b, 20);
  ASSERT_EQ(da.size(), db.size());
  bool varied = false;
  for (size_t i = 0; i < da.size(); ++i) {
    EXPECT_EQ(da[i].begin, db[i].begin);
    EXPECT_EQ(da[i].size, db[i].size);
    varied |= da[i].size != da[0].size;
  }
  EXPECT_TRUE(varied);
  // No crop of ratio 10 fits a square's 90% area: the whole image.
  o.aspect_ratio_range = {10, 11};
  o.area_range = {0.9f, 1.0f};
  for (const Draw& d : Draws(g, SampleDistortedBoundingBox(s, size, boxes, Const(s, 0.1f), o), 5)) {
    EXPECT_EQ(d.begin, (std::vector<int32_t>{0, 0, 0}));
    EXPECT_EQ(d.size, (std::vector<int32_t>{30, 30, -1}));
  }
}

TEST(SampleDistortedBoundingBoxTest, NoBoxesAndUint8Sizes) {
  Graph g;
  Scope s(g);
  DistortedBoxOptions o;
  o.seed = 1;
  Output none = Const(s, Tensor(kFloat32, TensorShape{1, 0, 4}));
  Output size = Const(s, Tensor::Vec<uint8_t>({20, 10, 3}));
  Session sess(g);
  Status st = sess.Run({}, {SampleDistortedBoundingBox(s, size, none, Const(s, 0.1f), o).begin}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("use_image_if_no_bounding_boxes"), std::string::npos) << st.ToString();
  o.use_image_if_no_bounding_boxes = true;
  DistortedBox box = SampleDistortedBoundingBox(s, size, none, Const(s, 0.1f), o);
  auto r = sess.Run({}, {box.begin, box.size});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<uint8_t> begin = (*r)[0].ToVector<uint8_t>(), sz = (*r)[1].ToVector<uint8_t>();
  EXPECT_LE(begin[0] + sz[0], 20);
  EXPECT_LE(begin[1] + sz[1], 10);
  EXPECT_EQ(sz[2], 255);  // -1 in uint8, as TF
}

TEST(SampleDistortedBoundingBoxTest, Errors) {
  Graph g;
  Scope s(g);
  Session sess(g);
  Output size = Const(s, std::vector<int32_t>{20, 20, 3});
  Status st =
      sess.Run({}, {SampleDistortedBoundingBox(s, size, Boxes(s, {0, 0, 1.5f, 1}), Const(s, 0.1f)).size}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("[0.0, 1.0]"), std::string::npos) << st.ToString();
  st = sess.Run({}, {SampleDistortedBoundingBox(s, size, Boxes(s, {0, 0, 1, 1}), Const(s, -0.5f)).size}).status();
  EXPECT_NE(st.message().find("min_object_covered must be non-negative"), std::string::npos) << st.ToString();
  DistortedBoxOptions o;
  o.area_range = {0.5f, 1.5f};
  st = sess.Run({}, {SampleDistortedBoundingBox(s, size, Boxes(s, {0, 0, 1, 1}), Const(s, 0.1f), o).size}).status();
  EXPECT_NE(st.message().find("area_range"), std::string::npos) << st.ToString();
  // TF reads max_attempts as an int: no run of 2^62 attempts.
  DistortedBoxOptions many;
  many.max_attempts = int64_t{1} << 62;
  st = sess.Run({}, {SampleDistortedBoundingBox(s, size, Boxes(s, {0, 0, 1, 1}), Const(s, 2.0f), many).size})
           .status();
  EXPECT_NE(st.message().find("max_attempts must be in [1, 2^31)"), std::string::npos) << st.ToString();
  Scope bad(g);
  EXPECT_EQ(SampleDistortedBoundingBox(bad, Const(s, std::vector<int32_t>{20, 20}), Boxes(s, {0, 0, 1, 1}),
                                       Const(s, 0.1f))
                .begin.node,
            nullptr);
  EXPECT_NE(bad.status().message().find("3 elements"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace tw
