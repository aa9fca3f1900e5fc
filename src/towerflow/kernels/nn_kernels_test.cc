// nn kernels (nn_kernels.cc) against hand-computed values: BiasAdd, Relu,
// Softmax, both cross-entropies, L2Loss, Dropout masks and seeds; the errors of
// bad shapes, labels and rates; and the numeric gradient checks of the nn family.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <limits>
#include <cstring>

#include "towerflow/graph/gradients.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/internal/philox.h"
#include "towerflow/runtime/gradient_checker.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

std::vector<Tensor> EvalAll(Graph& g, const std::vector<Output>& outs, const FeedList& feeds = {}) {
  Session sess(g);
  auto r = sess.Run(feeds, outs);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Tensor>(outs.size());
}
Tensor Eval(Graph& g, const Output& out, const FeedList& feeds = {}) { return EvalAll(g, {out}, feeds)[0]; }

Output ConstF(const Scope& s, std::vector<float> v, TensorShape shape) {
  return Const(s, Tensor::FromVector<float>(v, shape));
}

void ExpectNear(const Tensor& t, const std::vector<double>& want, double tol) {
  ASSERT_EQ(t.NumElements(), static_cast<int64_t>(want.size())) << t.DebugString();
  for (size_t i = 0; i < want.size(); ++i) {
    const double got = t.dtype() == kFloat64 ? t.data<double>()[i] : t.data<float>()[i];
    EXPECT_NEAR(got, want[i], tol) << "element " << i;
  }
}

TEST(NnKernelsTest, BiasAddReluGradIsReluGradThenBiasAddGradBitForBit) {
  // Random gradients and forward outputs (zeros, negative zeros, NaN and
  // infinities among them), shapes whose rows split into shards over 4
  // threads, and the gradient's buffer given up to the output.
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0, 1);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const TensorShape& shape : {TensorShape{1}, TensorShape{3, 4}, TensorShape{100, 256}, TensorShape{7, 33, 31},
                                  TensorShape{5000, 3}, TensorShape{0, 4}}) {
    SCOPED_TRACE(shape.ToString());
    const int64_t n = shape.num_elements();
    std::vector<float> g(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      g[static_cast<size_t>(i)] = normal(rng);
      const float specials[] = {0.0f, -0.0f, nan, inf, -inf};
      y[static_cast<size_t>(i)] = i % 11 == 0 ? specials[(i / 11) % 5] : normal(rng);
    }
    for (int with_nan_gradient = 0; with_nan_gradient < 2; ++with_nan_gradient) {
      if (with_nan_gradient && n > 2) g[2] = nan;
      Graph graph;
      Scope s(graph);
      Output gi = ConstF(s, g, shape), yi = ConstF(s, y, shape);
      Output dz = NodeBuilder(s, "ReluGrad").Input(gi).Input(yi).Finalize();
      Output db = NodeBuilder(s, "BiasAddGrad").Input(dz).Finalize();
      // A gradient computed for it alone (x * 1 keeps every bit), whose buffer
      // the fused op takes over: the in-place path.
      Output fresh = Mul(s, gi, ConstF(s, {1.0f}, TensorShape{}));
      Node* fused = NodeBuilder(s, "BiasAddReluGrad").Input(fresh).Input(yi).Finalize();
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      SessionOptions opts;
      opts.intra_op_threads = 4;
      Session session(graph, opts);
      auto r = session.Run({dz, db, Output(fused, 0), Output(fused, 1)});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (int k = 0; k < 2; ++k) {
        const Tensor& a = (*r)[static_cast<size_t>(k)];
        const Tensor& b = (*r)[static_cast<size_t>(k + 2)];
        ASSERT_EQ(a.shape(), b.shape()) << k;
        EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()), 0) << "output " << k;
      }
    }
  }
  // Checks: ReluGrad's shapes, then BiasAddGrad's rank.
  Graph graph;
  Scope s(graph);
  Node* bad = NodeBuilder(s, "BiasAddReluGrad")
                  .Input(Placeholder(s.WithOpName("g"), kFloat32))
                  .Input(Placeholder(s.WithOpName("y"), kFloat32))
                  .Finalize();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(graph);
  auto mismatch = session.Run({{Output(graph.FindNode("g")), Tensor::Vec<float>({1, 2})},
                               {Output(graph.FindNode("y")), Tensor::Vec<float>({1, 2, 3})}},
                              {Output(bad, 0)});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), Code::kInvalidArgument) << mismatch.status().ToString();
  auto scalar = session.Run({{Output(graph.FindNode("g")), Tensor::Scalar<float>(1)},
                             {Output(graph.FindNode("y")), Tensor::Scalar<float>(1)}},
                            {Output(bad, 1)});
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.status().code(), Code::kInvalidArgument) << scalar.status().ToString();
}

TEST(NnKernelsTest, BiasAddAndItsGradient) {
  Graph g;
  Scope s(g);
  Output v = ConstF(s, {1, 2, 3, 4, 5, 6}, {2, 3});
  Output b = ConstF(s, {10, 20, 30}, {3});
  EXPECT_EQ(Eval(g, BiasAdd(s, v, b)).ToVector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  Output grad = NodeBuilder(s, "BiasAddGrad").Input(v).Finalize();
  EXPECT_EQ(Eval(g, grad).ToVector<float>(), (std::vector<float>{5, 7, 9}));
  // Many rows: the sharded, blocked sum must still be exact on integers.
  std::vector<float> ones(1000 * 3, 1.0f);
  Output big = NodeBuilder(s, "BiasAddGrad").Input(ConstF(s, ones, {10, 100, 3})).Finalize();
  SessionOptions opts;
  opts.intra_op_threads = 4;
  Session sess(g, opts);
  EXPECT_EQ((*sess.Run({big}))[0].ToVector<float>(), (std::vector<float>{1000, 1000, 1000}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();

  Scope bad(g);
  BiasAdd(bad, v, ConstF(bad, {1, 2}, {2}));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[2,3]"), std::string::npos) << bad.status().ToString();
  Output p = Placeholder(s, kFloat32);
  Status st = Session(g).Run({{p, Tensor(kFloat32, {4})}}, {BiasAdd(s, v, p)}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

TEST(NnKernelsTest, FusedBiasAddReluMatchesTheTwoOps) {
  Graph g;
  Scope s(g);
  Output v = ConstF(s, {-5, 1, 2, 3, -40, 6}, {2, 3});
  Output b = ConstF(s, {1, -2, 3}, {3});
  // -5+1, 1-2, 2+3 | 3+1, -40-2, 6+3, then relu.
  EXPECT_EQ(Eval(g, BiasAddRelu(s, v, b)).ToVector<float>(), (std::vector<float>{0, 0, 5, 4, 0, 9}));
  auto fused = Gradients(s, {Sum(s, BiasAddRelu(s, v, b), std::vector<int32_t>{})}, {v, b});
  auto split = Gradients(s, {Sum(s, Relu(s, BiasAdd(s, v, b)), std::vector<int32_t>{})}, {v, b});
  ASSERT_TRUE(fused.ok() && split.ok());
  EXPECT_EQ(Eval(g, (*fused)[0]).ToVector<float>(), Eval(g, (*split)[0]).ToVector<float>());
  EXPECT_EQ(Eval(g, (*fused)[1]).ToVector<float>(), (std::vector<float>{1, 0, 2}));
  auto bad = BiasAddRelu(s, v, ConstF(s, {1, 2}, {2}));
  EXPECT_FALSE(bad.valid());
  EXPECT_NE(s.status().message().find("does not match the last dimension"), std::string::npos);
}

TEST(NnKernelsTest, ReluAndReluGrad) {
  Graph g;
  Scope s(g);
  Output x = ConstF(s, {-2, -0.5f, 0, 0.5f, 3}, {5});
  EXPECT_EQ(Eval(g, Relu(s, x)).ToVector<float>(), (std::vector<float>{0, 0, 0, 0.5f, 3}));
  Output dy = ConstF(s, {1, 2, 3, 4, 5}, {5});
  Output grad = NodeBuilder(s, "ReluGrad").Input(dy).Input(x).Finalize();
  EXPECT_EQ(Eval(g, grad).ToVector<float>(), (std::vector<float>{0, 0, 0, 4, 5}));
}

TEST(NnKernelsTest, SoftmaxIsStableForLargeLogits) {
  Graph g;
  Scope s(g);
  Output x = ConstF(s, {1001, 1002, 1003, 0, 0, 0}, {2, 3});
  // softmax([1,2,3]) = e^k / (e + e^2 + e^3).
  ExpectNear(Eval(g, Softmax(s, x)), {0.09003057, 0.24472847, 0.66524096, 1. / 3, 1. / 3, 1. / 3}, 1e-6);
}

TEST(NnKernelsTest, SoftmaxCrossEntropyHandValues) {
  Graph g;
  Scope s(g);
  Output logits = ConstF(s, {0, 0, 0, 1001, 1002, 1003}, {2, 3});
  Output labels = ConstF(s, {1, 0, 0, 0, 0.5f, 0.5f}, {2, 3});
  SoftmaxXentResult r = SoftmaxCrossEntropyWithLogits(s, logits, labels);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(r.loss.shape(), PartialShape({2}));
  auto out = EvalAll(g, {r.loss, r.backprop});
  // Row 0: ln 3. Row 1: -(ln p1 + ln p2) / 2 with ln p_k = k - ln(e + e^2 + e^3).
  ExpectNear(out[0], {1.0986123, 0.90760596}, 1e-5);
  ExpectNear(out[1], {1. / 3 - 1, 1. / 3, 1. / 3, 0.09003057, -0.25527153, 0.16524096}, 1e-6);

  Scope bad(g);
  SoftmaxCrossEntropyWithLogits(bad, logits, ConstF(bad, {1, 0}, {1, 2}));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

TEST(NnKernelsTest, SparseSoftmaxCrossEntropyHandValuesAndLabelErrors) {
  Graph g;
  Scope s(g);
  Output logits = ConstF(s, {0, 0, 0, 1001, 1002, 1003}, {2, 3});
  Output labels = Placeholder(s, kInt64, PartialShape({2}));
  SoftmaxXentResult r = SparseSoftmaxCrossEntropyWithLogits(s, logits, labels);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto out = EvalAll(g, {r.loss, r.backprop}, {{labels, Tensor::Vec<int64_t>({0, 2})}});
  ExpectNear(out[0], {1.0986123, 0.40760596}, 1e-5);
  ExpectNear(out[1], {1. / 3 - 1, 1. / 3, 1. / 3, 0.09003057, 0.24472847, -0.33475904}, 1e-6);

  Session sess(g);
  Status st = sess.Run({{labels, Tensor::Vec<int64_t>({1, 3})}}, {r.loss}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("label 3 in row 1"), std::string::npos) << st.ToString();
  st = sess.Run({{labels, Tensor::Vec<int64_t>({-1, 0})}}, {r.loss}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);

  Output labels32 = Const(s, std::vector<int32_t>{2, 1});
  Tensor loss32 = Eval(g, SparseSoftmaxCrossEntropyWithLogits(s, logits, labels32).loss);
  ExpectNear(loss32, {1.0986123, 1.40760596}, 1e-5);
}

// The fused op gives the separate ops' bits: the loss as Mean of the rows'
// cross-entropies, the backprop as their gradient, `correct` as
// Cast(Equal(ArgMax(logits, 1), labels)); over float and double, both label
// types, a batch past one reduction chunk (8192 rows), ties, and NaN logits
// (first in a row, and later). Its gradient is the backprop output itself.
TEST(NnKernelsTest, SparseSoftmaxCrossEntropyMeanIsTheSeparateOpsBitForBit) {
  std::mt19937_64 rng(5);
  for (DataType dtype : {kFloat32, kFloat64}) {
    for (DataType label_type : {kInt32, kInt64}) {
      for (auto [rows, c] : std::vector<std::pair<int64_t, int64_t>>{{100, 10}, {9000, 3}, {1, 1}, {0, 4}}) {
        SCOPED_TRACE(std::string(DataTypeName(dtype)) + " " + std::string(DataTypeName(label_type)) + " [" +
                     std::to_string(rows) + "," + std::to_string(c) + "]");
        std::uniform_real_distribution<double> u(-4, 4);
        std::uniform_int_distribution<int64_t> cls(0, c - 1);
        Tensor logits(dtype, TensorShape{rows, c}), labels(label_type, TensorShape{rows});
        for (int64_t i = 0; i < rows * c; ++i) {
          // Every fifth value repeats the one before: ties.
          const double v = i % 5 == 4 ? (dtype == kFloat32 ? logits.data<float>()[i - 1] : logits.data<double>()[i - 1]) : u(rng);
          if (dtype == kFloat32) logits.data<float>()[i] = static_cast<float>(v);
          if (dtype == kFloat64) logits.data<double>()[i] = v;
        }
        if (rows >= 3 && c >= 3) {
          const double nan = std::numeric_limits<double>::quiet_NaN();
          for (int64_t at : {int64_t{0}, 2 * c + 1}) {  // row 0 first, row 2 second
            if (dtype == kFloat32) logits.data<float>()[at] = static_cast<float>(nan);
            if (dtype == kFloat64) logits.data<double>()[at] = nan;
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          if (label_type == kInt32) labels.data<int32_t>()[r] = static_cast<int32_t>(cls(rng));
          if (label_type == kInt64) labels.data<int64_t>()[r] = cls(rng);
        }
        Graph g;
        Scope s(g);
        Output x = Placeholder(s, dtype), y = Placeholder(s, label_type);
        Output mean = Mean(s, SparseSoftmaxCrossEntropyWithLogits(s, x, y).loss, {0});
        Output hits = Cast(s, Equal(s, ArgMax(s, x, 1), label_type == kInt64 ? y : Cast(s, y, kInt64)), dtype);
        SoftmaxXentMeanResult fused = SparseSoftmaxCrossEntropyMean(s, x, y);
        auto separate_grad = Gradients(s, {mean}, {x});
        auto fused_grad = Gradients(s, {fused.loss}, {x});
        ASSERT_TRUE(separate_grad.ok() && fused_grad.ok() && s.ok()) << s.status().ToString();
        EXPECT_EQ((*fused_grad)[0], fused.backprop) << "Minimize's OnesLike needs no multiply";
        auto out = EvalAll(g, {mean, (*separate_grad)[0], hits, fused.loss, fused.backprop, fused.correct},
                           {{x, logits}, {y, labels}});
        ASSERT_EQ(out.size(), 6u);
        for (int k = 0; k < 3; ++k) {
          ASSERT_EQ(out[k].shape(), out[k + 3].shape()) << k;
          EXPECT_EQ(std::memcmp(out[k].raw_data(), out[k + 3].raw_data(), out[k].TotalBytes()), 0) << "output " << k;
        }
      }
    }
  }
}

// A loss scaled after the op multiplies the backprop; labels outside the
// classes fail as the separate cross-entropy's do.
TEST(NnKernelsTest, SparseSoftmaxCrossEntropyMeanScaledAndBadLabels) {
  Graph g;
  Scope s(g);
  Output logits = ConstF(s, {0, 0, 0, 1001, 1002, 1003}, {2, 3});
  Output labels = Placeholder(s, kInt64, PartialShape({2}));
  SoftmaxXentMeanResult r = SparseSoftmaxCrossEntropyMean(s, logits, labels);
  auto grad = Gradients(s, {Mul(s, r.loss, Const(s, 4.0f))}, {logits});
  ASSERT_TRUE(grad.ok() && s.ok()) << s.status().ToString();
  auto out = EvalAll(g, {r.loss, r.backprop, r.correct, (*grad)[0]}, {{labels, Tensor::Vec<int64_t>({0, 2})}});
  ExpectNear(out[0], {(1.0986123 + 0.40760596) / 2}, 1e-5);
  ExpectNear(out[1], {(1. / 3 - 1) / 2, 1. / 6, 1. / 6, 0.09003057 / 2, 0.24472847 / 2, -0.33475904 / 2}, 1e-6);
  ExpectNear(out[2], {1, 1}, 0);  // row 0: all tied, class 0 first
  ExpectNear(out[3], {2 * (1. / 3 - 1), 2. / 3, 2. / 3, 2 * 0.09003057, 2 * 0.24472847, -2 * 0.33475904}, 1e-5);
  Session sess(g);
  Status st = sess.Run({{labels, Tensor::Vec<int64_t>({1, 3})}}, {r.loss}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("label 3 in row 1"), std::string::npos) << st.ToString();
}

// The gradient through the backprop output divides by the rows, known when
// the graph is built or only when it runs: both give the same values.
TEST(NnKernelsTest, SparseSoftmaxCrossEntropyMeanGradientThroughBackpropCountsTheRows) {
  Graph g;
  Scope s(g);
  Output known = Placeholder(s, kFloat32, PartialShape({2, 3}));
  Output unknown = Placeholder(s, kFloat32);
  Output labels = Const(s, std::vector<int32_t>{2, 0});
  Output weights = ConstF(s, {1, -2, 3, 0.5f, 4, -1}, {2, 3});
  std::vector<Output> grads;
  for (const Output& x : {known, unknown}) {
    Output y = Sum(s, Mul(s, SparseSoftmaxCrossEntropyMean(s, x, labels).backprop, weights), {0, 1});
    auto d = Gradients(s, {y}, {x});
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    grads.push_back((*d)[0]);
  }
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Tensor logits = Tensor::FromVector<float>({0.1f, 0.7f, -0.3f, 1.2f, 0.0f, 0.4f}, TensorShape{2, 3});
  auto out = EvalAll(g, grads, {{known, logits}, {unknown, logits}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ToVector<float>(), out[1].ToVector<float>());
  float norm = 0;
  for (float v : out[0].ToVector<float>()) norm += std::fabs(v);
  EXPECT_GT(norm, 0.01f);
}

TEST(NnKernelsTest, L2Loss) {
  Graph g;
  Scope s(g);
  ExpectNear(Eval(g, L2Loss(s, ConstF(s, {1, -2, 3}, {3}))), {7.0}, 0);
}

TEST(NnKernelsTest, DropoutMasksAreScaledAndSeeded) {
  Graph g;
  Scope s(g);
  std::vector<float> ones(1000, 2.0f);
  Output x = ConstF(s, ones, {10, 100});
  DropoutResult d = Dropout(s, x, 0.75f, 42);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session s1(g), s2(g);
  auto a = *s1.Run({d.output, d.mask});
  auto b = *s2.Run({d.output, d.mask});
  auto next = *s1.Run({d.mask});
  int kept = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const float m = a[1].data<float>()[i];
    ASSERT_TRUE(m == 0.0f || m == 4.0f) << m;
    EXPECT_EQ(a[0].data<float>()[i], 2.0f * m);
    kept += m != 0.0f;
  }
  // 250 expected; 5 standard deviations is about 68.
  EXPECT_NEAR(kept, 250, 68);
  EXPECT_EQ(a[1].ToVector<float>(), b[1].ToVector<float>());     // one seed, one sequence
  EXPECT_NE(a[1].ToVector<float>(), next[0].ToVector<float>());  // a new mask each step

  Scope bad(g);
  Dropout(bad, x, 1.0f);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  Scope bad2(g);
  Dropout(bad2, x, -0.1f);
  EXPECT_EQ(bad2.status().code(), Code::kInvalidArgument);
}

// Random123's published known-answer vectors for Philox4x32-10.
TEST(PhiloxTest, KnownAnswers) {
  auto words = [](philox::Words w) { return std::vector<uint32_t>(w.w, w.w + 4); };
  EXPECT_EQ(words(philox::Philox4x32_10(0, 0, 0, 0, 0, 0)),
            (std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(words(philox::Philox4x32_10(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff)),
            (std::vector<uint32_t>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(words(philox::Philox4x32_10(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0)),
            (std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  // Block(seed, seed2, b): key = seed, counter = (b, seed2), low words first.
  EXPECT_EQ(words(philox::Block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull)),
            (std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// The mask is the definition of dropout_stream.h: element i of a call keeps
// its value when word i % 4 of Philox block first + i / 4 is at least
// rate * 2^32, and each call starts where the last one's blocks ended; the
// output is x * mask. 1003 elements: the kernel's vectorised blocks and the
// last, partial one. (The CUDA kernel is held to the same masks by nn_cuda_test.)
TEST(NnKernelsTest, DropoutMasksFollowThePhiloxStream) {
  constexpr int64_t kN = 1003;
  Graph g;
  Scope s(g);
  std::vector<float> xv(kN);
  for (int64_t i = 0; i < kN; ++i) xv[static_cast<size_t>(i)] = 0.5f + static_cast<float>(i % 17) * 0.37f;
  Output x = ConstF(s, xv, {kN});
  DropoutResult d = Dropout(s, x, 0.3f, 42);  // no graph seed: (87654321, 42), as TF's get_seed
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session session(g);
  const uint64_t threshold = static_cast<uint64_t>(static_cast<double>(0.3f) * 4294967296.0);
  const float scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(0.3f)));
  uint64_t first_block = 0;
  for (int call = 0; call < 3; ++call) {
    auto r = session.Run({d.mask, d.output});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    int64_t kept = 0;
    for (int64_t i = 0; i < kN; ++i) {
      const philox::Words w = philox::Block(87654321, 42, first_block + static_cast<uint64_t>(i / 4));
      const float m = w.w[i % 4] >= threshold ? scale : 0.0f;
      kept += m != 0.0f;
      ASSERT_EQ((*r)[0].data<float>()[i], m) << "call " << call << " i " << i;
      ASSERT_EQ((*r)[1].data<float>()[i], xv[static_cast<size_t>(i)] * m) << "call " << call << " i " << i;
    }
    EXPECT_GT(kept, kN / 2);
    EXPECT_LT(kept, kN * 9 / 10);
    first_block += (kN + 3) / 4;
  }
}

TEST(NnKernelsTest, GradientsMatchFiniteDifferences) {
  std::vector<GradCheckCase> cases;
  AddNnGradChecks(cases);
  uint64_t seed = 100;
  for (const auto& c : cases) {
    auto r = CheckGradient(c, seed++);
    ASSERT_TRUE(r.ok()) << c.op << " " << c.name << ": " << r.status().ToString();
    EXPECT_GT(r->elements, 0) << c.op << " " << c.name;
    EXPECT_LT(r->max_error, c.tolerance) << c.op << " " << c.name;
  }
}

}  // namespace
}  // namespace tw
