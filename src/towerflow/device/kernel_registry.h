// KernelRegistry: which kernels exist, keyed by op, device type and the dtype of
// the op's type attr ("T"), and how to build them.
//
// Kernels register from one function per kernel file (RegisterMatMulKernels(...)),
// all called once by EnsureKernelsRegistered() in kernels/register_all.cc (the
// kernels library sits above device/ in the link order); modules above runtime
// (data/) register theirs from their own Ensure...Registered(). Thread-safe:
// registration takes a writer lock, lookups a reader lock, and returned
// KernelDef pointers stay valid for the life of the process. Lookup failures are Unimplemented with TF's
// wording: the op, the device type, and the kernels that do exist.
#ifndef TOWERFLOW_DEVICE_KERNEL_REGISTRY_H_
#define TOWERFLOW_DEVICE_KERNEL_REGISTRY_H_

#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <memory>
#include <string>
#include <vector>

#include "towerflow/device/op_kernel.h"

namespace tw {

using KernelFactory = std::function<std::unique_ptr<OpKernel>(OpKernelConstruction*)>;

struct KernelDef {
  std::string op;
  std::string device_type;
  // The type attr the kernel is specialised on ("T"); empty for ops without one.
  std::string type_attr;
  std::vector<DataType> types;
  KernelFactory factory;
  // Inputs and outputs (by index) that this kernel keeps in host memory on a
  // device without host memory (TF's HostMemory("shape")): shape, axis and
  // size arguments the kernel reads on the host, and the int32 values that TF
  // keeps on the host of a GPU. Empty on host-memory devices. The partitioner
  // (runtime/partition.h) copies between memory types as it does between devices.
  std::vector<int> host_memory_inputs;
  std::vector<int> host_memory_outputs;
  bool HostMemoryInput(int i) const;
  bool HostMemoryOutput(int o) const;
};

// A kernel that runs a producer -> consumer chain as one (TF's remapper
// fusions): e.g. Conv2D -> BiasAddRelu as one oneDNN convolution that adds
// the bias and applies ReLU while each output tile is in registers, instead of
// writing the convolution's output and reading it back. The session's plan
// builder (runtime/fusion.h) uses one when output 0 of `producer_op` is input
// `consumer_input` of `consumer_op`, no other node of the step reads it, and
// both run on one device of `device_type`. The fused kernel is built from the
// producer's node (its attrs; OpKernel::node() is the producer) and told the
// consumer; its inputs are the producer's inputs followed by the consumer's
// other inputs in order, and its outputs are the consumer's (the context's
// node() is the consumer, so OpKernelContext::input_name does not apply).
//
// A fusion may absorb more nodes below the producer (FusionDef::deeper: the
// towers' gradients of one weight, MatMul per tower -> AddN -> Div, applied
// by ApplyMomentum). The fused item's inputs then follow one rule from the
// consumer down: a node's inputs are those of each absorbed producer of it,
// expanded by the same rule in input order, followed by its own other inputs
// (for MatMul_0, MatMul_1 -> AddN -> Div -> ApplyMomentum: a0 b0 a1 b1, the
// divisor, then var accum lr momentum). The kernel finds the absorbed nodes
// from the producer's node, whose shape `deeper` has checked.
using FusedKernelFactory = std::function<std::unique_ptr<OpKernel>(OpKernelConstruction* producer, const Node& consumer)>;
// An edge of a fusion: output 0 of `producer` is input `consumer_input` of `consumer`.
struct FusedEdge {
  const Node* producer = nullptr;
  const Node* consumer = nullptr;
  int consumer_input = 0;
};

struct FusionDef {
  std::string producer_op;
  std::string consumer_op;
  int consumer_input = 0;
  std::string device_type;
  // The dtypes of the producer's output 0 it runs (the value the consumer
  // reads; the producer's "T" for MatMul, Conv2D and the like, "DstT" for
  // Cast).
  std::vector<DataType> types;
  FusedKernelFactory factory;
  // Optional: where the fusion applies beyond ops, device and dtype (say, a
  // divisor whose shape is known to hold one element). Null: everywhere.
  std::function<bool(const Node& producer, const Node& consumer)> applies = nullptr;
  // Optional: the edges below the producer that the kernel absorbs too, each
  // (producer, consumer, consumer_input) with output 0 of its producer read;
  // appended to `edges` (which holds the first edge), parents before
  // children. False: the producer's inputs are not the pattern's. The plan
  // builder checks every edge as the first one. Null: two nodes.
  std::function<bool(const Node& producer, std::vector<FusedEdge>* edges)> deeper = nullptr;
  // The absorbed nodes may be placed on other CPU devices with host memory
  // than the consumer's (virtual CPU devices share one address space, and a
  // transfer between them shares the buffer): a tower's gradient MatMul on its
  // own device summed into the update on the variable's.
  bool across_host_devices = false;
  // A CPU fusion whose pattern the GPU fuses too: the twin the GPU's fused
  // kernel is checked against, and what test devices borrow (device/fake/).
  bool gpu_twin = false;
  // Only a twin: plans on this device do not fuse with it.
  bool twin_only = false;
};

// An update group: many nodes of one op on one device, independent of each
// other, run as one kernel (one launch over every variable of a step, as
// PyTorch's foreach/fused optimizers and apex's multi-tensor apply do), and
// where the def takes one, a last member that is the global step's AssignAdd
// (GroupDef::step_bump). The group's kernel reads the members' inputs one
// after another and makes their outputs one after another. The plan builder
// (runtime/update_groups.h) forms the groups.
using GroupKernelFactory =
    std::function<StatusOr<std::unique_ptr<OpKernel>>(const std::vector<const Node*>& members, Device* device)>;
struct GroupDef {
  std::string op;
  std::string device_type;
  std::vector<DataType> types;  // the members' attr "T"
  GroupKernelFactory factory;
  // Whether `a` and `b` may share a kernel (the same hyper-parameter inputs
  // and attrs). Null: any two.
  std::function<bool(const Node& a, const Node& b)> compatible = nullptr;
  // A CPU twin: what the device's group kernel is checked against, and what
  // test devices borrow (device/fake/); plans do not group on this device.
  bool twin_only = false;
  // The factory's kernel also runs a last member that is the global step's
  // AssignAdd (runtime/update_groups.h's step bump).
  bool step_bump = false;
};

class KernelRegistry {
 public:
  // The process-wide registry. Empty until kernels/register_all.h's
  // EnsureKernelsRegistered() has run (Session does it).
  static KernelRegistry& Global();

  void Register(KernelDef def);
  // Registers Kernel<T> for each T under op/device, specialised on attr "T".
  template <template <typename> class Kernel, typename... Ts>
  void RegisterTyped(const std::string& op, const std::string& device_type,
                     const std::string& type_attr = "T") {
    (Register(KernelDef{op, device_type, type_attr, {DataTypeOf<Ts>()},
                        [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                          return std::make_unique<Kernel<Ts>>(c);
                        },
                        {},
                        {}}),
     ...);
  }
  // Registers one kernel class for every dtype in `types` (or untyped if empty).
  template <typename Kernel>
  void RegisterUntyped(const std::string& op, const std::string& device_type,
                       std::string type_attr = "", std::vector<DataType> types = {}) {
    Register(KernelDef{op, device_type, std::move(type_attr), std::move(types),
                       [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                         return std::make_unique<Kernel>(c);
                       },
                       {},
                       {}});
  }

  // The kernel for `node` on `device_type`, or nullptr.
  const KernelDef* Find(const Node& node, const std::string& device_type) const;
  // Device types with a kernel for this node's op and attrs, in priority order.
  std::vector<std::string> SupportedDeviceTypes(const Node& node) const;
  // Builds the kernel; Unimplemented (no kernel) or the construction error, both
  // naming the node.
  StatusOr<std::unique_ptr<OpKernel>> CreateKernel(const Node& node, Device* device) const;
  // "device='CPU'; T in [float, double]" lines for error messages.
  std::string DescribeKernels(const std::string& op) const;
  // Per device type, the dtypes with a kernel for `op` (untyped kernels list none).
  std::map<std::string, std::vector<DataType>> KernelTypes(const std::string& op) const;
  std::vector<const KernelDef*> KernelsFor(const std::string& op) const;

  void RegisterFusion(FusionDef def);
  // The fusions of `producer` into input `consumer_input` of `consumer` on
  // `device_type`, in registration order (a larger pattern is registered
  // before the pair it extends), twin-only ones left out. Looks at ops, device
  // type and dtype only; the plan builder checks the edges.
  std::vector<const FusionDef*> FindFusions(const Node& producer, const Node& consumer, int consumer_input,
                                            const std::string& device_type) const;
  // Copies of the fusions whose producer is `op`, every device type.
  std::vector<FusionDef> FusionsFor(const std::string& op) const;
  // Builds the fused kernel; the construction error names the producer.
  StatusOr<std::unique_ptr<OpKernel>> CreateFusedKernel(const FusionDef& def, const Node& producer,
                                                         const Node& consumer, Device* device) const;

  void RegisterGroup(GroupDef def);
  // The group `node` may join on `device_type` (its op and dtype), or
  // nullptr; with `twins`, also twin-only groups (which plans never form).
  const GroupDef* FindGroup(const Node& node, const std::string& device_type, bool twins = false) const;
  // Copies of the groups registered for `op`, every device type.
  std::vector<GroupDef> GroupsFor(const std::string& op) const;

 private:
  mutable std::shared_mutex mu_;
  std::multimap<std::string, KernelDef> kernels_;  // guarded by mu_
  std::vector<std::unique_ptr<FusionDef>> fusions_;  // guarded by mu_
  std::vector<std::unique_ptr<GroupDef>> groups_;    // guarded by mu_
};


}  // namespace tw

#endif  // TOWERFLOW_DEVICE_KERNEL_REGISTRY_H_
