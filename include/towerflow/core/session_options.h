// SessionOptions: how a Session runs (runtime/session.h): its devices (which
// DeviceSet it makes: CPUs, virtual CPUs, GPUs, logical GPUs), its threads,
// placement, and step options. The one options struct of a session: the
// device layer reads the device fields from it too. A plain value, designated
// initializers welcome: Session s(graph, {.inter_op_threads = 1, .num_cpu_devices = 2}).
#ifndef TOWERFLOW_CORE_SESSION_OPTIONS_H_
#define TOWERFLOW_CORE_SESSION_OPTIONS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <vector>

namespace tw {

// The most virtual CPU devices a DeviceSet makes: each costs memory and
// threads, and a number past this is a typo, not a machine.
inline constexpr int kMaxCpuDevices = 1024;

struct SessionOptions {
  // ---- threads
  // Threads that run independent nodes of a step, the calling thread
  // included (the session's pool has one fewer); 0: one per core. 1 runs every
  // node on the calling thread.
  int inter_op_threads = 0;
  // Threads the heavy kernels (MatMul, Conv2D) split work over, shared among
  // the CPU devices: each gets max(1, intra_op_threads / num_cpu_devices). 0:
  // one per hardware thread, and then a kernel on a device left with one
  // thread (virtual CPU devices sharing the cores) also splits its work over
  // inter-op threads that are idle at the time.
  int intra_op_threads = 0;
  // One thread per GPU launches its kernels (a GPU's stream runs them in one
  // order anyway): a step's GPU work never changes threads, and the GPUs of
  // several towers are fed at once. Applies to fake GPUs too, whatever
  // inter_op_threads says; false runs GPU items on any thread of the step.
  bool gpu_launcher_threads = true;

  // ---- devices
  // Virtual CPU devices /device:CPU:0 to N-1 (TF's device_count {"CPU": N}),
  // 1 to kMaxCpuDevices.
  int num_cpu_devices = 1;
  // Test-only fake GPUs /device:GPU:0 to N-1 (type "GPU", host memory).
  int num_fake_gpus = 0;
  // Test-only: fake GPUs act as devices with memory of their own, as CUDA
  // GPUs do (values cross to and from the host through copies, each copy to
  // the host waits for the device), so CPU-only CI runs the GPU's transfer
  // paths. Their bytes are still host memory, which their kernels read.
  bool fake_gpu_device_memory = false;
  // The CUDA backend (device/cuda/): at most this many of the GPUs that
  // CUDA_VISIBLE_DEVICES leaves visible; -1: all of them, 0: none.
  int max_gpus = -1;
  // The CUDA backend: which visible GPUs (ordinals under CUDA_VISIBLE_DEVICES)
  // the session opens, in this order, as its physical GPUs 0, 1, ... (TF's
  // GPUOptions.visible_device_list; the first max_gpus of them when max_gpus
  // is set): a rank of a multi-process job opens its own GPU alone, which is
  // then its /device:GPU:0. Each ordinal at most once. Empty: every visible GPU
  // in order. A machine without GPUs ignores it (as a CPU-only build does), and
  // so do fake GPUs.
  std::vector<int> visible_gpus = {};
  // Logical GPUs per physical GPU (TF's LogicalDeviceConfiguration): each is a
  // device of its own (/device:GPU:k) with its own streams and memory limit, so
  // towers and all-reduce run on a machine with one GPU.
  int logical_gpus_per_gpu = 1;
  // Memory limit per logical GPU in MiB; 0: the GPU's free memory at start,
  // less a reserve for CUDA libraries, split evenly among its logical GPUs.
  int64_t gpu_memory_limit_mb = 0;
  // cuBLAS may use TF32 tensor cores for float32 MatMul (about 8x faster on
  // H100-class GPUs, 10-bit mantissa inputs). Off by default, as in PyTorch.
  bool allow_tf32 = false;
  // cuDNN convolutions time their candidate algorithms on the first run of
  // each shape (cudnnFind*Ex, TF's autotune, PyTorch's benchmark mode) and
  // keep the fastest; off: cuDNN's heuristic order, the same algorithms in
  // every run (what a run reproducible bit for bit needs).
  bool cudnn_autotune = true;

  // ---- placement and steps
  // An op whose requested device cannot run it (no kernel for that type, or no
  // such device) goes to one that can, instead of failing.
  bool allow_soft_placement = false;
  // Print "name: (Op): <device>" to stdout for every node when it is placed
  // (the whole graph at session creation, later nodes at the run that first
  // needs them), and "Device mapping:" at creation.
  bool log_device_placement = false;
  // 1: each placement line also gives its reason (device/placer.h).
  int log_device_placement_verbosity = 0;
  // Towers that consume one dequeue built outside them (runtime/
  // pitfall_detector.h) are a warning; true makes them an InvalidArgument error
  // from every Run.
  bool strict_tower_inputs = false;
  // Measure time inside kernels for StepStats (costs two clock reads per node).
  bool collect_step_stats = false;
  // Scan every float output of every kernel; the first NaN or Inf fails the
  // run with InvalidArgument naming the node and op that produced it (TF's
  // add_check_numerics_ops). Costs a pass over every output.
  bool check_numerics = false;
  // Run producer -> consumer chains that have a fused kernel as one kernel
  // where nothing else reads the producer's output (runtime/fusion.h:
  // Conv2D -> BiasAdd / BiasAddRelu on the CPU). Results are the same up to
  // float rounding; false runs every node's own kernel.
  bool fuse_kernels = true;
  // Step memory: a plan whose buffer sizes repeat step after step takes its
  // intermediate tensors from one block per device, at offsets planned once
  // from their lifetimes (runtime/step_arena.h), instead of one allocator
  // call per tensor. kAuto: on devices with memory of their own (GPUs, where
  // each allocation is a CUDA call); kOn: on every device; kOff: never.
  enum class ArenaMode { kAuto, kOn, kOff };
  ArenaMode step_arena = ArenaMode::kAuto;
  // Step graphs (runtime/step_graph.h): a GPU's kernels of a step, once the
  // step has run twice with the same shapes, are recorded once (on a CUDA
  // GPU, stream capture into a CUDA graph) and replayed each step with one
  // launch, into buffers kept for the purpose. A step whose shapes differ
  // runs them one by one; a variable whose buffer moved makes them be
  // recorded again; what cannot be recorded runs as before, with one log
  // line saying why. kAuto: on CUDA GPUs; kOn: on every GPU (fake GPUs
  // replay their recorded kernels one by one); kOff: never. check_numerics
  // turns them off (it reads every kernel's outputs), and so does
  // gpu_launcher_threads = false on CUDA GPUs (a capture would record what
  // other threads queue meanwhile).
  enum class StepGraphMode { kAuto, kOn, kOff };
  StepGraphMode cuda_graphs = StepGraphMode::kAuto;
};

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_SESSION_OPTIONS_H_
