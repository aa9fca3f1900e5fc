// Test helpers for CUDA kernels (*_cuda_test.cc): run the same graph on
// /device:CPU:0 and /device:GPU:0 from the same random inputs and compare
// (STYLE.md: every CUDA kernel against its CPU twin over odd shapes). Test-only;
// not thread-safe (RunOn sets TOWERFLOW_GPU_POISON in the environment).
//
// A Case's inputs enter through Placeholders, built outside the device scope
// (so placed on the CPU), and its ops are built under the device scope; on a
// GPU the session copies each fed value to the GPU (a host-to-device transfer
// of the feed), runs the GPU kernels, and copies the fetches back. RunOn
// guards against the ways such a comparison could pass without testing the
// GPU kernel:
// - Soft placement is off, so an op without a GPU kernel fails the run instead
//   of quietly running on the CPU; and every node the case built on the GPU
//   must have been placed on a GPU (a test failure names each one that was not).
// - New GPU blocks are filled with NaN bytes (TOWERFLOW_GPU_POISON=1,
//   gpu_allocator.h), so an output element a kernel forgets to write fails
//   the comparison.
// - For error checks the Placeholders can have unknown shapes, so bad shapes
//   reach the kernels' own checks instead of being rejected by the ops' shape
//   functions at graph building, before any kernel runs.
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
#include "towerflow/runtime/session_impl.h"

#define TW_SKIP_WITHOUT_GPU()                                               \
  do {                                                                      \
    if (::tw::VisibleCudaGpuCount() == 0) GTEST_SKIP() << "no GPU visible"; \
  } while (0)

namespace tw {
namespace parity {

inline constexpr char kCpu[] = "/device:CPU:0";
inline constexpr char kGpu[] = "/device:GPU:0";

// The odd sizes every CUDA kernel is checked over (not multiples of a block).
inline const std::vector<int64_t>& OddSizes() {
  static const std::vector<int64_t> sizes = {1, 7, 33, 1000};
  return sizes;
}

// Every dtype but string (which no GPU kernel takes).
inline const std::vector<DataType>& AllTypes() {
  static const std::vector<DataType> types = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool};
  return types;
}

// A random generator seeded from std::random_device (or `seed`), whose seed
// every test failure inside the object's scope prints, so a failing draw can
// be replayed. Use as a std::mt19937_64.
class SeededRng : public std::mt19937_64 {
 public:
  SeededRng() : SeededRng(std::random_device{}()) {}
  explicit SeededRng(uint64_t seed)
      : std::mt19937_64(seed), trace_(__FILE__, __LINE__, "seed " + std::to_string(seed)) {}

 private:
  ::testing::ScopedTrace trace_;
};

// Random values of any dtype but string: floats uniform in [lo, hi], integers
// in [lo, hi], uint8 any byte (lo and hi aside), bools either way.
inline Tensor RandomTensor(DataType dtype, const TensorShape& shape, std::mt19937_64& rng, double lo = -1,
                           double hi = 1) {
  Tensor t(dtype, shape);
  const int64_t n = shape.num_elements();
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case kFloat32: t.data<float>()[i] = static_cast<float>(real(rng)); break;
      case kFloat64: t.data<double>()[i] = real(rng); break;
      case kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(integer(rng)); break;
      case kInt64: t.data<int64_t>()[i] = integer(rng); break;
      case kUInt8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
        break;
      case kBool:
        t.data<bool>()[i] = (byte(rng) & 1) != 0;
        break;
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
  double rtol = 1e-5;  // |gpu - cpu| <= atol + rtol * |cpu| (floats; other dtypes compare exactly)
  double atol = 1e-6;
};

// New GPU blocks of sessions created from now on are filled with NaN bytes
// (gpu_allocator.h), so that an output element a kernel forgets to write
// shows. Sets TOWERFLOW_GPU_POISON=1 in the environment.
inline void PoisonNewGpuMemory() { setenv("TOWERFLOW_GPU_POISON", "1", 1); }

// Records a test failure, naming `what` and the device, unless `node` was
// placed on a GPU by `sess`.
inline void ExpectPlacedOnGpu(const Session& sess, const Node& node, const std::string& what) {
  const Device* placed = sess.impl().placement().device(node);
  EXPECT_TRUE(placed != nullptr && placed->device_type() == kDeviceGpu)
      << what << ": " << node.DebugName() << " ran on "
      << (placed != nullptr ? placed->name() : std::string("no device")) << ", not a GPU";
}

// RunOn's default session options: one inter-op thread (RunOn turns soft
// placement off whatever the options say).
inline SessionOptions ParitySessionOptions() {
  SessionOptions opts;
  opts.inter_op_threads = 1;
  return opts;
}

// Runs c.build on `device` and returns the fetched outputs. On failure returns
// an empty vector and sets *status when `status` is given, else records a test
// failure naming the case and device. See the file comment for what it
// checks: soft placement off (`options` gives the rest: allow_tf32, say),
// poisoned GPU memory, and on a GPU that every node c.build created outside
// the CPU was placed on a GPU. With `unknown_shapes` the Placeholders have
// unknown shapes.
inline std::vector<Tensor> RunOn(const Case& c, const std::string& device, Status* status = nullptr,
                                 bool unknown_shapes = false,
                                 SessionOptions options = ParitySessionOptions()) {
  PoisonNewGpuMemory();
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
  const int first_built = g.num_nodes();
  std::vector<Output> outs = c.build(root.WithDevice(device), placeholders);
  auto fail = [&](const Status& s, const char* what) {
    if (status != nullptr) {
      *status = s;
    } else {
      ADD_FAILURE() << c.name << " on " << device << ": " << what << s.ToString();
    }
    return std::vector<Tensor>{};
  };
  if (!root.ok()) return fail(root.status(), "building the graph: ");
  options.allow_soft_placement = false;
  Session sess(g, options);
  auto r = sess.Run(feeds, outs);
  if (device.find("GPU") != std::string::npos) {
    for (int id = first_built; id < g.num_nodes(); ++id) {
      const Node& n = *g.node(id);
      if (n.requested_device().find("CPU") != std::string::npos) continue;
      // A node left unplaced by a failed run: the run's error says why.
      if (!r.ok() && sess.impl().placement().device(n) == nullptr) continue;
      ExpectPlacedOnGpu(sess, n, c.name);
    }
  }
  if (!r.ok()) return fail(r.status(), "");
  if (status != nullptr) *status = Status::OK();
  return std::move(r).value();
}

// Element i of a float32, float64, int32, uint8 or bool host tensor, as a
// double (exact for all but float64's own rounding).
inline double ElementAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case kFloat32: return t.data<float>()[i];
    case kFloat64: return t.data<double>()[i];
    case kInt32: return t.data<int32_t>()[i];
    case kUInt8: return t.data<uint8_t>()[i];
    case kBool: return t.data<bool>()[i] ? 1 : 0;
    default: return 0;
  }
}

// Element-wise comparison of two host tensors of the same dtype and shape:
// floats within atol + rtol * |cpu| (NaN equals NaN, an infinity only itself),
// integers, uint8 and bools exactly.
inline ::testing::AssertionResult Near(const Tensor& gpu, const Tensor& cpu, double rtol, double atol) {
  if (gpu.dtype() != cpu.dtype() || gpu.shape() != cpu.shape()) {
    return ::testing::AssertionFailure()
           << "GPU gave " << DataTypeName(gpu.dtype()) << " " << gpu.shape().ToString() << ", CPU "
           << DataTypeName(cpu.dtype()) << " " << cpu.shape().ToString();
  }
  const DataType dtype = cpu.dtype();
  if (dtype != kFloat32 && dtype != kFloat64 && dtype != kInt32 && dtype != kInt64 && dtype != kUInt8 &&
      dtype != kBool) {
    return ::testing::AssertionFailure() << "Near: unsupported dtype " << DataTypeName(dtype);
  }
  const bool floats = dtype == kFloat32 || dtype == kFloat64;
  const int64_t n = cpu.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == kInt64) {  // compared as integers: a double holds only 53 bits
      const int64_t a = gpu.data<int64_t>()[i], b = cpu.data<int64_t>()[i];
      if (a == b) continue;
      return ::testing::AssertionFailure()
             << "element " << i << " of " << n << ": GPU " << a << ", CPU " << b;
    }
    const double a = ElementAsDouble(gpu, i), b = ElementAsDouble(cpu, i);
    bool ok = a == b;
    if (floats && !ok) {
      // NaN and the infinities match only themselves (inf - x would pass any
      // tolerance scaled by an infinite |cpu|).
      const bool special = std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b);
      ok = special ? std::isnan(a) && std::isnan(b) : std::fabs(a - b) <= atol + rtol * std::fabs(b);
    }
    if (!ok) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << n << ": GPU " << a << ", CPU " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// The whole check: CPU and GPU runs succeed and agree output by output.
inline void ExpectGpuMatchesCpu(const Case& c) {
  Status cpu_status, gpu_status;
  std::vector<Tensor> cpu = RunOn(c, kCpu, &cpu_status);
  std::vector<Tensor> gpu = RunOn(c, kGpu, &gpu_status);
  ASSERT_TRUE(cpu_status.ok()) << c.name << " on the CPU: " << cpu_status.ToString();
  ASSERT_TRUE(gpu_status.ok()) << c.name << " on the GPU: " << gpu_status.ToString();
  ASSERT_EQ(cpu.size(), gpu.size()) << c.name;
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_TRUE(Near(gpu[i], cpu[i], c.rtol, c.atol)) << c.name << ", output " << i;
  }
}

// The CPU run failed and the GPU run failed with the same code; with
// `expected`, also with the same message, which contains *expected.
inline void ExpectSameStatus(const std::string& name, const Status& cpu, const Status& gpu,
                             const std::string* expected = nullptr) {
  ASSERT_FALSE(cpu.ok()) << name << ": the CPU kernel accepted it";
  EXPECT_EQ(gpu.code(), cpu.code()) << name << ": GPU " << gpu.ToString() << " / CPU " << cpu.ToString();
  if (expected == nullptr) return;
  EXPECT_NE(cpu.message().find(*expected), std::string::npos) << name << ": " << cpu.ToString();
  EXPECT_EQ(gpu.message(), cpu.message()) << name;
}

// Both devices' kernels reject the inputs, fed through Placeholders of unknown
// shape: the same code. Kernels whose checks are shared with their CPU twin
// give the same message too: pass `expected` (a part of it) to compare whole
// messages.
inline void ExpectSameError(const Case& c) {
  Status cpu, gpu;
  RunOn(c, kCpu, &cpu, /*unknown_shapes=*/true);
  RunOn(c, kGpu, &gpu, /*unknown_shapes=*/true);
  ExpectSameStatus(c.name, cpu, gpu);
}
inline void ExpectSameError(const Case& c, const std::string& expected) {
  Status cpu, gpu;
  RunOn(c, kCpu, &cpu, /*unknown_shapes=*/true);
  RunOn(c, kGpu, &gpu, /*unknown_shapes=*/true);
  ExpectSameStatus(c.name, cpu, gpu, &expected);
}

// The fused items (not update groups) of the session's plan for `fetches`
// (runtime/fusion.h); -1 when the plan fails, with a test failure.
inline int FusedItems(Session& session, const std::vector<Output>& fetches) {
  auto plan = session.impl().GetPlan({}, fetches, {});
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return -1;
  int fused = 0;
  for (const auto& item : (*plan)->items) fused += item.fused != nullptr && !item.fused->group;
  return fused;
}

}  // namespace parity
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_GPU_PARITY_TEST_UTIL_H_
