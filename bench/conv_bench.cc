// The convolution limit of bench/run's CNN case (the TF-tutorial CNN of
// `towerflow train --model cnn`: conv 5x5x32 SAME, pool, conv 5x5x64 SAME,
// pool, dense 1024, dense 10) at batch 100, on one thread:
//
//   limit/cnn_step_gemms/conv_only:0   every GEMM of one training step, the
//       convolutions lowered to im2col GEMMs (forward y = col * W, filter
//       gradient dW = col^T * dy, input gradient dcol = dy * W^T; the first
//       layer's input gradient is never computed), the patch matrices made
//       ahead of time: what the step costs if the machine did nothing but its
//       multiply-adds at its sgemm rate. 100 / that time is the best possible
//       examples/s on one core. Each convolution GEMM covers a chunk of images
//       whose patch matrix fits 4 MB, as kernels/conv_kernels.cc chunks them
//       (OpenBLAS is fastest there).
//   limit/cnn_step_gemms/conv_only:1   the same, convolution GEMMs only.
//   limit/cnn_step_gemms_onednn/conv_only:{0,1}   the same with every GEMM
//       that overwrites its output on oneDNN's matmul (MatMul's float
//       default, kernels/internal/dnnl_matmul.h), the accumulating ones on
//       OpenBLAS: the limit is the faster of the two.
//   towerflow/conv_layers              towerflow's Conv2D, Conv2DBackpropFilter
//       and Conv2DBackpropInput kernels of both layers through a Session (one
//       inter-op and one intra-op thread), as they run by default: the first
//       layer's forward on the direct loops where the CPU has AVX-512F, the
//       rest on oneDNN where it is built in.
//   towerflow/conv_layers_im2col       the same kernels on their im2col + GEMM
//       + col2im path (TOWERFLOW_CONV=im2col). Against conv_only:1, how far
//       that path is from its GEMMs; against conv_layers, what oneDNN gains.
//
//   towerflow/first_layer/{direct,onednn,im2col}[_fused]   the first layer's
//       forward (Conv2D, BiasAddRelu) on each convolution path, as one fused
//       kernel or two (runtime/fusion.h).
//
// Counters: gflops (2 x multiply-adds per second), examples_per_sec. FLOPs per
// example are written out in docs/benchmarks.md ("Side by side").
#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "towerflow/kernels/blas.h"
#include "towerflow/kernels/internal/direct_conv.h"
#include "towerflow/kernels/internal/dnnl_matmul.h"
#include "towerflow/towerflow.h"

namespace {

constexpr int64_t kBatch = 100;
constexpr int64_t kColBudgetBytes = 4 << 20;  // kernels/conv_kernels.cc's chunk budget

// One SAME 5x5 stride-1 convolution layer of the CNN.
struct ConvLayer {
  int64_t side, c, o;  // input side (square), input and output channels
  bool input_grad;     // the first layer's input gradient is never needed
  // Output positions per image (SAME, stride 1).
  int64_t rows() const { return side * side; }
  int64_t k() const { return 25 * c; }
  double flops() const { return 2.0 * static_cast<double>(kBatch * rows() * k() * o) * (input_grad ? 3 : 2); }
};
const ConvLayer kConv1{28, 1, 32, false};
const ConvLayer kConv2{14, 32, 64, true};

struct Gemm {
  bool ta, tb;
  int64_t m, n, k;
  float beta;
};

// The step's GEMMs, in row-major terms of blas::Gemm.
std::vector<Gemm> CnnStepGemms(bool conv_only) {
  std::vector<Gemm> gemms;
  for (const ConvLayer& l : {kConv1, kConv2}) {
    const int64_t chunk = std::clamp<int64_t>(kColBudgetBytes / (l.rows() * l.k() * 4), 1, kBatch);
    for (int64_t n0 = 0; n0 < kBatch; n0 += chunk) {
      const int64_t m = std::min(chunk, kBatch - n0) * l.rows();
      gemms.push_back({false, false, m, l.o, l.k(), 0.0f});                   // y = col * W
      gemms.push_back({true, false, l.k(), l.o, m, n0 == 0 ? 0.0f : 1.0f});   // dW += col^T * dy
      if (l.input_grad) gemms.push_back({false, true, m, l.k(), l.o, 0.0f});  // dcol = dy * W^T
    }
  }
  if (conv_only) return gemms;
  const int64_t flat = 7 * 7 * 64;
  for (auto [in, out] : {std::pair{flat, int64_t{1024}}, std::pair{int64_t{1024}, int64_t{10}}}) {
    gemms.push_back({false, false, kBatch, out, in, 0.0f});  // forward
    gemms.push_back({true, false, in, out, kBatch, 0.0f});   // dW
    gemms.push_back({false, true, kBatch, in, out, 0.0f});   // dX (the dense layer's input is a pooled conv)
  }
  return gemms;
}

void CnnStepGemms(benchmark::State& state, bool onednn) {
  if (!tw::blas::Init().ok()) {
    state.SkipWithError("OpenBLAS not available");
    return;
  }
  if (onednn && !tw::dnnl_matmul::Enabled()) {
    state.SkipWithError("oneDNN is not built in");
    return;
  }
  const std::vector<Gemm> gemms = CnnStepGemms(state.range(0) != 0);
  size_t most = 0;
  double flops = 0;
  for (const Gemm& g : gemms) {
    most = std::max({most, static_cast<size_t>(g.m * g.k), static_cast<size_t>(g.k * g.n),
                     static_cast<size_t>(g.m * g.n)});
    flops += 2.0 * static_cast<double>(g.m * g.n * g.k);
  }
  std::vector<float> a(most, 0.5f), b(most, 0.25f), c(most, 0.0f);
  for (auto _ : state) {
    for (const Gemm& g : gemms) {
      const int64_t lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
      if (!onednn || g.beta != 0.0f ||
          !tw::dnnl_matmul::Gemm(g.ta, g.tb, g.m, g.n, g.k, a.data(), lda, b.data(), ldb, c.data(), g.n)) {
        tw::blas::Gemm(g.ta, g.tb, g.m, g.n, g.k, a.data(), lda, b.data(), ldb, g.beta, c.data(), g.n);
      }
    }
    benchmark::ClobberMemory();
  }
  const double steps = static_cast<double>(state.iterations());
  state.counters["gflops"] = benchmark::Counter(flops * steps / 1e9, benchmark::Counter::kIsRate);
  state.counters["examples_per_sec"] = benchmark::Counter(steps * kBatch, benchmark::Counter::kIsRate);
}
void BM_CnnStepGemms(benchmark::State& state) { CnnStepGemms(state, false); }
void BM_CnnStepGemmsOneDnn(benchmark::State& state) { CnnStepGemms(state, true); }
BENCHMARK(BM_CnnStepGemms)
    ->Name("limit/cnn_step_gemms")
    ->ArgName("conv_only")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CnnStepGemmsOneDnn)
    ->Name("limit/cnn_step_gemms_onednn")
    ->ArgName("conv_only")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Both convolution layers forward and backward through a Session, fed fixed
// random inputs and output gradients.
void BM_ConvLayers(benchmark::State& state, bool im2col) {
  // Read by the kernels when the session builds them (kernels/internal/dnnl_conv.h).
  if (im2col) setenv("TOWERFLOW_CONV", "im2col", 1);
  struct Unset {
    ~Unset() { unsetenv("TOWERFLOW_CONV"); }
  } unset;
  tw::Graph graph;
  graph.set_seed(1);
  tw::Scope root(graph);
  tw::FeedList feeds;
  std::vector<tw::Output> fetches, ys, xs, dys;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto random = [&](tw::TensorShape shape) {
    tw::Tensor t(tw::kFloat32, shape);
    for (float& v : t.flat<float>()) v = uniform(rng);
    return t;
  };
  double flops = 0;
  int index = 0;
  for (const ConvLayer& l : {kConv1, kConv2}) {
    tw::Scope s = root.WithVariableScope("conv" + std::to_string(++index));
    auto x =
        tw::Placeholder(s.WithOpName("x"), tw::kFloat32, tw::PartialShape({kBatch, l.side, l.side, l.c}));
    auto w = tw::GetVariable(s, "kernel", {5, 5, l.c, l.o});
    auto dy =
        tw::Placeholder(s.WithOpName("dy"), tw::kFloat32, tw::PartialShape({kBatch, l.side, l.side, l.o}));
    ys.push_back(tw::Conv2D(s, x, w.value, {.padding = "SAME"}));
    dys.push_back(dy);
    xs.push_back(w.value);
    if (l.input_grad) xs.push_back(x);
    feeds.emplace_back(x, random(tw::TensorShape{kBatch, l.side, l.side, l.c}));
    feeds.emplace_back(dy, random(tw::TensorShape{kBatch, l.side, l.side, l.o}));
    flops += l.flops();
  }
  auto grads = tw::Gradients(root, ys, xs, dys);
  if (!grads.ok() || !root.ok()) {
    state.SkipWithError((grads.ok() ? root.status() : grads.status()).ToString().c_str());
    return;
  }
  fetches = ys;
  fetches.insert(fetches.end(), grads->begin(), grads->end());
  tw::Session session(graph, tw::SessionOptions{.inter_op_threads = 1, .intra_op_threads = 1});
  if (tw::Status s = session.Run(tw::GlobalVariablesInitializer(graph)); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto out = session.Run(feeds, fetches);
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      return;
    }
  }
  const double steps = static_cast<double>(state.iterations());
  state.counters["gflops"] = benchmark::Counter(flops * steps / 1e9, benchmark::Counter::kIsRate);
  state.counters["examples_per_sec"] = benchmark::Counter(steps * kBatch, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_ConvLayers, default, false)
    ->Name("towerflow/conv_layers")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ConvLayers, im2col, true)
    ->Name("towerflow/conv_layers_im2col")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The first layer's forward as the CNN runs it, Conv2D then BiasAddRelu on
// [100, 28, 28, 1] * [5, 5, 1, 32], through a Session on one thread. `path`
// picks the convolution (TOWERFLOW_CONV: "direct", the first-layer loops of
// kernels/internal/direct_conv.h; "onednn"; "im2col"); `fuse` runs the pair as
// one kernel (runtime/fusion.h) or as two.
void BM_FirstLayer(benchmark::State& state, const char* path, bool fuse) {
  setenv("TOWERFLOW_CONV", path, 1);
  struct Unset {
    ~Unset() { unsetenv("TOWERFLOW_CONV"); }
  } unset;
  if (std::string(path) == "direct" && !tw::direct_conv::Enabled()) {
    state.SkipWithError("no AVX-512F on this CPU");
    return;
  }
  tw::Graph graph;
  tw::Scope root(graph);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto random = [&](tw::TensorShape shape) {
    tw::Tensor t(tw::kFloat32, shape);
    for (float& v : t.flat<float>()) v = uniform(rng);
    return t;
  };
  auto x = tw::Placeholder(root, tw::kFloat32, tw::PartialShape({kBatch, 28, 28, 1}));
  auto w = tw::Const(root, random({5, 5, 1, 32}));
  auto b = tw::Const(root, random({32}));
  tw::Output y = tw::BiasAddRelu(root, tw::Conv2D(root, x, w, {.padding = "SAME"}), b);
  if (!root.ok()) {
    state.SkipWithError(root.status().ToString().c_str());
    return;
  }
  tw::SessionOptions options{.inter_op_threads = 1, .intra_op_threads = 1};
  options.fuse_kernels = fuse;
  tw::Session session(graph, options);
  const tw::FeedList feeds = {{x, random({kBatch, 28, 28, 1})}};
  for (auto _ : state) {
    auto out = session.Run(feeds, {y});
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      return;
    }
  }
  const double steps = static_cast<double>(state.iterations());
  state.counters["gflops"] = benchmark::Counter(kConv1.flops() / 2 * steps / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_FirstLayer, direct_fused, "direct", true)
    ->Name("towerflow/first_layer/direct_fused")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_FirstLayer, direct, "direct", false)
    ->Name("towerflow/first_layer/direct")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_FirstLayer, onednn_fused, "onednn", true)
    ->Name("towerflow/first_layer/onednn_fused")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_FirstLayer, onednn, "onednn", false)
    ->Name("towerflow/first_layer/onednn")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_FirstLayer, im2col_fused, "im2col", true)
    ->Name("towerflow/first_layer/im2col_fused")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_FirstLayer, im2col, "im2col", false)
    ->Name("towerflow/first_layer/im2col")->Unit(benchmark::kMillisecond)->UseRealTime();

// The CNN's two max pools (2x2, stride 2, SAME) forward and backward through a
// Session on one thread: memory-bound passes over the convolutions' outputs.
void BM_PoolLayers(benchmark::State& state) {
  tw::Graph graph;
  tw::Scope root(graph);
  tw::FeedList feeds;
  std::vector<tw::Output> fetches;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const tw::PoolOptions pool{{1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"};
  int64_t bytes = 0;
  for (const ConvLayer& l : {kConv1, kConv2}) {
    const tw::TensorShape in{kBatch, l.side, l.side, l.o}, out{kBatch, l.side / 2, l.side / 2, l.o};
    tw::Tensor x(tw::kFloat32, in), dy(tw::kFloat32, out);
    for (float& v : x.flat<float>()) v = uniform(rng);
    for (float& v : dy.flat<float>()) v = uniform(rng);
    auto xp = tw::Placeholder(root, tw::kFloat32, tw::PartialShape({kBatch, l.side, l.side, l.o}));
    auto dyp = tw::Placeholder(root, tw::kFloat32, tw::PartialShape({kBatch, l.side / 2, l.side / 2, l.o}));
    tw::Output y = tw::MaxPool(root, xp, pool);
    tw::Output dx = tw::NodeBuilder(root, "MaxPoolGrad").Input(xp).Input(y).Input(dyp).Attr("ksize", pool.ksize)
                        .Attr("strides", pool.strides).Attr("padding", pool.padding).Finalize();
    fetches.push_back(dx);
    feeds.emplace_back(xp, x);
    feeds.emplace_back(dyp, dy);
    // MaxPool reads x and writes y; MaxPoolGrad reads x, y and dy and writes dx.
    bytes += 4 * (3 * in.num_elements() + 3 * out.num_elements());
  }
  if (!root.ok()) {
    state.SkipWithError(root.status().ToString().c_str());
    return;
  }
  tw::Session session(graph, tw::SessionOptions{.inter_op_threads = 1, .intra_op_threads = 1});
  for (auto _ : state) {
    auto out = session.Run(feeds, fetches);
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      return;
    }
  }
  state.counters["GB_per_sec"] =
      benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PoolLayers)->Name("towerflow/pool_layers")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
