// VariableReaders: the nodes an in-place update must wait for are those that
// read a variable's buffer on the way to the gradients (through the read
// Identity and other pass-through ops), and not the gradient computations that
// only read activations.
#include "towerflow/train/internal/variable_readers.h"

#include <gtest/gtest.h>

#include <set>

#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/register_all.h"

namespace tw::train::internal {
namespace {

std::set<std::string> Names(const std::vector<Node*>& nodes) {
  std::set<std::string> out;
  for (const Node* n : nodes) out.insert(n->name());
  return out;
}

TEST(VariableReadersTest, ReadsOnTheWayToTheGradientsAndNothingElse) {
  EnsureKernelsRegistered();
  Graph g;
  Scope s(g);
  Variable w1 = GetVariable(s, "w1", TensorShape{4, 3});
  Variable w2 = GetVariable(s, "w2", TensorShape{3, 2});
  Output x = Placeholder(s.WithOpName("x"), kFloat32);
  Output h = MatMul(s.WithOpName("h"), x, w1.value);
  // w2 reaches its reader through a pass-through op.
  Output w2_flat = Reshape(s.WithOpName("w2_flat"), w2.value, {3, 2});
  Output y = MatMul(s.WithOpName("y"), h, w2_flat);
  Output loss = Sum(s.WithOpName("loss"), y, {});
  // A reader that no gradient needs (an evaluation branch).
  Output eval = MatMul(s.WithOpName("eval"), x, w1.value);
  auto grads = Gradients(s.NewSubScope("gradients"), {loss}, {w1.ref, w2.ref});  // "gradients/gradients/..."
  ASSERT_TRUE(grads.ok()) << grads.status().ToString();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (void)eval;

  std::set<std::string> readers = Names(VariableReaders(g, {w1, w2}, *grads));
  // The read Identities, the reshape, the forward MatMuls, and the backward
  // MatMul dh = dy w2^T (which reads w2).
  EXPECT_TRUE(readers.count(w1.value.node->name())) << w1.value.node->name();
  EXPECT_TRUE(readers.count(w2.value.node->name()));
  EXPECT_TRUE(readers.count("w2_flat"));
  EXPECT_TRUE(readers.count("h"));
  EXPECT_TRUE(readers.count("y"));
  int backward_readers = 0;
  for (const std::string& name : readers) backward_readers += name.rfind("gradients/", 0) == 0;
  // dh = dy w2^T, and the Shape of w2's read in Reshape's gradient (it reads
  // no data, but takes the alias as a value: counted, conservatively).
  EXPECT_EQ(backward_readers, 2);
  EXPECT_TRUE(readers.count("gradients/gradients/y_grad/MatMul"));
  // Not the gradients' own MatMuls (they read x, h and dy), nor the evaluation branch.
  for (const Output& grad : *grads) EXPECT_FALSE(readers.count(grad.node->name())) << grad.node->name();
  EXPECT_FALSE(readers.count("eval"));
  EXPECT_EQ(readers.size(), 7u);
  // Only the variables asked about.
  std::set<std::string> w1_readers = Names(VariableReaders(g, {w1}, *grads));
  EXPECT_EQ(w1_readers, (std::set<std::string>{w1.value.node->name(), "h"}));
}

TEST(VariableReadersTest, EnsureShapePassesTheBufferThrough) {
  EnsureKernelsRegistered();
  Graph g;
  Scope s(g);
  Variable w = GetVariable(s, "w", TensorShape{3, 2});
  Output x = Placeholder(s.WithOpName("x"), kFloat32);
  // Python's set_shape: the read refined by an EnsureShape (no copy), then read.
  Output refined = EnsureShape(s.WithOpName("refined"), w.value, PartialShape({3, -1}));
  Output y = MatMul(s.WithOpName("y"), MatMul(s.WithOpName("h"), x, Const(s, std::vector<float>(12, 1.0f), {4, 3})),
                    refined);
  auto grads = Gradients(s.NewSubScope("gradients"), {Sum(s.WithOpName("loss"), y, {})}, {w.ref});
  ASSERT_TRUE(grads.ok()) << grads.status().ToString();
  std::set<std::string> readers = Names(VariableReaders(g, {w}, *grads));
  EXPECT_TRUE(readers.count("refined"));
  EXPECT_TRUE(readers.count("y"));  // reads the buffer through the EnsureShape
}

}  // namespace
}  // namespace tw::train::internal
