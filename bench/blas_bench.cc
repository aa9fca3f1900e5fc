// The sgemm limit of the MLP benchmark: the eight GEMMs of one training step of
// the MLP 784-256-256-10 at batch 100 (three forward, three weight gradients,
// two input gradients; the first layer's input gradient is never computed),
// timed back to back on one thread through each GEMM library towerflow uses:
// BM_MlpStepGemms on OpenBLAS, BM_MlpStepGemmsOneDnn on oneDNN's matmul (where
// it is built in: MatMul's float default). The best possible examples/s of
// that step on this machine is 100 / the faster library's time.
#include <benchmark/benchmark.h>

#include <vector>

#include "towerflow/kernels/blas.h"
#include "towerflow/kernels/internal/dnnl_matmul.h"

namespace {

struct Gemm {
  bool ta, tb;
  int64_t m, n, k;
};

void MlpStepGemms(benchmark::State& state, bool onednn) {
  if (!tw::blas::Init().ok()) {
    state.SkipWithError("OpenBLAS not available");
    return;
  }
  if (onednn && !tw::dnnl_matmul::Enabled()) {
    state.SkipWithError("oneDNN is not built in");
    return;
  }
  const int64_t b = 100;
  const std::vector<Gemm> gemms = {
      {false, false, b, 256, 784}, {false, false, b, 256, 256}, {false, false, b, 10, 256},  // forward
      {true, false, 784, 256, b},  {true, false, 256, 256, b},  {true, false, 256, 10, b},   // dW
      {false, true, b, 256, 10},   {false, true, b, 256, 256},                              // dX
  };
  std::vector<float> a(784 * 256 * 2, 0.5f), w(784 * 256 * 2, 0.25f), c(784 * 256 * 2);
  double flops = 0;
  for (const Gemm& g : gemms) flops += 2.0 * static_cast<double>(g.m * g.n * g.k);
  for (auto _ : state) {
    for (const Gemm& g : gemms) {
      const int64_t lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
      if (!onednn || !tw::dnnl_matmul::Gemm(g.ta, g.tb, g.m, g.n, g.k, a.data(), lda, w.data(), ldb, c.data(), g.n)) {
        tw::blas::Gemm(g.ta, g.tb, g.m, g.n, g.k, a.data(), lda, w.data(), ldb, 0.0f, c.data(), g.n);
      }
    }
    benchmark::ClobberMemory();
  }
  state.counters["sgemm_gflops"] = benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9,
                                                      benchmark::Counter::kIsRate);
  state.counters["limit_examples_per_sec"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * b, benchmark::Counter::kIsRate);
}
void BM_MlpStepGemms(benchmark::State& state) { MlpStepGemms(state, false); }
void BM_MlpStepGemmsOneDnn(benchmark::State& state) { MlpStepGemms(state, true); }
BENCHMARK(BM_MlpStepGemms)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_MlpStepGemmsOneDnn)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
