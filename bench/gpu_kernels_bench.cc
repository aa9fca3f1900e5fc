// GPU micro-benchmarks of MatMul (matmul_cuda.cu) and Sum (reduction_cuda.cu):
// the GPU kernels run directly on a GpuDevice, without a Session, so the
// figures are the kernels' own (plus their stream-ordered output
// allocations), not feeds, fetches or the executor.
//
// Each benchmark iteration queues kBatch Computes on the device's compute
// stream and waits for them once, so the wait's latency is spread over the
// batch; times are wall-clock (UseRealTime). Counters: GFLOP/s (MatMul,
// 2 m n k per product) and GB/s (Sum: bytes read plus written), both as
// values in units of 10^9 per second.
//
// Shapes: MatMul 100x784x256 and 100x256x256 (the MLP's first two layers at
// batch 100) and 1024x1024x1024, float, TF32 off and on; Sum over the rows
// and over the columns of [100, 1024]. Without a GPU every benchmark reports
// "no GPU visible" and the binary exits normally. Built only with
// TOWERFLOW_CUDA (bench/CMakeLists.txt).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "towerflow/device/cuda/gpu_device.h"
#include "towerflow/device/device_set.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/cuda_kernels.h"

namespace {

constexpr int kBatch = 50;

// One GpuDevice per TF32 setting, made on first use and kept for the process
// (released by the OS at exit, after CUDA's own teardown).
tw::GpuDevice* Gpu(bool allow_tf32, std::string* error) {
  static tw::GpuDevice* devices[2] = {nullptr, nullptr};
  tw::GpuDevice*& d = devices[allow_tf32 ? 1 : 0];
  if (d == nullptr) {
    tw::GpuDeviceConfig config;
    config.memory_limit = size_t{8} << 30;
    config.allow_tf32 = allow_tf32;
    auto made = tw::GpuDevice::Create(config);
    if (!made.ok()) {
      *error = made.status().ToString();
      return nullptr;
    }
    d = std::move(made).value().release();
  }
  return d;
}

const tw::KernelRegistry& GpuKernels() {
  static tw::KernelRegistry* r = [] {
    auto* k = new tw::KernelRegistry;
    tw::RegisterMatMulCudaKernels(*k, tw::KernelRegistry::Global());
    tw::RegisterReductionCudaKernels(*k, tw::KernelRegistry::Global());
    return k;
  }();
  return *r;
}

// A float device tensor of uniform values in [-1, 1].
tw::Status RandomOnDevice(tw::GpuDevice* gpu, const tw::TensorShape& shape, tw::Tensor* out) {
  tw::Tensor host(tw::kFloat32, shape);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : host.flat<float>()) v = u(rng);
  return gpu->CopyFromHost(host, out);
}

// Runs the GPU kernel of `node` on `inputs` (device tensors, and host tensors
// for the kernel's host-memory arguments) kBatch times per iteration.
void RunKernel(benchmark::State& state, tw::GpuDevice* gpu, const tw::Node& node,
               std::vector<tw::TensorValue> inputs) {
  auto kernel = GpuKernels().CreateKernel(node, gpu);
  if (!kernel.ok()) {
    state.SkipWithError(kernel.status().ToString().c_str());
    return;
  }
  tw::OpKernelContext::Params params;
  params.node = &node;
  params.device = gpu;
  params.inputs = &inputs;
  for (auto _ : state) {
    for (int r = 0; r < kBatch; ++r) {
      tw::OpKernelContext ctx(params);
      (*kernel)->Compute(&ctx);
      if (!ctx.status().ok()) {
        state.SkipWithError(ctx.status().ToString().c_str());
        return;
      }
    }
    tw::Status done = gpu->Synchronize();
    if (!done.ok()) {
      state.SkipWithError(done.ToString().c_str());
      return;
    }
  }
}

tw::GpuDevice* GpuOrSkip(benchmark::State& state, bool allow_tf32) {
  if (tw::VisibleCudaGpuCount() == 0) {
    state.SkipWithError("no GPU visible");
    return nullptr;
  }
  std::string error;
  tw::GpuDevice* gpu = Gpu(allow_tf32, &error);
  if (gpu == nullptr) state.SkipWithError(("GpuDevice::Create failed: " + error).c_str());
  return gpu;
}

// Args: m, k, n, TF32 (0 or 1).
void BM_MatMulFloat(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  tw::GpuDevice* gpu = GpuOrSkip(state, state.range(3) != 0);
  if (gpu == nullptr) return;
  tw::Graph g;
  tw::Scope s(g);
  tw::Output a = tw::Placeholder(s, tw::kFloat32, tw::PartialShape({m, k}));
  tw::Output b = tw::Placeholder(s, tw::kFloat32, tw::PartialShape({k, n}));
  tw::Output product = tw::MatMul(s, a, b);
  std::vector<tw::TensorValue> inputs(2);
  tw::Status st = RandomOnDevice(gpu, tw::TensorShape{m, k}, &inputs[0].value);
  if (st.ok()) st = RandomOnDevice(gpu, tw::TensorShape{k, n}, &inputs[1].value);
  if (!st.ok() || !s.status().ok()) {
    state.SkipWithError((st.ok() ? s.status() : st).ToString().c_str());
    return;
  }
  RunKernel(state, gpu, *product.node, std::move(inputs));
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k) * kBatch / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MatMulFloat)
    ->ArgNames({"m", "k", "n", "tf32"})
    ->Args({100, 784, 256, 0})
    ->Args({100, 784, 256, 1})
    ->Args({100, 256, 256, 0})
    ->Args({100, 256, 256, 1})
    ->Args({1024, 1024, 1024, 0})
    ->Args({1024, 1024, 1024, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Sum of a float [rows, cols] over axis range(2): 1 sums each row, 0 each column.
void BM_SumFloat(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int32_t axis = static_cast<int32_t>(state.range(2));
  tw::GpuDevice* gpu = GpuOrSkip(state, false);
  if (gpu == nullptr) return;
  tw::Graph g;
  tw::Scope s(g);
  tw::Output x = tw::Placeholder(s, tw::kFloat32, tw::PartialShape({rows, cols}));
  tw::Output sum = tw::Sum(s, x, std::vector<int32_t>{axis});
  std::vector<tw::TensorValue> inputs(2);
  tw::Status st = RandomOnDevice(gpu, tw::TensorShape{rows, cols}, &inputs[0].value);
  inputs[1].value = tw::Tensor::Vec<int32_t>({axis});  // reduction_indices: host memory
  if (!st.ok() || !s.status().ok()) {
    state.SkipWithError((st.ok() ? s.status() : st).ToString().c_str());
    return;
  }
  RunKernel(state, gpu, *sum.node, std::move(inputs));
  const double bytes = static_cast<double>(rows * cols + (axis == 1 ? rows : cols)) * sizeof(float);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * kBatch / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SumFloat)
    ->ArgNames({"rows", "cols", "axis"})
    ->Args({100, 1024, 1})
    ->Args({100, 1024, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
