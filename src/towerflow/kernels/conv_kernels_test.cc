// Conv2D and its backprops (conv_kernels.cc) against direct loops written here
// from the definition, over odd shapes, strides, both paddings, the 1x1 path and
// batches big enough to be split into several im2col chunks, on every float32
// path (the direct first-layer loops where the CPU has AVX-512F, oneDNN where
// built in, and im2col) and on float64; MaxPool and its
// gradients (pool_kernels.cc) against hand values, including TF's SAME padding
// split (the smaller half before) and first-maximum tie breaking.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>
#include <limits>
#include <random>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/im2col.h"
#include "towerflow/kernels/internal/direct_conv.h"
#include "towerflow/kernels/internal/dnnl_conv.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

struct ConvCase {
  int64_t n, h, w, c, kh, kw, o, sh, sw;
  std::string padding;
};

// TF's output size and leading pad, written out independently of the kernel.
void OutAndPad(int64_t in, int64_t k, int64_t s, bool same, int64_t* out, int64_t* pad) {
  *out = same ? (in + s - 1) / s : (in - k + s) / s;
  *pad = same ? std::max<int64_t>(0, (*out - 1) * s + k - in) / 2 : 0;
}

struct Ref {
  int64_t oh, ow, pt, pl;
  Ref(const ConvCase& c) {  // NOLINT
    OutAndPad(c.h, c.kh, c.sh, c.padding == "SAME", &oh, &pt);
    OutAndPad(c.w, c.kw, c.sw, c.padding == "SAME", &ow, &pl);
  }
  // Calls fn(x index, w index, y index) for every multiply of the convolution.
  template <typename Fn>
  void ForEachTap(const ConvCase& c, Fn&& fn) const {
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = oy * c.sh - pt + ky, ix = ox * c.sw - pl + kx;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              for (int64_t ch = 0; ch < c.c; ++ch)
                for (int64_t o = 0; o < c.o; ++o) {
                  fn(((n * c.h + iy) * c.w + ix) * c.c + ch, ((ky * c.kw + kx) * c.c + ch) * c.o + o,
                     ((n * oh + oy) * ow + ox) * c.o + o);
                }
            }
  }
};

// The kernels' geometry of a case (what the oneDNN and direct loops take).
StatusOr<conv::ConvGeometry> GeometryOf(const ConvCase& c) {
  return conv::MakeGeometry("Conv2D", TensorShape{c.n, c.h, c.w, c.c}, TensorShape{c.kh, c.kw, c.c, c.o},
                            {1, c.sh, c.sw, 1}, c.padding == "SAME");
}

template <typename T>
Tensor Random(const TensorShape& shape, std::mt19937_64& rng) {
  Tensor t(DataTypeOf<T>(), shape);
  std::uniform_real_distribution<double> u(-1, 1);
  for (T& v : t.flat<T>()) v = static_cast<T>(u(rng));
  return t;
}

template <typename T>
void ExpectClose(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << what;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got.data<T>()[i] - want[i]));
  EXPECT_LT(worst, tol) << what;
}

template <typename T>
void CheckConv(const ConvCase& c) {
  const std::string what = "case [" + std::to_string(c.n) + "," + std::to_string(c.h) + "," + std::to_string(c.w) +
                           "," + std::to_string(c.c) + "] * [" + std::to_string(c.kh) + "," + std::to_string(c.kw) +
                           ",.," + std::to_string(c.o) + "] strides " + std::to_string(c.sh) + "x" +
                           std::to_string(c.sw) + " " + c.padding + " " + std::string(DataTypeName(DataTypeOf<T>()));
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-10;
  const Ref ref(c);
  std::mt19937_64 rng(c.n * 1000 + c.h * 10 + c.kh);
  Tensor x = Random<T>({c.n, c.h, c.w, c.c}, rng);
  Tensor w = Random<T>({c.kh, c.kw, c.c, c.o}, rng);
  Tensor dy = Random<T>({c.n, ref.oh, ref.ow, c.o}, rng);
  std::vector<double> y(static_cast<size_t>(dy.NumElements())), dx(static_cast<size_t>(x.NumElements())),
      dw(static_cast<size_t>(w.NumElements()));
  ref.ForEachTap(c, [&](int64_t xi, int64_t wi, int64_t yi) {
    y[yi] += double(x.data<T>()[xi]) * double(w.data<T>()[wi]);
    dx[xi] += double(dy.data<T>()[yi]) * double(w.data<T>()[wi]);
    dw[wi] += double(x.data<T>()[xi]) * double(dy.data<T>()[yi]);
  });

  Graph g;
  Scope s(g);
  Output px = Placeholder(s, DataTypeOf<T>()), pw = Placeholder(s, DataTypeOf<T>());
  Output pdy = Placeholder(s, DataTypeOf<T>());
  const std::vector<int64_t> strides = {1, c.sh, c.sw, 1};
  Output conv = Conv2D(s, px, pw, {strides, c.padding});
  auto backprop = [&](const char* op, Output a, Output b) {
    return Output(NodeBuilder(s, op).Input(a).Input(b).Input(pdy).Attr("strides", strides).Attr("padding", c.padding).Finalize());
  };
  Output bx = backprop("Conv2DBackpropInput", Shape(s, px), pw);
  Output bw = backprop("Conv2DBackpropFilter", px, Shape(s, pw));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  SessionOptions opts;
  opts.intra_op_threads = 3;
  Session sess(g, opts);
  auto r = sess.Run({{px, x}, {pw, w}, {pdy, dy}}, {conv, bx, bw});
  ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
  EXPECT_EQ((*r)[0].shape(), dy.shape()) << what;
  ExpectClose<T>((*r)[0], y, tol, what + " Conv2D");
  ExpectClose<T>((*r)[1], dx, tol, what + " Conv2DBackpropInput");
  ExpectClose<T>((*r)[2], dw, tol * 10, what + " Conv2DBackpropFilter");
}

const std::vector<ConvCase>& Cases() {
  static const std::vector<ConvCase> k = {
      {1, 5, 5, 1, 3, 3, 1, 1, 1, "SAME"},   {2, 7, 6, 3, 3, 3, 4, 2, 2, "SAME"},
      {2, 7, 6, 3, 3, 3, 4, 2, 2, "VALID"},  {1, 9, 8, 2, 4, 2, 3, 3, 2, "SAME"},
      {3, 6, 7, 2, 2, 5, 3, 1, 3, "VALID"},  {2, 5, 5, 4, 1, 1, 3, 1, 1, "SAME"},
      {1, 6, 6, 2, 1, 1, 2, 2, 2, "VALID"},  {4, 3, 3, 2, 5, 5, 2, 1, 1, "SAME"},
      {1, 9, 8, 8, 3, 3, 3, 2, 2, "SAME"},   {2, 8, 9, 6, 3, 4, 2, 2, 3, "VALID"},
      {2, 28, 28, 1, 5, 5, 4, 1, 1, "SAME"},  // the tutorial's first layer, narrow
      {30, 14, 14, 32, 5, 5, 3, 1, 1, "SAME"},  // several im2col chunks, a partial last one
      // First layers the direct loops run (internal/direct_conv.h): rows that
      // end in a partial block, one- and multi-channel images, 16 to 48 outputs.
      {3, 13, 11, 1, 5, 5, 32, 1, 1, "SAME"},  {2, 7, 9, 3, 3, 3, 48, 1, 1, "VALID"},
      {2, 1, 1, 2, 3, 3, 16, 1, 1, "SAME"},    {1, 33, 5, 4, 2, 4, 16, 1, 1, "SAME"},
  };
  return k;
}

TEST(ConvKernelsTest, MatchesDirectLoopsFloat) {
  for (const auto& c : Cases()) CheckConv<float>(c);
}
// The same cases with oneDNN switched off: im2col + GEMM for float32 too.
TEST(ConvKernelsTest, MatchesDirectLoopsFloatOnIm2col) {
  ASSERT_EQ(0, setenv("TOWERFLOW_CONV", "im2col", 1));
  EXPECT_FALSE(dnnl_conv::Enabled());
  for (const auto& c : Cases()) CheckConv<float>(c);
  ASSERT_EQ(0, unsetenv("TOWERFLOW_CONV"));
}

// oneDNN itself, below the kernels: every case builds, windows that leave
// trailing input unread included, and each pass over a sub-range of the batch
// matches the direct loops (so the float32 kernels above did run on it).
TEST(ConvKernelsTest, OneDnnRunsEveryWindowItCanExpress) {
  if (!dnnl_conv::Enabled()) GTEST_SKIP() << "built without oneDNN";
  int built = 0;
  for (const ConvCase& c : Cases()) {
    const Ref ref(c);
    auto g = GeometryOf(c);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    std::mt19937_64 rng(c.n + c.o);
    Tensor x = Random<float>({c.n, c.h, c.w, c.c}, rng);
    Tensor w = Random<float>({c.kh, c.kw, c.c, c.o}, rng);
    Tensor dy = Random<float>({c.n, ref.oh, ref.ow, c.o}, rng);
    // Images [n0, n): the last shard of a split batch.
    const int64_t n0 = c.n / 2;
    std::vector<double> y(static_cast<size_t>(dy.NumElements())), dx(static_cast<size_t>(x.NumElements())),
        dw(static_cast<size_t>(w.NumElements()));
    const int64_t x_image = c.h * c.w * c.c, y_image = ref.oh * ref.ow * c.o;
    ref.ForEachTap(c, [&](int64_t xi, int64_t wi, int64_t yi) {
      if (xi < n0 * x_image) return;
      y[yi] += double(x.data<float>()[xi]) * double(w.data<float>()[wi]);
      dx[xi] += double(dy.data<float>()[yi]) * double(w.data<float>()[wi]);
      dw[wi] += double(x.data<float>()[xi]) * double(dy.data<float>()[yi]);
    });
    std::vector<std::vector<uint8_t>> buffers;
    auto scratch = [&](size_t bytes) {
      buffers.emplace_back(bytes);
      return buffers.back().data();
    };
    const std::string what = "case " + std::to_string(c.n) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w) +
                             "x" + std::to_string(c.c) + " k" + std::to_string(c.kh) + "x" + std::to_string(c.kw) +
                             " s" + std::to_string(c.sh) + "x" + std::to_string(c.sw) + " " + c.padding;
    std::vector<float> out_y(y.size()), out_dx(dx.size()), out_dw(dw.size());
    const dnnl_conv::Pass passes[] = {dnnl_conv::Pass::kForward, dnnl_conv::Pass::kBackwardData,
                                      dnnl_conv::Pass::kBackwardFilter};
    float* outs[] = {out_y.data(), out_dx.data(), out_dw.data()};
    const std::vector<double>* wants[] = {&y, &dx, &dw};
    for (int k = 0; k < 3; ++k) {
      auto conv = dnnl_conv::DnnlConv::Create(*g, passes[k]);
      ASSERT_TRUE(conv.ok()) << what << ": " << conv.status().ToString();
      ++built;
      Status s = (*conv)->Run(n0, c.n, x.data<float>(), w.data<float>(), dy.data<float>(), outs[k], scratch);
      ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
      const size_t begin = k == 2 ? 0 : static_cast<size_t>(n0 * (k == 0 ? y_image : x_image));
      double worst = 0;
      for (size_t i = begin; i < wants[k]->size(); ++i) worst = std::max(worst, std::abs(outs[k][i] - (*wants[k])[i]));
      EXPECT_LT(worst, k == 2 ? 1e-3 : 1e-4) << what << " pass " << k;
    }
  }
  EXPECT_EQ(built, 3 * static_cast<int>(Cases().size()));
}

// The same cases on oneDNN alone (the direct first-layer loops off).
TEST(ConvKernelsTest, MatchesDirectLoopsFloatOnOneDnn) {
  if (!dnnl_conv::Enabled()) GTEST_SKIP() << "built without oneDNN";
  ASSERT_EQ(0, setenv("TOWERFLOW_CONV", "onednn", 1));
  EXPECT_FALSE(direct_conv::Enabled());
  for (const auto& c : Cases()) CheckConv<float>(c);
  ASSERT_EQ(0, unsetenv("TOWERFLOW_CONV"));
}

// The direct first-layer loops below the kernel: each geometry they take,
// over the last images of the batch, with and without the bias and ReLU
// epilogue, the output poisoned first (every element must be written).
TEST(ConvKernelsTest, DirectFirstLayerLoopsMatchTheDefinition) {
  if (!direct_conv::Enabled()) GTEST_SKIP() << "no AVX-512F on this CPU";
  int ran = 0;
  for (const ConvCase& c : Cases()) {
    const Ref ref(c);
    auto g = GeometryOf(c);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    if (!direct_conv::Supports(*g)) continue;
    std::mt19937_64 rng(c.n * 7 + c.o);
    Tensor x = Random<float>({c.n, c.h, c.w, c.c}, rng);
    Tensor w = Random<float>({c.kh, c.kw, c.c, c.o}, rng);
    Tensor bias = Random<float>({c.o}, rng);
    const int64_t n0 = c.n / 2, y_image = ref.oh * ref.ow * c.o;
    std::vector<double> y(static_cast<size_t>(c.n * y_image));
    ref.ForEachTap(c, [&](int64_t xi, int64_t wi, int64_t yi) {
      y[yi] += double(x.data<float>()[xi]) * double(w.data<float>()[wi]);
    });
    std::vector<float> scratch(static_cast<size_t>(direct_conv::ScratchFloats(*g)));
    for (int epilogue = 0; epilogue < 3; ++epilogue) {  // none, bias, bias + ReLU
      std::vector<float> out(y.size(), std::numeric_limits<float>::quiet_NaN());
      direct_conv::Forward(*g, n0, c.n, x.data<float>(), w.data<float>(), epilogue ? bias.data<float>() : nullptr,
                           epilogue == 2, out.data(), scratch.data());
      double worst = 0;
      for (size_t i = static_cast<size_t>(n0 * y_image); i < y.size(); ++i) {
        double want = y[i] + (epilogue ? bias.data<float>()[i % static_cast<size_t>(c.o)] : 0.0);
        if (epilogue == 2) want = std::max(want, 0.0);
        worst = std::max(worst, std::isnan(out[i]) ? 1e9 : std::abs(out[i] - want));
      }
      EXPECT_LT(worst, 1e-4) << "case " << c.n << "x" << c.h << "x" << c.w << "x" << c.c << " k" << c.kh << "x"
                             << c.kw << " o" << c.o << " " << c.padding << " epilogue " << epilogue;
      for (size_t i = 0; i < static_cast<size_t>(n0 * y_image); ++i) ASSERT_TRUE(std::isnan(out[i])) << "wrote image < n0";
    }
    ++ran;
  }
  EXPECT_EQ(ran, 4);
}

TEST(ConvKernelsTest, MatchesDirectLoopsDouble) {
  for (const auto& c : Cases()) CheckConv<double>(c);
}

TEST(ConvKernelsTest, OutputShapesFollowTf) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kFloat32, PartialShape({-1, 28, 28, 1}));
  Output w = Placeholder(s, kFloat32, PartialShape({5, 5, 1, 32}));
  EXPECT_EQ(Conv2D(s, x, w).shape(), PartialShape({-1, 28, 28, 32}));
  EXPECT_EQ(Conv2D(s, x, w, {{1, 2, 2, 1}, "VALID"}).shape(), PartialShape({-1, 12, 12, 32}));
  EXPECT_EQ(Conv2D(s, x, w, {{1, 3, 3, 1}, "SAME"}).shape(), PartialShape({-1, 10, 10, 32}));
  EXPECT_EQ(MaxPool(s, x).shape(), PartialShape({-1, 14, 14, 1}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();

  Scope bad(g);
  Conv2D(bad, x, Placeholder(bad, kFloat32, PartialShape({5, 5, 3, 32})));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("[5,5,3,32]"), std::string::npos) << bad.status().ToString();
  Scope bad2(g);
  Conv2D(bad2, Placeholder(bad2, kFloat32, PartialShape({1, 4, 4, 1})), w, {{1, 1, 1, 1}, "VALID"});
  EXPECT_EQ(bad2.status().code(), Code::kInvalidArgument);
  Scope bad3(g);
  Conv2D(bad3, x, w, {{1, 1, 1, 1}, "FULL"});
  EXPECT_EQ(bad3.status().code(), Code::kInvalidArgument);

  Output px = Placeholder(s, kFloat32), pw = Placeholder(s, kFloat32);
  Session sess(g);
  Status st = sess.Run({{px, Tensor(kFloat32, {1, 4, 4, 2})}, {pw, Tensor(kFloat32, {3, 3, 1, 1})}},
                       {Conv2D(s, px, pw)}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("[1,4,4,2]"), std::string::npos) << st.ToString();
}

Output Iota(const Scope& s, TensorShape shape, float start = 0) {
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Const(s, Tensor::FromVector<float>(v, shape));
}

Tensor Eval(Graph& g, const Output& out) {
  Session sess(g);
  auto r = sess.Run({out});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[0] : Tensor();
}

TEST(PoolKernelsTest, MaxPoolHandValues) {
  Graph g;
  Scope s(g);
  Output x = Iota(s, {1, 4, 4, 1});  // x[r][c] = 4r + c
  EXPECT_EQ(Eval(g, MaxPool(s, x, {{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"})).ToVector<float>(),
            (std::vector<float>{5, 7, 13, 15}));
  // SAME 3x3 stride 2 on 4x4: 2x2 outputs, one padded row/column, after the data
  // (windows rows 0-2 then 2-3): 10 11 14 15. Padding before would give 5 first.
  EXPECT_EQ(Eval(g, MaxPool(s, x, {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"})).ToVector<float>(),
            (std::vector<float>{10, 11, 14, 15}));
  // Two channels pool independently; negative values beat the (absent) padding.
  Output y = Iota(s, {1, 3, 3, 2}, -100);
  EXPECT_EQ(Eval(g, MaxPool(s, y, {{1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"})).ToVector<float>(),
            (std::vector<float>{-92, -91, -90, -89, -86, -85, -84, -83}));
}

TEST(PoolKernelsTest, MaxPoolGradRoutesToFirstMaximum) {
  Graph g;
  Scope s(g);
  Output x = Const(s, Tensor::FromVector<float>({3, 3, 1, 3}, {1, 2, 2, 1}));
  PoolOptions opts{{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"};
  Output y = MaxPool(s, x, opts);
  Output dy = Const(s, Tensor::FromVector<float>({10}, {1, 1, 1, 1}));
  auto grad = [&](const char* op, Output a, Output b, Output c) {
    return Output(NodeBuilder(s, op).Input(a).Input(b).Input(c).Attr("ksize", opts.ksize)
                      .Attr("strides", opts.strides).Attr("padding", opts.padding).Finalize());
  };
  EXPECT_EQ(Eval(g, grad("MaxPoolGrad", x, y, dy)).ToVector<float>(), (std::vector<float>{10, 0, 0, 0}));
  // Overlapping windows (3x3 stride 1 SAME over 2x2): each window's max is 5 at
  // index 3, so all four gradients add there.
  Output z = Const(s, Tensor::FromVector<float>({1, 2, 4, 5}, {1, 2, 2, 1}));
  PoolOptions o3{{1, 3, 3, 1}, {1, 1, 1, 1}, "SAME"};
  Output zy = MaxPool(s, z, o3);
  Output dz = Const(s, Tensor::FromVector<float>({1, 2, 3, 4}, {1, 2, 2, 1}));
  Output gz = NodeBuilder(s, "MaxPoolGrad").Input(z).Input(zy).Input(dz).Attr("ksize", o3.ksize)
                  .Attr("strides", o3.strides).Attr("padding", o3.padding).Finalize();
  EXPECT_EQ(Eval(g, gz).ToVector<float>(), (std::vector<float>{0, 0, 0, 10}));
  // MaxPoolGradGrad reads the gradient at the same maxima.
  Output gg = grad("MaxPoolGradGrad", x, y, Const(s, Tensor::FromVector<float>({7, 8, 9, 6}, {1, 2, 2, 1})));
  EXPECT_EQ(Eval(g, gg).ToVector<float>(), (std::vector<float>{7}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

// MaxPool against each window's maximum and MaxPoolGrad against a scatter to
// each window's first maximum, both written here,
// over windows that tile the input, leave a VALID remainder, skip elements
// (stride above the window), pad with SAME on odd sizes, and overlap; integer
// inputs from a small range make ties common, so first-maximum order matters.
TEST(PoolKernelsTest, MaxPoolGradMatchesScatterToFirstMaximum) {
  struct PoolCase {
    int64_t n, h, w, c, kh, kw, sh, sw;
    std::string padding;
  };
  const std::vector<PoolCase> cases = {
      {2, 28, 28, 32, 2, 2, 2, 2, "SAME"}, {3, 7, 9, 5, 2, 2, 2, 2, "SAME"},  {2, 7, 9, 3, 2, 2, 2, 2, "VALID"},
      {2, 8, 8, 4, 2, 2, 3, 3, "VALID"},   {1, 9, 7, 6, 3, 2, 3, 4, "SAME"},  {2, 5, 5, 2, 3, 3, 2, 2, "SAME"},
      {1, 6, 6, 3, 3, 3, 1, 1, "VALID"},   {2, 1, 1, 7, 2, 2, 2, 2, "SAME"},  {1, 4, 6, 1, 1, 1, 1, 1, "VALID"},
      {1, 5, 3, 2, 5, 3, 5, 3, "VALID"},
  };
  std::mt19937_64 rng(7);
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << "[" << c.n << "," << c.h << "," << c.w << "," << c.c << "] window " << c.kh
                                      << "x" << c.kw << " stride " << c.sh << "x" << c.sw << " " << c.padding);
    int64_t oh, ow, pt, pl;
    OutAndPad(c.h, c.kh, c.sh, c.padding == "SAME", &oh, &pt);
    OutAndPad(c.w, c.kw, c.sw, c.padding == "SAME", &ow, &pl);
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<float> x(static_cast<size_t>(c.n * c.h * c.w * c.c)), dy(static_cast<size_t>(c.n * oh * ow * c.c));
    for (float& v : x) v = static_cast<float>(small(rng));
    for (float& v : dy) v = static_cast<float>(small(rng)) + 0.25f;
    std::vector<float> want(x.size(), 0.0f), want_y(dy.size());
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t ch = 0; ch < c.c; ++ch) {
            int64_t arg = -1;
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = oy * c.sh - pt + ky, ix = ox * c.sw - pl + kx;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                const int64_t i = ((n * c.h + iy) * c.w + ix) * c.c + ch;
                if (arg < 0 || x[static_cast<size_t>(i)] > x[static_cast<size_t>(arg)]) arg = i;
              }
            const size_t o = static_cast<size_t>(((n * oh + oy) * ow + ox) * c.c + ch);
            if (arg >= 0) want[static_cast<size_t>(arg)] += dy[o];
            want_y[o] = arg >= 0 ? x[static_cast<size_t>(arg)] : std::numeric_limits<float>::lowest();
          }
    Graph g;
    Scope s(g);
    PoolOptions opts{{1, c.kh, c.kw, 1}, {1, c.sh, c.sw, 1}, c.padding};
    Output xs = Const(s, Tensor::FromVector<float>(x, {c.n, c.h, c.w, c.c}));
    Output ys = MaxPool(s, xs, opts);
    Output dys = Const(s, Tensor::FromVector<float>(dy, {c.n, oh, ow, c.c}));
    Output dx = NodeBuilder(s, "MaxPoolGrad").Input(xs).Input(ys).Input(dys).Attr("ksize", opts.ksize)
                    .Attr("strides", opts.strides).Attr("padding", opts.padding).Finalize();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(Eval(g, ys).ToVector<float>(), want_y);
    EXPECT_EQ(Eval(g, dx).ToVector<float>(), want);
  }
}

}  // namespace
}  // namespace tw
