#include "towerflow/device/fake/fake_gpu.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "towerflow/device/device_set.h"

namespace tw {
namespace {

// The allocator of fake GPU `index`, made once and kept for the process's life:
// a tensor fetched from a fake GPU is that device's memory (host memory needs no
// copy to the host), and it may outlive the Session and its devices, so the
// allocator it returns its buffer to must outlive them too. Its byte count
// spans sessions.
Allocator* FakeGpuAllocator(int index) {
  static std::mutex mu;
  static auto* allocators = new std::vector<std::unique_ptr<Allocator>>();
  std::lock_guard<std::mutex> lock(mu);
  while (static_cast<int>(allocators->size()) <= index) {
    allocators->push_back(NewHostAllocator("fake_gpu_" + std::to_string(allocators->size())));
  }
  return (*allocators)[static_cast<size_t>(index)].get();
}

class FakeGpuDevice final : public Device {
 public:
  FakeGpuDevice(int index, int intra_op_threads)
      : Device(kDeviceGpu, index, FakeGpuAllocator(index), intra_op_threads) {}
  std::string physical_description() const override {
    return "device: " + std::to_string(index()) + ", name: towerflow fake GPU (host memory)";
  }
};

class FakeGpuDeviceFactory final : public DeviceFactory {
 public:
  Status CreateDevices(const SessionOptions& options, std::vector<std::unique_ptr<Device>>* devices) override {
    if (options.num_fake_gpus == 0) return Status::OK();
    // Where a CUDA GPU is visible, the "GPU" kernels are CUDA kernels
    // (kernels/cuda_kernels.h) that a fake GPU cannot run, whether or not
    // this session asked for the real GPUs (the CUDA factory makes none when
    // fake ones are asked for).
    if (const int real = VisibleCudaGpuCount(); real > 0) {
      return errors::InvalidArgument("SessionOptions.num_fake_gpus = ", options.num_fake_gpus, " but ", real,
                                     " CUDA GPU(s) are visible; fake GPUs are for machines without one "
                                     "(hide the GPUs with CUDA_VISIBLE_DEVICES= to use fake ones)");
    }
    RegisterFakeGpuKernels(KernelRegistry::Global(), FakeGpuKernelOps());
    const int total = options.intra_op_threads > 0
                          ? options.intra_op_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int per_device = std::max(1, total / options.num_fake_gpus);
    for (int i = 0; i < options.num_fake_gpus; ++i) {
      devices->push_back(std::make_unique<FakeGpuDevice>(i, per_device));
    }
    return Status::OK();
  }
};

}  // namespace

const std::vector<std::string>& FakeGpuKernelOps() {
  // The ops TF has GPU kernels for among towerflow's math, nn, array, state and
  // training ops. Placeholder is left out on purpose (TF has a GPU Placeholder):
  // it is the standard "no GPU kernel" case in tests.
  static const std::vector<std::string>* ops = new std::vector<std::string>{
      "Add", "AddN", "ApplyAdam", "ApplyGradientDescent", "ApplyMomentum", "ArgMax", "Assign", "AssignAdd",
      "AssignSub", "BiasAdd", "BiasAddGrad", "BroadcastTo", "Cast", "Const", "Conv2D", "Conv2DBackpropFilter",
      "Conv2DBackpropInput", "Div", "Equal", "Exp", "ExpandDims", "Fill", "GreaterEqual", "Identity",
      "IsVariableInitialized", "L2Loss", "Log", "MatMul", "Max", "MaxPool", "MaxPoolGrad", "Maximum", "Mean",
      "Mul", "Neg", "NoOp", "OnesLike", "RandomStandardNormal", "RandomUniform", "Relu", "ReluGrad", "Reshape",
      "Shape", "Sigmoid", "Slice", "SliceGrad", "Softmax", "SoftmaxCrossEntropyWithLogits",
      "SparseSoftmaxCrossEntropyWithLogits", "Sqrt", "Square", "Squeeze", "StopGradient", "Sub", "Sum",
      "SumToShape", "Tanh", "TruncatedNormal", "VariableV2", "ZerosLike"};
  return *ops;
}

void RegisterFakeGpuKernels(KernelRegistry& registry, const std::vector<std::string>& ops) {
  // One registration at a time, so two sessions made at once copy each op once.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  for (const std::string& op : ops) {
    std::vector<KernelDef> copies;
    bool has_gpu = false;
    for (const KernelDef* k : registry.KernelsFor(op)) {
      if (k->device_type == kDeviceGpu) has_gpu = true;
      if (k->device_type == kDeviceCpu) {
        KernelDef copy = *k;
        copy.device_type = kDeviceGpu;
        copies.push_back(std::move(copy));
      }
    }
    if (has_gpu) continue;
    for (KernelDef& k : copies) registry.Register(std::move(k));
    // The op's CPU twin of an update group serves fake GPUs as their group.
    for (GroupDef& g : registry.GroupsFor(op)) {
      if (g.device_type != kDeviceCpu || !g.twin_only) continue;
      g.device_type = kDeviceGpu;
      g.twin_only = false;
      registry.RegisterGroup(std::move(g));
    }
  }
}

Status RegisterFakeGpuDeviceFactory() {
  // Type "GPU" with TF's GPU priority (210), so the placer prefers it as it
  // would a real one.
  return DeviceFactory::Register("FAKE_GPU", kDeviceGpu, 210, std::make_unique<FakeGpuDeviceFactory>());
}

}  // namespace tw
