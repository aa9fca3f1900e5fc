// Test helpers of the array, shape and state CUDA kernel tests
// (array_cuda_test.cc, state_cuda_test.cc), on top of gpu_parity_test_util.h
// (parity::Case, Near, RandomTensor). Test-only; not thread-safe (sets
// TOWERFLOW_GPU_POISON in the environment, as parity::RunOn does).
//
// What parity::RunOn does not cover and these do:
// - Inputs reach the GPU through a CPU Identity. A fed value is a host tensor
//   and session.cc refuses to feed one into a GPU kernel's device-memory
//   input, so a case whose GPU ops read the Placeholders directly fails on a
//   real GPU; here each Placeholder feeds an Identity on /device:CPU:0 and the
//   GPU reads a host-to-device transfer of it, as an input pipeline's would.
// - Every node the case builds outside the CPU must have been placed on a GPU:
//   soft placement would otherwise run a missing GPU kernel on the CPU and
//   compare the CPU with itself.
// - uint8 outputs are compared exactly (parity::Near has no uint8).
// - Error cases feed Placeholders of unknown shape, so that the kernels, not
//   the shape functions, reject the inputs, and compare code and message.
#ifndef TOWERFLOW_KERNELS_ARRAY_CUDA_TEST_UTIL_H_
#define TOWERFLOW_KERNELS_ARRAY_CUDA_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw {
namespace cuda_test {

inline constexpr char kGpu[] = "/device:GPU:0";
inline constexpr char kCpu[] = "/device:CPU:0";

// Every dtype the array kernels take on a GPU.
inline const std::vector<DataType>& AllTypes() {
  static const std::vector<DataType> types = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool};
  return types;
}

// Random values of any dtype but string: floats in [lo, hi], integers in
// [lo, hi], uint8 any byte, bools either way.
inline Tensor RandomOf(DataType dtype, const TensorShape& shape, std::mt19937_64& rng, double lo = -1,
                       double hi = 1) {
  if (dtype != kUInt8 && dtype != kBool) return parity::RandomTensor(dtype, shape, rng, lo, hi);
  Tensor t(dtype, shape);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < shape.num_elements(); ++i) {
    const int b = byte(rng);
    if (dtype == kUInt8) t.data<uint8_t>()[i] = static_cast<uint8_t>(b);
    if (dtype == kBool) t.data<bool>()[i] = (b & 1) != 0;
  }
  return t;
}

// A fresh seed for each test; tests print it with SCOPED_TRACE.
inline uint64_t FreshSeed() { return std::random_device{}(); }

// Runs c.build on `device` from CPU Identities of the fed Placeholders (of
// the inputs' shapes, or of unknown shape) and returns the fetches; on
// failure an empty vector and *status. On a GPU, every node built outside
// the CPU must have been placed on a GPU (a test failure names each one not).
inline std::vector<Tensor> RunCase(const parity::Case& c, const std::string& device, bool unknown_shapes,
                                   Status* status) {
  setenv("TOWERFLOW_GPU_POISON", "1", 1);
  Graph g;
  Scope root(g);
  std::vector<Output> inputs;
  FeedList feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const PartialShape shape = unknown_shapes ? PartialShape::Unknown() : PartialShape(c.inputs[i].shape());
    Output p = Placeholder(root.WithOpName("in" + std::to_string(i)), c.inputs[i].dtype(), shape);
    feeds.emplace_back(p, c.inputs[i]);
    inputs.push_back(Identity(root.WithOpName("in" + std::to_string(i) + "_host").WithDevice(kCpu), p));
  }
  const int first = g.num_nodes();
  std::vector<Output> outs = c.build(root.WithDevice(device), inputs);
  if (!root.ok()) {
    *status = root.status();
    return {};
  }
  SessionOptions opts;
  opts.allow_soft_placement = true;  // the Placeholders have no GPU kernel
  opts.inter_op_threads = 1;
  Session sess(g, opts);
  auto r = sess.Run(feeds, outs);
  if (device == kGpu) {
    for (int id = first; id < g.num_nodes(); ++id) {
      const Node& n = *g.node(id);
      if (n.requested_device().find("CPU") != std::string::npos) continue;
      const Device* placed = sess.placement().device(n);
      EXPECT_TRUE(placed != nullptr && placed->device_type() == kDeviceGpu)
          << c.name << ": " << n.DebugName() << " ran on "
          << (placed ? placed->name() : std::string("no device"));
    }
  }
  *status = r.ok() ? Status::OK() : r.status();
  if (!r.ok()) return {};
  return std::move(r).value();
}

// CPU and GPU runs succeed and agree output by output (uint8 exactly).
inline void Check(const parity::Case& c) {
  Status cpu_status, gpu_status;
  std::vector<Tensor> cpu = RunCase(c, kCpu, false, &cpu_status);
  std::vector<Tensor> gpu = RunCase(c, kGpu, false, &gpu_status);
  ASSERT_TRUE(cpu_status.ok()) << c.name << " on the CPU: " << cpu_status.ToString();
  ASSERT_TRUE(gpu_status.ok()) << c.name << " on the GPU: " << gpu_status.ToString();
  ASSERT_EQ(cpu.size(), gpu.size()) << c.name;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (cpu[i].dtype() == kUInt8 && gpu[i].dtype() == kUInt8 && gpu[i].shape() == cpu[i].shape()) {
      EXPECT_EQ(gpu[i].ToVector<uint8_t>(), cpu[i].ToVector<uint8_t>()) << c.name << ", output " << i;
    } else {
      EXPECT_TRUE(parity::Near(gpu[i], cpu[i], c.rtol, c.atol)) << c.name << ", output " << i;
    }
  }
}

// Both devices' kernels reject the inputs (fed with unknown static shapes)
// with one code and one message, which contains `expected`.
inline void ExpectSameError(const parity::Case& c, const std::string& expected) {
  Status cpu, gpu;
  RunCase(c, kCpu, true, &cpu);
  RunCase(c, kGpu, true, &gpu);
  ASSERT_FALSE(cpu.ok()) << c.name << ": the CPU accepted it";
  EXPECT_NE(cpu.message().find(expected), std::string::npos) << c.name << ": " << cpu.ToString();
  EXPECT_EQ(gpu.code(), cpu.code()) << c.name << ": GPU " << gpu.ToString() << " / CPU " << cpu.ToString();
  EXPECT_EQ(gpu.message(), cpu.message()) << c.name;
}

// The transfers a step made (StepStats), as "node:output /device:X -> /device:Y".
inline std::vector<std::string> Transfers(const StepStats& stats) {
  std::vector<std::string> out;
  for (const StepStats::NodeTiming& t : stats.nodes) {
    if (!t.transfer) continue;
    out.push_back(t.node->name() + ":" + std::to_string(t.output) + " " + t.transfer_from->short_name() +
                  " -> " + t.device->short_name());
  }
  return out;
}

}  // namespace cuda_test
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_ARRAY_CUDA_TEST_UTIL_H_
