// Cast (uint8 -> float32) -> Mul by one element fused into one pass
// (kernels/cast_fusions.cc): the same floats as the two nodes run apart, bit
// for bit, over every byte value and over shapes that are not multiples of a
// vector, with Mul's broadcast shape; and no fusion where the factor's
// shape is not known to hold one element, the Cast reads another dtype, or
// something else reads the Cast's output.
#include <gtest/gtest.h>

#include <cstring>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

// x -> Cast(float32) -> Mul(factor), fed x and the factor.
struct ScaleGraph {
  Graph graph;
  Output x, factor, cast, out;
  ScaleGraph(DataType x_dtype, PartialShape factor_shape) {
    Scope s(graph);
    x = Placeholder(s, x_dtype);
    factor = Placeholder(s, kFloat32, std::move(factor_shape));
    cast = Cast(s.WithOpName("cast"), x, kFloat32);
    out = Mul(s.WithOpName("scale"), cast, factor);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
  }
};

struct Result {
  StatusOr<std::vector<Tensor>> values;
  bool fused = false;
};

Result RunScale(ScaleGraph& g, const Tensor& x, const Tensor& factor, bool fuse, std::vector<Output> fetches = {}) {
  SessionOptions options;
  options.fuse_kernels = fuse;
  options.collect_step_stats = true;
  options.intra_op_threads = 2;  // big inputs shard
  Session session(g.graph, options);
  if (fetches.empty()) fetches = {g.out};
  StepStats stats;
  Result r{session.Run({{g.x, x}, {g.factor, factor}}, fetches, {}, &stats)};
  for (const auto& t : stats.nodes) {
    if (t.fused_producer == nullptr) continue;
    r.fused = true;
    EXPECT_EQ(t.fused_producer->name(), "cast");
    EXPECT_EQ(t.node->name(), "scale");
  }
  return r;
}

// Every byte value, repeated to fill `shape`.
Tensor Bytes(const TensorShape& shape) {
  Tensor t(kUInt8, shape);
  auto v = t.flat<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 7 + 3) % 256);
  return t;
}

TEST(CastMulFusionTest, FusedScalingMatchesTheNodesRunApartBitForBit) {
  const Tensor scalar = Tensor::Scalar<float>(1.0f / 255.0f);
  Tensor one_by_one(kFloat32, TensorShape{1, 1});
  one_by_one.flat<float>()[0] = -0.3f;
  for (const Tensor& factor : {scalar, one_by_one}) {
    for (const TensorShape& shape : {TensorShape{}, TensorShape{1}, TensorShape{7, 33}, TensorShape{1000},
                                     TensorShape{100, 784}, TensorShape{2, 3, 256}}) {
      SCOPED_TRACE("x " + shape.ToString() + ", factor " + factor.shape().ToString());
      ScaleGraph g(kUInt8, PartialShape(factor.shape()));
      const Tensor x = Bytes(shape);
      Result fused = RunScale(g, x, factor, true);
      Result apart = RunScale(g, x, factor, false);
      ASSERT_TRUE(fused.values.ok()) << fused.values.status().ToString();
      ASSERT_TRUE(apart.values.ok()) << apart.values.status().ToString();
      EXPECT_TRUE(fused.fused);
      EXPECT_FALSE(apart.fused);
      const Tensor& a = (*fused.values)[0];
      const Tensor& b = (*apart.values)[0];
      // Mul's broadcast: a [1, 1] factor makes a rank-1 input rank 2.
      ASSERT_EQ(a.shape(), b.shape());
      ASSERT_EQ(a.dtype(), kFloat32);
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.NumElements()) * sizeof(float)), 0);
      const float f = factor.flat<float>()[0];
      for (int64_t i = 0; i < a.NumElements(); ++i) {
        ASSERT_EQ(a.flat<float>()[static_cast<size_t>(i)], static_cast<float>(x.flat<uint8_t>()[static_cast<size_t>(i)]) * f)
            << i;
      }
    }
  }
}

TEST(CastMulFusionTest, OnlyForBytesAndAFactorKnownToHoldOneElement) {
  const Tensor factor = Tensor::Scalar<float>(0.5f);
  {
    // A factor of unknown shape (fed a scalar): apart, and still right.
    ScaleGraph g(kUInt8, PartialShape::Unknown());
    Result r = RunScale(g, Bytes(TensorShape{5}), factor, true);
    ASSERT_TRUE(r.values.ok()) << r.values.status().ToString();
    EXPECT_FALSE(r.fused);
    EXPECT_EQ((*r.values)[0].flat<float>()[0], 1.5f);  // byte 3 * 0.5
  }
  {
    // An int32 source: apart.
    ScaleGraph g(kInt32, PartialShape({}));
    Tensor x(kInt32, TensorShape{3});
    x.flat<int32_t>()[0] = 1 << 20;
    Result r = RunScale(g, x, factor, true);
    ASSERT_TRUE(r.values.ok()) << r.values.status().ToString();
    EXPECT_FALSE(r.fused);
    EXPECT_EQ((*r.values)[0].flat<float>()[0], static_cast<float>(1 << 19));
  }
  {
    // The Cast's floats are fetched too: apart.
    ScaleGraph g(kUInt8, PartialShape({}));
    Result r = RunScale(g, Bytes(TensorShape{5}), factor, true, {g.out, g.cast});
    ASSERT_TRUE(r.values.ok()) << r.values.status().ToString();
    EXPECT_FALSE(r.fused);
    EXPECT_EQ(r.values->size(), 2u);
  }
}

}  // namespace
}  // namespace tw
