// Test helpers for CUDA kernels (*_cuda_test.cc): run the same one-op graph on
// /device:CPU:0 and /device:GPU:0 from the same random inputs and compare
// (STYLE.md: every CUDA kernel against its CPU twin over odd shapes).
//
// Inputs enter through Placeholders (which run on the CPU) and the op is built
// under the device scope, so the GPU run copies the inputs to the GPU, runs the
// GPU kernel, and copies the outputs back. Sessions run with
// TOWERFLOW_GPU_POISON=1 (gpu_allocator.h): new GPU blocks are filled with NaN
// bytes, so an output element a kernel forgets to write fails the comparison.
// Tests call TW_SKIP_WITHOUT_GPU() first: CPU-only CI builds and skips them.
#ifndef TOWERFLOW_KERNELS_GPU_PARITY_TEST_UTIL_H_
#define TOWERFLOW_KERNELS_GPU_PARITY_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "towerflow/device/device_set.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

#define TW_SKIP_WITHOUT_GPU()                                               \
  do {                                                                      \
    if (::tw::VisibleCudaGpuCount() == 0) GTEST_SKIP() << "no GPU visible"; \
  } while (0)

namespace tw {
namespace parity {

// Uniform values in [lo, hi] (floats) or integers in [lo, hi] (integer types).
inline Tensor RandomTensor(DataType dtype, const TensorShape& shape, std::mt19937_64& rng, double lo = -1,
                           double hi = 1) {
  Tensor t(dtype, shape);
  const int64_t n = shape.num_elements();
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case kFloat32: t.data<float>()[i] = static_cast<float>(real(rng)); break;
      case kFloat64: t.data<double>()[i] = real(rng); break;
      case kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(integer(rng)); break;
      case kInt64: t.data<int64_t>()[i] = integer(rng); break;
      default: ADD_FAILURE() << "RandomTensor: unsupported dtype " << DataTypeName(dtype); return t;
    }
  }
  return t;
}

struct Case {
  std::string name;            // "Add [7,33] + [33]"
  std::vector<Tensor> inputs;  // host values, fed through Placeholders
  // Builds the op(s) under the device scope `s` from the placeholders.
  std::function<std::vector<Output>(const Scope& s, const std::vector<Output>& inputs)> build;
  double rtol = 1e-5;  // |gpu - cpu| <= atol + rtol * |cpu|
  double atol = 1e-6;
};

// Runs c.build on `device` and returns the fetched outputs (empty on failure,
// with a test failure recorded naming the case and device). Soft placement is
// off: an op built under the device scope without a kernel there fails the
// run instead of quietly running on the CPU (the Placeholders, built outside
// the scope, go to the CPU by default placement). With `unknown_shapes` the
// Placeholders have unknown shapes, so bad shapes reach the kernels' own
// checks instead of being rejected by shape inference at graph building.
inline std::vector<Tensor> RunOn(const Case& c, const std::string& device, Status* status = nullptr,
                                 bool unknown_shapes = false) {
  setenv("TOWERFLOW_GPU_POISON", "1", 1);
  Graph g;
  Scope root(g);
  std::vector<Output> placeholders;
  FeedList feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Output p = Placeholder(root.WithOpName("in" + std::to_string(i)), c.inputs[i].dtype(),
                           unknown_shapes ? PartialShape::Unknown() : PartialShape(c.inputs[i].shape()));
    placeholders.push_back(p);
    feeds.emplace_back(p, c.inputs[i]);
  }
  std::vector<Output> outs = c.build(root.WithDevice(device), placeholders);
  if (!root.ok()) {
    if (status != nullptr) *status = root.status();
    else ADD_FAILURE() << c.name << " on " << device << ": building the graph: " << root.status().ToString();
    return {};
  }
  SessionOptions opts;
  opts.allow_soft_placement = false;
  opts.inter_op_threads = 1;
  Session sess(g, opts);
  auto r = sess.Run(feeds, outs);
  if (status != nullptr) *status = r.ok() ? Status::OK() : r.status();
  if (!r.ok()) {
    if (status == nullptr) ADD_FAILURE() << c.name << " on " << device << ": " << r.status().ToString();
    return {};
  }
  return std::move(r).value();
}

// Element-wise comparison of two host tensors of the same dtype and shape.
inline ::testing::AssertionResult Near(const Tensor& gpu, const Tensor& cpu, double rtol, double atol) {
  if (gpu.dtype() != cpu.dtype() || gpu.shape() != cpu.shape()) {
    return ::testing::AssertionFailure() << "GPU gave " << DataTypeName(gpu.dtype()) << " "
                                         << gpu.shape().ToString() << ", CPU " << DataTypeName(cpu.dtype())
                                         << " " << cpu.shape().ToString();
  }
  const int64_t n = cpu.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    double a = 0, b = 0;
    switch (cpu.dtype()) {
      case kFloat32: a = gpu.data<float>()[i]; b = cpu.data<float>()[i]; break;
      case kFloat64: a = gpu.data<double>()[i]; b = cpu.data<double>()[i]; break;
      case kInt32: a = gpu.data<int32_t>()[i]; b = cpu.data<int32_t>()[i]; break;
      case kInt64: a = static_cast<double>(gpu.data<int64_t>()[i]); b = static_cast<double>(cpu.data<int64_t>()[i]); break;
      case kBool: a = gpu.data<bool>()[i]; b = cpu.data<bool>()[i]; break;
      default: return ::testing::AssertionFailure() << "Near: unsupported dtype " << DataTypeName(cpu.dtype());
    }
    const bool same_special = (std::isnan(a) && std::isnan(b)) || (std::isinf(a) && a == b);
    if (!same_special && !(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      return ::testing::AssertionFailure() << "element " << i << " of " << n << ": GPU " << a << ", CPU " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// The whole check: CPU and GPU runs succeed and agree output by output.
inline void ExpectGpuMatchesCpu(const Case& c) {
  std::vector<Tensor> cpu = RunOn(c, "/device:CPU:0");
  std::vector<Tensor> gpu = RunOn(c, "/device:GPU:0");
  ASSERT_EQ(cpu.size(), gpu.size()) << c.name;
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_TRUE(Near(gpu[i], cpu[i], c.rtol, c.atol)) << c.name << ", output " << i;
}

// The same failure from both devices' kernels: the Placeholders have unknown
// shapes (so shape inference cannot reject the inputs first) and the error
// codes are equal. Messages differ in the device they name, so only the code
// is compared.
inline void ExpectSameError(const Case& c) {
  Status cpu, gpu;
  RunOn(c, "/device:CPU:0", &cpu, /*unknown_shapes=*/true);
  RunOn(c, "/device:GPU:0", &gpu, /*unknown_shapes=*/true);
  EXPECT_FALSE(cpu.ok()) << c.name;
  EXPECT_EQ(gpu.code(), cpu.code()) << c.name << ": GPU " << gpu.ToString() << " / CPU " << cpu.ToString();
}

// The odd sizes every CUDA kernel is checked over (not multiples of a block).
inline const std::vector<int64_t>& OddSizes() {
  static const std::vector<int64_t> sizes = {1, 7, 33, 1000};
  return sizes;
}

}  // namespace parity
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_GPU_PARITY_TEST_UTIL_H_
