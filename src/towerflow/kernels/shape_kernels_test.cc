// Shape ops (shape_ops.cc, shape_kernels.cc, shape_grad.cc): hand-computed
// values, views sharing buffers, graph-time and run-time shape errors, and the
// numeric gradient checks of the array family.
#include <gtest/gtest.h>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/runtime/gradient_checker.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

Tensor Eval(Graph& g, const Output& out, const FeedList& feeds = {}) {
  Session sess(g);
  auto r = sess.Run(feeds, {out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0] : Tensor();
}

Status RunStatus(Graph& g, const Output& out, const FeedList& feeds) {
  Session sess(g);
  return sess.Run(feeds, {out}).status();
}

Output Iota(const Scope& s, TensorShape shape) {
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Const(s, Tensor::FromVector<float>(v, shape));
}

bool Contains(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST(ShapeOpsTest, ShapeOfTensor) {
  Graph g;
  Scope s(g);
  Output sh = Shape(s, Iota(s, {2, 3, 4}));
  EXPECT_EQ(sh.shape(), PartialShape({3}));
  EXPECT_EQ(Eval(g, sh).ToVector<int32_t>(), (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(Eval(g, Shape(s, Const(s, 1.0f))).NumElements(), 0);
}

// Runs the CPU kernel of `node` on `inputs` directly (a session copies fetched
// tensors that share buffers, hiding views) and returns output 0.
Tensor RunKernel(const Node* node, const std::vector<Tensor>& inputs) {
  EnsureKernelsRegistered();
  Device device(kDeviceCpu, 0, CpuAllocator(), 1);
  auto kernel = KernelRegistry::Global().CreateKernel(*node, &device);
  EXPECT_TRUE(kernel.ok()) << kernel.status().ToString();
  if (!kernel.ok()) return Tensor();
  std::vector<TensorValue> values(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) values[i].value = inputs[i];
  OpKernelContext::Params params;
  params.node = node;
  params.device = &device;
  params.inputs = &values;
  OpKernelContext ctx(params);
  (*kernel)->Compute(&ctx);
  EXPECT_TRUE(ctx.status().ok()) << ctx.status().ToString();
  return ctx.output(0).value;
}

TEST(ShapeOpsTest, ReshapeInfersMinusOne) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat32, PartialShape({2, 6}));
  Output y = Reshape(s, x, std::vector<int32_t>{3, -1, 2});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(y.shape(), PartialShape({3, 2, 2}));
  Tensor in = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 6});
  Tensor out = Eval(g, y, {{x, in}});
  EXPECT_EQ(out.shape(), TensorShape({3, 2, 2}));
  EXPECT_EQ(out.ToVector<float>(), in.ToVector<float>());
}

TEST(ShapeOpsTest, ViewsShareTheInputBuffer) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat32);
  Output reshape = Reshape(s, x, Placeholder(s, kInt32));
  Output expand = ExpandDims(s, x, 0);
  Output squeeze = Squeeze(s, x);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Tensor in = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 1, 3});
  Tensor r = RunKernel(reshape.node, {in, Tensor::Vec<int32_t>({3, 2})});
  EXPECT_EQ(r.shape(), TensorShape({3, 2}));
  EXPECT_TRUE(r.SharesBufferWith(in));
  Tensor e = RunKernel(expand.node, {in, Tensor::Scalar<int32_t>(0)});
  EXPECT_EQ(e.shape(), TensorShape({1, 2, 1, 3}));
  EXPECT_TRUE(e.SharesBufferWith(in));
  Tensor q = RunKernel(squeeze.node, {in});
  EXPECT_EQ(q.shape(), TensorShape({2, 3}));
  EXPECT_TRUE(q.SharesBufferWith(in));
}

TEST(ShapeOpsTest, ReshapeErrorsNameShapesAndCounts) {
  Graph g;
  Scope s(g);
  Reshape(s, Iota(s, {2, 3}), std::vector<int32_t>{4, 2});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(s.status(), "[2,3] (6 elements)")) << s.status().ToString();
  EXPECT_TRUE(Contains(s.status(), "[4,2] (8 elements)")) << s.status().ToString();

  Graph g2;
  Scope s2(g2);
  Output x = Placeholder(s2, kFloat32);
  Output y = Reshape(s2, x, std::vector<int32_t>{-1, 4});
  ASSERT_TRUE(s2.ok());
  Status st = RunStatus(g2, y, {{x, Tensor(kFloat32, {7})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "[7] (7 elements)")) << st.ToString();

  Graph g3;
  Scope s3(g3);
  Reshape(s3, Iota(s3, {4}), std::vector<int32_t>{-1, -1});
  EXPECT_EQ(s3.status().code(), Code::kInvalidArgument);
}

TEST(ShapeOpsTest, EnsureShapeRefinesAndChecks) {
  Graph g;
  Scope s(g);
  Output p = Placeholder(s, kFloat32, PartialShape::Unknown());
  // Any number of dimensions stays unknown (what TF1's set_shape needs after
  // a crop of unknown size: [?, ?, 3]).
  Output e = EnsureShape(s, p, PartialShape({-1, -1, 3}));
  EXPECT_EQ(e.shape(), PartialShape({-1, -1, 3}));
  EXPECT_EQ(EnsureShape(s, e, PartialShape({2, -1, -1})).shape(), PartialShape({2, -1, 3}));
  const Tensor fit = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  Session sess(g);
  auto r = sess.Run({{p, fit}}, {e});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), fit.ToVector<float>());
  Status st = RunStatus(g, e, {{p, Tensor::FromVector<float>({1, 2, 3, 4}, {1, 1, 4})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "[1,1,4]") && Contains(st, "not compatible")) << st.ToString();
  // Known shapes are checked when the graph is built.
  Scope bad(g);
  EXPECT_EQ(EnsureShape(bad, Iota(s, {2, 3}), PartialShape({3, -1})).node, nullptr);
  EXPECT_TRUE(Contains(bad.status(), "not compatible")) << bad.status().ToString();
}

TEST(ShapeOpsTest, ExpandDimsAndSqueeze) {
  Graph g;
  Scope s(g);
  Output x = Iota(s, {2, 3});
  EXPECT_EQ(Eval(g, ExpandDims(s, x, 0)).shape(), TensorShape({1, 2, 3}));
  EXPECT_EQ(Eval(g, ExpandDims(s, x, -1)).shape(), TensorShape({2, 3, 1}));
  EXPECT_EQ(ExpandDims(s, x, 1).shape(), PartialShape({2, 1, 3}));
  Output z = Iota(s, {1, 2, 1, 3, 1});
  Tensor all = Eval(g, Squeeze(s, z));
  EXPECT_EQ(all.shape(), TensorShape({2, 3}));
  EXPECT_EQ(all.ToVector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Eval(g, Squeeze(s, z, {2, -1})).shape(), TensorShape({1, 2, 3}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();

  Scope bad(g);
  ExpandDims(bad, x, 3);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  Scope bad2(g);
  Squeeze(bad2, z, {1});
  EXPECT_EQ(bad2.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(bad2.status(), "[1,2,1,3,1]")) << bad2.status().ToString();
}

TEST(ShapeOpsTest, ConcatAlongEachAxis) {
  Graph g;
  Scope s(g);
  Output a = Const(s, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}));
  Output b = Const(s, Tensor::FromVector<float>({5, 6}, {2, 1}));
  Output c1 = Concat(s, {a, b}, 1);
  EXPECT_EQ(c1.shape(), PartialShape({2, 3}));
  EXPECT_EQ(Eval(g, c1).ToVector<float>(), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  Output c0 = Concat(s, {a, Const(s, Tensor::FromVector<float>({7, 8}, {1, 2}))}, -2);
  Tensor t0 = Eval(g, c0);
  EXPECT_EQ(t0.shape(), TensorShape({3, 2}));
  EXPECT_EQ(t0.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 7, 8}));
  Output ints = Concat(s, {Const(s, std::vector<int32_t>{1}), Const(s, std::vector<int32_t>{2, 3})}, 0);
  EXPECT_EQ(Eval(g, ints).ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));

  Scope bad(g);
  Concat(bad, {a, b}, 0);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  // Unknown at graph time, caught by the kernel.
  Output p = Placeholder(s, kFloat32);
  Output c = Concat(s, {a, p}, 0);
  Status st = RunStatus(g, c, {{p, Tensor(kFloat32, {2, 3})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "[2,2] and [2,3]")) << st.ToString();
}

TEST(ShapeOpsTest, SliceWithMinusOneSize) {
  Graph g;
  Scope s(g);
  Output x = Iota(s, {3, 4});
  Output y = Slice(s, x, {1, 1}, {2, -1});
  EXPECT_EQ(y.shape(), PartialShape({2, 3}));
  EXPECT_EQ(Eval(g, y).ToVector<float>(), (std::vector<float>{5, 6, 7, 9, 10, 11}));
  Output z = Slice(s, Iota(s, {2, 3, 4}), {0, 2, 1}, {2, 1, 2});
  EXPECT_EQ(Eval(g, z).ToVector<float>(), (std::vector<float>{9, 10, 21, 22}));
  ASSERT_TRUE(s.ok());

  Scope bad(g);
  Slice(bad, x, {2, 0}, {2, 1});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status(), "[3,4]")) << bad.status().ToString();
  Output begin = Placeholder(s, kInt32, PartialShape({2}));
  Output sl = Slice(s, x, begin, Const(s, std::vector<int32_t>{1, 2}));
  Status st = RunStatus(g, sl, {{begin, Tensor::Vec<int32_t>({0, 3})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "begin [0,3] and size [1,2]")) << st.ToString();
}

TEST(ShapeOpsTest, FillBroadcastToAndSumToShape) {
  Graph g;
  Scope s(g);
  Tensor filled = Eval(g, Fill(s, Const(s, std::vector<int32_t>{2, 2}), Const(s, 7.5f)));
  EXPECT_EQ(filled.shape(), TensorShape({2, 2}));
  EXPECT_EQ(filled.ToVector<float>(), (std::vector<float>{7.5f, 7.5f, 7.5f, 7.5f}));

  Output col = Const(s, Tensor::FromVector<float>({1, 2}, {2, 1}));
  Tensor b = Eval(g, BroadcastTo(s, col, Const(s, std::vector<int32_t>{3, 2, 2})));
  EXPECT_EQ(b.shape(), TensorShape({3, 2, 2}));
  EXPECT_EQ(b.ToVector<float>(), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2}));
  Tensor row = Eval(g, BroadcastTo(s, Const(s, Tensor::FromVector<float>({1, 2}, {2})), Const(s, std::vector<int32_t>{2, 2})));
  EXPECT_EQ(row.ToVector<float>(), (std::vector<float>{1, 2, 1, 2}));

  Output x = Iota(s, {2, 3});  // [[0,1,2],[3,4,5]]
  EXPECT_EQ(Eval(g, SumToShape(s, x, Const(s, std::vector<int32_t>{3}))).ToVector<float>(),
            (std::vector<float>{3, 5, 7}));
  Tensor rows = Eval(g, SumToShape(s, x, Const(s, std::vector<int32_t>{2, 1})));
  EXPECT_EQ(rows.shape(), TensorShape({2, 1}));
  EXPECT_EQ(rows.ToVector<float>(), (std::vector<float>{3, 12}));
  EXPECT_EQ(Eval(g, SumToShape(s, x, Const(s, std::vector<int32_t>{}))).ToVector<float>(), (std::vector<float>{15}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();

  Scope bad(g);
  BroadcastTo(bad, x, Const(bad, std::vector<int32_t>{2, 4}));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status(), "[2,3] is not broadcast-compatible with [2,4]")) << bad.status().ToString();
  Output target = Placeholder(s, kInt32, PartialShape({2}));
  Status st = RunStatus(g, SumToShape(s, x, target), {{target, Tensor::Vec<int32_t>({2, 2})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(st, "[2,2] is not broadcast-compatible with [2,3]")) << st.ToString();
}

TEST(ShapeOpsTest, GradientsMatchFiniteDifferences) {
  std::vector<GradCheckCase> cases;
  AddArrayGradChecks(cases);
  ASSERT_GE(cases.size(), 14u);
  uint64_t seed = 1;
  for (const auto& c : cases) {
    auto r = CheckGradient(c, seed++);
    ASSERT_TRUE(r.ok()) << c.op << " " << c.name << ": " << r.status().ToString();
    EXPECT_GT(r->elements, 0) << c.op << " " << c.name;
    EXPECT_LT(r->max_error, c.tolerance) << c.op << " " << c.name;
  }
}

}  // namespace
}  // namespace tw
