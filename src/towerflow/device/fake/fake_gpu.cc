#include "towerflow/device/fake/fake_gpu.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
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

// Per fake GPU index, for the process's life: the copies to the host that
// waited for the device (each CopyToHost, each CopyToHostMany once).
std::atomic<int64_t>* HostWaits(int index) {
  static auto* waits = new std::array<std::atomic<int64_t>, 64>();
  return &(*waits)[static_cast<size_t>(index) % waits->size()];
}

// A fake GPU's copy to the host, done when started: its wait is counted.
class CountedWait final : public PendingCopy {
 public:
  explicit CountedWait(int index) : index_(index) {}
  Status Wait() override {
    HostWaits(index_)->fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }

 private:
  int index_;
};

class FakeGpuDevice final : public Device {
 public:
  FakeGpuDevice(int index, int intra_op_threads, bool device_memory)
      : Device(kDeviceGpu, index, FakeGpuAllocator(index), intra_op_threads), device_memory_(device_memory) {}
  std::string physical_description() const override {
    return "device: " + std::to_string(index()) + ", name: towerflow fake GPU (" +
           (device_memory_ ? "device memory, simulated" : "host memory") + ")";
  }
  bool host_memory() const override { return !device_memory_; }
  // Device memory mode: copies are memcpys between allocators, as a real
  // GPU's are cudaMemcpys; strings are refused as a GPU refuses them.
  Status CopyFromHost(const Tensor& host, Tensor* on_device) override { return Copy(host, allocator(), on_device); }
  Status CopyToHost(const Tensor& on_device, Tensor* host) override {
    HostWaits(index())->fetch_add(1, std::memory_order_relaxed);
    return Copy(on_device, CpuAllocator(), host);
  }
  Status CopyToHostMany(const std::vector<Tensor>& on_device, std::vector<Tensor>* host) override {
    HostWaits(index())->fetch_add(1, std::memory_order_relaxed);
    host->resize(on_device.size());
    for (size_t i = 0; i < on_device.size(); ++i) TW_RETURN_IF_ERROR(Copy(on_device[i], CpuAllocator(), &(*host)[i]));
    return Status::OK();
  }
  // Copies at once (a fake GPU's kernels have run when they return), and
  // counts the wait when the copy is waited for, where a GPU waits.
  StatusOr<std::unique_ptr<PendingCopy>> StartCopyToHostMany(const std::vector<Tensor>& on_device,
                                                              std::vector<Tensor>* host) override {
    host->resize(on_device.size());
    for (size_t i = 0; i < on_device.size(); ++i) TW_RETURN_IF_ERROR(Copy(on_device[i], CpuAllocator(), &(*host)[i]));
    return std::unique_ptr<PendingCopy>(std::make_unique<CountedWait>(index()));
  }
  // Within its memory (host memory in both modes): a memcpy.
  Status CopyOnDevice(const void* src, void* dst, size_t bytes) const override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return Status::OK();
  }
  Status CopyToPeer(const Tensor& on_device, Device* dst, Tensor* out) override {
    if (dst->device_type() != kDeviceGpu || dst->host_memory()) return Device::CopyToPeer(on_device, dst, out);
    return Copy(on_device, dst->allocator(), out);
  }

 private:
  Status Copy(const Tensor& src, Allocator* allocator, Tensor* dst) const {
    if (!device_memory_) return errors::Unimplemented(name(), " has host memory: no copies");
    if (src.dtype() == kString) {
      return errors::InvalidArgument("cannot copy string", src.shape().ToString(), " to or from ", name());
    }
    StatusOr<Tensor> t = Tensor::Allocate(allocator, src.dtype(), src.shape());
    if (!t.ok()) return t.status().WithContext("copying on " + name());
    if (src.TotalBytes() > 0) std::memcpy(t->raw_data(), src.raw_data(), src.TotalBytes());
    *dst = std::move(t).value();
    return Status::OK();
  }
  bool device_memory_;
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
      devices->push_back(std::make_unique<FakeGpuDevice>(i, per_device, options.fake_gpu_device_memory));
    }
    return Status::OK();
  }
};

}  // namespace

int64_t FakeGpuHostWaits(int index) { return HostWaits(index)->load(std::memory_order_relaxed); }

const std::vector<std::string>& FakeGpuKernelOps() {
  // The ops TF has GPU kernels for among towerflow's math, nn, array, state,
  // training and collective ops, and BiasAddRelu (towerflow's own, with a CUDA
  // kernel). Placeholder is left out on purpose (TF has a GPU Placeholder): it
  // is the standard "no GPU kernel" case in tests.
  static const std::vector<std::string>* ops = new std::vector<std::string>{
      "Add", "AddN", "ApplyAdagrad", "ApplyAdam", "ApplyCenteredRMSProp", "ApplyGradientDescent",
      "ApplyMomentum", "ApplyRMSProp", "ArgMax", "Assign", "AssignAdd", "AssignSub", "AvgPool", "AvgPoolGrad",
      "BatchMatMulV2", "BiasAdd", "BiasAddGrad", "BiasAddRelu", "BiasAddReluGrad", "BroadcastTo", "Cast",
      "CollectiveAllReduce", "Const", "Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Div", "Equal",
      "EnsureShape", "Exp", "ExpandDims", "Fill", "FloorDiv", "FloorMod", "GatherV2", "GreaterEqual", "Identity",
      "InitializedValue", "InvertPermutation", "IsVariableInitialized", "L2Loss", "LRN", "LRNGrad", "Log", "Log1p", "MatMul",
      "Max", "MaxPool", "MaxPoolGrad", "Maximum", "Mean", "Mul", "Neg", "NoOp", "OneHot", "OnesLike", "Pad",
      "PadV2", "Pow", "RandomStandardNormal", "RandomUniform", "Range", "Relu", "ReluGrad", "Reshape", "ReverseV2",
      "Select", "SelectV2", "Shape", "Sigmoid", "Slice", "SliceGrad", "Softmax",
      "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyMean", "SparseSoftmaxCrossEntropyWithLogits",
      "Sqrt", "Square", "Squeeze", "StopGradient", "Sub", "Sum", "SumToShape", "Tanh", "Tile", "Transpose",
      "TruncatedNormal", "UnsortedSegmentSum", "VariableV2", "ZerosLike"};
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
    // And the CPU twins of the GPU's fusions, its fusions (when the consumer
    // has a fake-GPU kernel too).
    for (FusionDef& f : registry.FusionsFor(op)) {
      if (f.device_type != kDeviceCpu || !f.gpu_twin) continue;
      if (std::find(ops.begin(), ops.end(), f.consumer_op) == ops.end()) continue;
      f.device_type = kDeviceGpu;
      f.twin_only = false;
      f.gpu_twin = false;
      registry.RegisterFusion(std::move(f));
    }
  }
}

Status RegisterFakeGpuDeviceFactory() {
  // Type "GPU" with TF's GPU priority (210), so the placer prefers it as it
  // would a real one.
  return DeviceFactory::Register("FAKE_GPU", kDeviceGpu, 210, std::make_unique<FakeGpuDeviceFactory>());
}

}  // namespace tw
