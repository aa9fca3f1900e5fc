#include "towerflow/graph/graph.h"

#include <gtest/gtest.h>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/control_flow_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/shape_inference.h"
#include "towerflow/graph/scope.h"

namespace tw {
namespace {

TEST(ScopeTest, HierarchicalUniqueNames) {
  Graph g;
  Scope root(g);
  auto a = Const(root, 1.0f);
  auto b = Const(root, 2.0f);
  EXPECT_EQ(a.node->name(), "Const");
  EXPECT_EQ(b.node->name(), "Const_1");
  Scope tower = root.NewSubScope("tower_0");
  Scope dense = tower.NewSubScope("dense");
  auto c = Identity(dense, a);
  EXPECT_EQ(c.node->name(), "tower_0/dense/Identity");
  Scope dense_again = tower.NewSubScope("dense");
  EXPECT_EQ(dense_again.name_scope(), "tower_0/dense_1");
  auto named = Identity(root.WithOpName("out"), a);
  EXPECT_EQ(named.node->name(), "out");
  auto named2 = Identity(root.WithOpName("out"), a);
  EXPECT_EQ(named2.node->name(), "out_1");
  EXPECT_EQ(named.name(), "out:0");
}

TEST(ScopeTest, DeviceAndControlDependenciesAreRecorded) {
  Graph g;
  Scope root(g);
  auto a = Const(root, 1.0f);
  auto b = Identity(root.WithDevice("/gpu:1").WithControlDependencies({a}), a);
  EXPECT_EQ(b.node->requested_device(), "/gpu:1");
  ASSERT_EQ(b.node->control_inputs().size(), 1u);
  EXPECT_EQ(b.node->control_inputs()[0], a.node);
  ASSERT_EQ(g.consumers(a.node).size(), 2u);
}

TEST(ScopeTest, ErrorsAccumulateAndNameTheNode) {
  Graph g;
  Scope root(g);
  auto x = Placeholder(root.WithOpName("x"), kFloat32);
  Node* bad = NodeBuilder(root.WithOpName("mystery"), "NoSuchOp").Input(x).Finalize();
  EXPECT_EQ(bad, nullptr);
  EXPECT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kNotFound);
  EXPECT_NE(root.status().message().find("'mystery' (NoSuchOp)"), std::string::npos) << root.status().ToString();
  // A builder given a null input records nothing more: one root cause.
  auto after = Identity(root, Output(bad));
  EXPECT_FALSE(after.valid());
  EXPECT_EQ(root.errors().size(), 1u);
  // A second, independent error is kept too.
  NodeBuilder(root, "Identity").Input(x).Attr("T", kInt32).Finalize();
  EXPECT_EQ(root.errors().size(), 2u);
  EXPECT_NE(root.status().message().find("(and 1 more errors)"), std::string::npos);
}

TEST(GraphTest, SchemaChecksInputsAndAttrs) {
  Graph g;
  Scope root(g);
  auto x = Placeholder(root, kFloat32);
  NodeBuilder(root.WithOpName("cast"), "Cast").Input(x).Attr("DstT", std::string("float")).Finalize();
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("attr 'DstT' must be type"), std::string::npos) << root.status().ToString();

  Graph g2;
  Scope r2(g2);
  NodeBuilder(r2.WithOpName("id"), "Identity").Finalize();
  EXPECT_NE(r2.status().message().find("missing 'input'"), std::string::npos) << r2.status().ToString();

  Graph g3;
  Scope r3(g3);
  NodeBuilder(r3, "NoOp").Attr("bogus", int64_t{1}).Finalize();
  EXPECT_NE(r3.status().message().find("unknown attr 'bogus'"), std::string::npos);
}

// An input or control input of another graph is refused when the op is
// built (read through this graph's ids it would be a wrong tensor, a crash or
// a hang at run time).
TEST(GraphTest, InputsOfAnotherGraphAreRefused) {
  Graph g1, g2;
  Scope s1(g1), s2(g2);
  auto a = Placeholder(s1.WithOpName("a"), kFloat32);
  auto b = Placeholder(s2.WithOpName("b"), kFloat32);
  auto sum = Identity(s2.WithOpName("sum"), a);
  EXPECT_FALSE(sum.valid());
  ASSERT_FALSE(s2.ok());
  EXPECT_EQ(s2.status().code(), Code::kInvalidArgument);
  EXPECT_NE(s2.status().message().find("input 0 ('a:0') is a tensor of another graph"), std::string::npos)
      << s2.status().ToString();
  Scope s3(g2);
  NodeBuilder(s3.WithOpName("after"), "Identity").Input(b).ControlInput(a.node).Finalize();
  ASSERT_FALSE(s3.ok());
  EXPECT_NE(s3.status().message().find("control input 'a' is an op of another graph"), std::string::npos)
      << s3.status().ToString();
  EXPECT_EQ(g2.num_nodes(), 1);  // b alone
}

// Shape tensors known in part at build time (TF's partial shape values):
// [tf.shape(x)[0], 4] keeps its 4, a slice whose begin is known in part
// keeps the dims it can, and a shape known whole is a constant's.
TEST(GraphTest, ShapesComputedFromShapesKeepWhatIsKnown) {
  Graph g;
  Scope s(g);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, PartialShape({-1, 3, 4}));
  auto shape = Shape(s, x);
  EXPECT_EQ(shape.node->partial_value(), (PartialVector{std::nullopt, 3, 4}));
  // n = shape[0] (a scalar), then [n, 12] and [n, 4, 3].
  auto n = Squeeze(s, Slice(s, shape, std::vector<int32_t>{0}, std::vector<int32_t>{1}));
  EXPECT_FALSE(n.node->partial_value().has_value());  // nothing of it is known
  auto twelve = Const(s, std::vector<int32_t>{12});
  auto flat = Reshape(s, x, Concat(s, {ExpandDims(s, n, 0), twelve}, 0));
  EXPECT_EQ(flat.shape(), PartialShape({-1, 12}));
  auto dims = Slice(s, shape, std::vector<int32_t>{1}, std::vector<int32_t>{2});  // [3, 4], known whole
  auto swapped = Reshape(s, x, Concat(s, {ExpandDims(s, n, 0), Slice(s, dims, std::vector<int32_t>{1},
                                                                     std::vector<int32_t>{1}),
                                          Slice(s, dims, std::vector<int32_t>{0}, std::vector<int32_t>{1})},
                                      0));
  EXPECT_EQ(swapped.shape(), PartialShape({-1, 4, 3}));
  // x[:, n - 1] of an unknown n: begin [0, n - 1, 0] keeps dims 0 and 2.
  auto last = Sub(s, Squeeze(s, Slice(s, shape, std::vector<int32_t>{0}, std::vector<int32_t>{1})),
                  Const(s, int32_t{1}));
  auto begin = Concat(s, {Const(s, std::vector<int32_t>{0}), ExpandDims(s, last, 0),
                          Const(s, std::vector<int32_t>{0})},
                      0);
  auto y = Placeholder(s.WithOpName("y"), kFloat32, PartialShape({-1, -1, 4}));
  auto sliced = Slice(s, y, begin, Const(s, std::vector<int32_t>{-1, 1, -1}));
  EXPECT_EQ(sliced.shape(), PartialShape({-1, 1, 4}));
  // Fill of [n, 4].
  auto filled = Fill(s, Concat(s, {ExpandDims(s, n, 0), Const(s, std::vector<int32_t>{4})}, 0),
                     Const(s, 0.0f));
  EXPECT_EQ(filled.shape(), PartialShape({-1, 4}));
  // A value the int32 output cannot hold is not known (the kernel's wraps).
  auto big = Cast(s, Const(s, Tensor::FromVector<int64_t>({(int64_t{1} << 32) + 2}, TensorShape{1})), kInt32);
  EXPECT_FALSE(big.node->partial_value().has_value());
  EXPECT_EQ(Fill(s, big, Const(s, 0.0f)).shape(), PartialShape({-1}));
  auto product = Mul(s, Const(s, std::vector<int32_t>{65536}), Const(s, std::vector<int32_t>{65536}));
  EXPECT_FALSE(product.node->partial_value().has_value());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

TEST(GraphTest, ShapesAreInferredAtBuildTime) {
  Graph g;
  Scope root(g);
  auto x = Placeholder(root, kFloat32, PartialShape({-1, 784}));
  EXPECT_EQ(Identity(root, x).shape().ToString(), "[?,784]");
  auto c = Const(root, Tensor::FromVector<float>({1, 2}, TensorShape{2}));
  EXPECT_EQ(c.shape().ToString(), "[2]");
  EXPECT_EQ(Cast(root, c, kInt32).dtype(), kInt32);
}

TEST(GraphTest, CollectionsAndGroup) {
  Graph g;
  Scope root(g);
  auto a = Const(root, 1.0f);
  g.AddToCollection(collections::kLosses, a);
  EXPECT_EQ(g.GetCollection<Output>(collections::kLosses).size(), 1u);
  EXPECT_TRUE(g.GetCollection<Output>("nothing").empty());
  Node* grp = Group(root, {a, a});
  EXPECT_EQ(grp->name(), "group_deps");
  EXPECT_EQ(grp->control_inputs().size(), 2u);
}

}  // namespace
}  // namespace tw
