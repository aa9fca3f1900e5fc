// Test helpers for the element-wise, nn and training CUDA tests
// (cwise_cuda_test.cc, nn_cuda_test.cc, training_cuda_test.cc), on top of
// kernels/gpu_parity_test_util.h. Test-only; not thread-safe (it sets
// TOWERFLOW_GPU_POISON in the environment, as parity::RunOn does).
//
// Two gaps of parity::ExpectGpuMatchesCpu / ExpectSameError that these fill:
// - Soft placement moves an op without a GPU kernel to the CPU, so a missing
//   registration would compare the CPU with itself and pass. RunPlaced checks
//   that every node of the ops under test was placed on a GPU.
// - Placeholders of the inputs' own shapes let graph building reject bad
//   shapes through the ops' shape functions, before any kernel runs on either
//   device. ExpectSameKernelError feeds through Placeholders of unknown shape,
//   so the kernels themselves reject the shapes, and compares the two errors
//   whole: same code and same message (nodes have the same names on both runs).
#ifndef TOWERFLOW_KERNELS_INTERNAL_CUDA_PARITY_CHECKS_H_
#define TOWERFLOW_KERNELS_INTERNAL_CUDA_PARITY_CHECKS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw {
namespace parity {

// Runs c.build on `device` (inputs through Placeholders of the inputs' shapes,
// or of unknown shape when `unknown_shapes`) and returns the fetched outputs,
// or an empty vector with *status set when building or running fails. On a GPU
// device, records a test failure for each node whose op is in `gpu_ops` that
// was not placed on a GPU.
inline std::vector<Tensor> RunPlaced(const Case& c, const std::string& device,
                                     const std::vector<std::string>& gpu_ops, bool unknown_shapes,
                                     Status* status) {
  setenv("TOWERFLOW_GPU_POISON", "1", 1);
  Graph g;
  Scope root(g);
  std::vector<Output> placeholders;
  FeedList feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const PartialShape shape = unknown_shapes ? PartialShape::Unknown() : PartialShape(c.inputs[i].shape());
    Output p = Placeholder(root.WithOpName("in" + std::to_string(i)), c.inputs[i].dtype(), shape);
    placeholders.push_back(p);
    feeds.emplace_back(p, c.inputs[i]);
  }
  std::vector<Output> outs = c.build(root.WithDevice(device), placeholders);
  if (!root.ok()) {
    *status = root.status();
    return {};
  }
  SessionOptions opts;
  opts.allow_soft_placement = true;  // the Placeholders stay on the CPU
  opts.inter_op_threads = 1;
  Session sess(g, opts);
  auto r = sess.Run(feeds, outs);
  if (device.find("GPU") != std::string::npos) {
    for (int id = 0; id < g.num_nodes(); ++id) {
      const Node& node = *g.node(id);
      if (std::find(gpu_ops.begin(), gpu_ops.end(), node.op()) == gpu_ops.end()) continue;
      Device* placed = sess.placement().device(node);
      EXPECT_TRUE(placed != nullptr && placed->device_type() == kDeviceGpu)
          << c.name << ": " << node.DebugName() << " ran on "
          << (placed != nullptr ? placed->name() : std::string("no device")) << ", not a GPU";
    }
  }
  *status = r.ok() ? Status::OK() : r.status();
  if (!r.ok()) return {};
  return std::move(r).value();
}

// ExpectGpuMatchesCpu, plus: the ops in `gpu_ops` ran on the GPU.
inline void ExpectGpuMatchesCpuPlaced(const Case& c, const std::vector<std::string>& gpu_ops) {
  Status cpu_status, gpu_status;
  std::vector<Tensor> cpu = RunPlaced(c, "/device:CPU:0", gpu_ops, false, &cpu_status);
  std::vector<Tensor> gpu = RunPlaced(c, "/device:GPU:0", gpu_ops, false, &gpu_status);
  ASSERT_TRUE(cpu_status.ok()) << c.name << " on the CPU: " << cpu_status.ToString();
  ASSERT_TRUE(gpu_status.ok()) << c.name << " on the GPU: " << gpu_status.ToString();
  ASSERT_EQ(cpu.size(), gpu.size()) << c.name;
  for (size_t i = 0; i < cpu.size(); ++i)
    EXPECT_TRUE(Near(gpu[i], cpu[i], c.rtol, c.atol)) << c.name << ", output " << i;
}

// Both devices' kernels reject the inputs (fed with unknown static shapes):
// the same code and message, which contains `expected`.
inline void ExpectSameKernelError(const Case& c, const std::vector<std::string>& gpu_ops,
                                  const std::string& expected) {
  Status cpu, gpu;
  RunPlaced(c, "/device:CPU:0", gpu_ops, true, &cpu);
  RunPlaced(c, "/device:GPU:0", gpu_ops, true, &gpu);
  ASSERT_FALSE(cpu.ok()) << c.name << ": the CPU kernel accepted it";
  EXPECT_NE(cpu.message().find(expected), std::string::npos) << c.name << ": " << cpu.ToString();
  EXPECT_EQ(gpu.code(), cpu.code()) << c.name << ": GPU " << gpu.ToString() << " / CPU " << cpu.ToString();
  EXPECT_EQ(gpu.message(), cpu.message()) << c.name;
}

}  // namespace parity
}  // namespace tw

#endif  // TOWERFLOW_KERNELS_INTERNAL_CUDA_PARITY_CHECKS_H_
