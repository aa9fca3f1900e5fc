// OpKernel: the implementation of one op for one device type, and the contexts
// it is built and run with.
//
// A Session creates one OpKernel per node it runs (OpKernelConstruction gives the
// node's attrs; a bad attr fails construction with a Status naming the node) and
// calls Compute once per step with an OpKernelContext holding the step's inputs.
// Compute reports failure with ctx->SetStatus (or the TW_OP_REQUIRES macros); the
// executor aborts that step and names the node. Compute may be called from
// several threads at once for different steps: kernels keep per-step state in the
// context, and stateful kernels guard their members.
#ifndef TOWERFLOW_DEVICE_OP_KERNEL_H_
#define TOWERFLOW_DEVICE_OP_KERNEL_H_

#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/core/cancellation.h"
#include "towerflow/core/tensor.h"
#include "towerflow/device/device.h"
#include "towerflow/device/resource_mgr.h"
#include "towerflow/graph/graph.h"

namespace tw {

class OpKernelConstruction {
 public:
  OpKernelConstruction(const Node& node, Device* device) : node_(node), device_(device) {}
  const Node& node() const { return node_; }
  Device* device() const { return device_; }
  template <typename T>
  Status GetAttr(const std::string& name, T* value) const {
    auto v = node_.attrs().Get<T>(name);
    if (!v.ok()) return v.status();
    *value = std::move(v).value();
    return Status::OK();
  }
  void SetStatus(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  const Status& status() const { return status_; }

 private:
  const Node& node_;
  Device* device_;
  Status status_;
};

// An input or output slot: a value, or a reference to a variable's tensor and
// the mutex that guards it.
struct TensorValue {
  Tensor value;
  Tensor* ref = nullptr;
  std::mutex* ref_mu = nullptr;
  bool is_ref() const { return ref != nullptr; }
};

class OpKernelContext {
 public:
  struct Params {
    const Node* node = nullptr;
    Device* device = nullptr;
    ResourceMgr* resources = nullptr;
    std::vector<TensorValue>* inputs = nullptr;
    int64_t step_id = 0;
    // Outputs this kernel keeps in host memory on a device without host memory
    // (KernelDef::host_memory_outputs); allocate_output serves them from the
    // host allocator. Null: none.
    const std::vector<int>* host_memory_outputs = nullptr;
    // Where outputs in device memory and temporaries come from in this step
    // (a view of the device's allocator: runtime/step_arena.h). Null: the
    // device's allocator.
    Allocator* allocator = nullptr;
    // Cancelled when the step fails elsewhere: kernels that wait on other
    // nodes of the step register a callback that wakes them. Null: the step
    // cannot be cancelled (never fails while the kernel waits).
    CancellationManager* cancellation = nullptr;
    // Where a kernel on a device without an intra-op pool of its own (a
    // virtual CPU device with one thread) splits its work: threads of the
    // step's inter-op pool, which join in only when they have nothing else
    // to run (ThreadPool::ParallelFor). Null: such kernels run on their thread.
    ThreadPool* idle_helpers = nullptr;
    // False when the thread running a kernel that MayBlock must not wait (an
    // inter-op thread): the kernel either finishes without waiting or calls
    // SetWouldWait and returns having changed nothing (see OpKernel::MayBlock).
    bool may_wait = true;
    // Outputs of the context: -1, the node's. An update group's kernel
    // (kernel_registry.h's GroupDef) makes every member's outputs in turn.
    int num_outputs = -1;
    // Per output, an allocator lent by the output's consumer
    // (OpKernel::InputAllocator), or null. Null vector: none.
    const std::vector<Allocator*>* output_allocators = nullptr;
  };
  explicit OpKernelContext(const Params& params);
  const Params& params() const { return params_; }

  const Node& node() const { return *params_.node; }
  Device* device() const { return params_.device; }
  // Params::allocator, else the device's: where device-memory tensors come from.
  Allocator* allocator() const { return params_.allocator != nullptr ? params_.allocator : params_.device->allocator(); }
  // The device's intra-op pool, else Params::idle_helpers (may be null).
  ThreadPool* intra_op_pool() const {
    ThreadPool* own = params_.device->intra_op_pool();
    return own != nullptr ? own : params_.idle_helpers;
  }
  ResourceMgr* resource_mgr() const { return params_.resources; }
  int64_t step_id() const { return params_.step_id; }
  CancellationManager* cancellation() const { return params_.cancellation; }
  // Params::may_wait; SetWouldWait reports that this kernel did nothing
  // because it would have had to wait.
  bool may_wait() const { return params_.may_wait; }
  void SetWouldWait() { would_wait_ = true; }
  bool would_wait() const { return would_wait_; }

  int num_inputs() const { return static_cast<int>(params_.inputs->size()); }
  // The value of input i (for a ref input: the variable's current tensor,
  // sharing its buffer).
  const Tensor& input(int i) const;
  // For ref inputs: the variable's tensor and its mutex. Hold the mutex while
  // reading or replacing the tensor.
  Tensor* mutable_input(int i) const { return (*params_.inputs)[static_cast<size_t>(i)].ref; }
  std::mutex* input_ref_mutex(int i) const { return (*params_.inputs)[static_cast<size_t>(i)].ref_mu; }
  bool input_is_ref(int i) const { return (*params_.inputs)[static_cast<size_t>(i)].is_ref(); }
  // "name:index" of the tensor feeding input i, for error messages.
  std::string input_name(int i) const;

  // Allocates output i on this device (in host memory for the kernel's host
  // memory outputs; from the allocator its consumer lent, if any:
  // Params::output_allocators). ResourceExhausted naming node, shape and
  // bytes in use when memory runs out (also recorded with SetStatus).
  Status allocate_output(int i, const TensorShape& shape, Tensor** out);
  // As allocate_output, but reuses the buffer of one of the `candidates`
  // inputs when this kernel holds its only reference (the step's last reader
  // of a value that nothing else shares: not a variable, a constant, a feed
  // or a fetch), it has output i's dtype and `shape`'s element count, and it
  // came from the allocator output i would use. The kernel then writes over
  // that input as it reads it: only for element-wise kernels that read each
  // input element before writing the same output element. An output whose
  // consumer lent it an allocator is always allocated there. TF's
  // forward_input_or_allocate_output.
  Status forward_input_or_allocate_output(std::initializer_list<int> candidates, int i, const TensorShape& shape,
                                          Tensor** out);
  // Allocates a scratch tensor that is not an output.
  Status allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out);
  void set_output(int i, Tensor t);
  void set_output_ref(int i, std::mutex* mu, Tensor* ref);
  // Passes ref input `in` through as ref output `out` (Assign, Apply*).
  void forward_ref_input_to_ref_output(int in, int out);
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  TensorValue& output(int i) { return outputs_[static_cast<size_t>(i)]; }
  std::vector<TensorValue>& outputs() { return outputs_; }

  void SetStatus(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  const Status& status() const { return status_; }

 private:
  // Params::output_allocators' entry for output i, or null.
  Allocator* LentAllocator(int i) const;

  Params params_;
  std::vector<TensorValue> outputs_;
  Status status_;
  bool would_wait_ = false;
};

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* ctx) : node_(ctx->node()) {}
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual void Compute(OpKernelContext* ctx) = 0;
  // False for kernels that take about as long as scheduling them (Const,
  // Identity, shape ops): the executor runs those inline rather than handing them
  // to another thread.
  virtual bool IsExpensive() const { return true; }
  // True for kernels that may wait on other steps' work (queue enqueue and
  // dequeue, readers): the executor runs them on threads of their own, so a
  // blocked kernel never holds an inter-op thread that other steps need.
  // Where such a kernel can tell under its own lock that it will not wait (a
  // dequeue from a queue that holds enough), it may honour
  // OpKernelContext::may_wait() == false: finish at once, or SetWouldWait and
  // return with nothing taken, no output and no error. The executor then
  // tries it first on the step thread that has it (the caller or an inter-op
  // thread), and an inter-op thread hands it to a thread of its own only when
  // it would wait: a tower's dequeue from a full
  // shuffle queue costs no thread hand-offs (two wake-ups of sleeping
  // threads, hundreds of microseconds each on a virtual machine). A kernel
  // that ignores may_wait() is never run with it false.
  virtual bool MayBlock() const { return false; }
  // True for a MayBlock kernel that honours may_wait() == false.
  virtual bool CanTryWithoutWaiting() const { return false; }
  // True for kernels that wait for other nodes of the same step (collectives
  // waiting for their peers); implies MayBlock. The executor never leaves work
  // of the step queued behind such a kernel, even with no inter-op pool.
  virtual bool WaitsForPeers() const { return false; }
  // True for kernels whose outputs are the same tensors (or variable
  // references) at every step and whose Compute has no other effect (Const,
  // VariableV2): a plan runs them once when it is built, and its steps read
  // what they made (runtime/plan_builder.h).
  virtual bool OutputsFixed() const { return false; }
  // False for kernels whose work cannot be recorded once and replayed
  // (runtime/step_graph.h): on a device without host memory, a kernel that
  // waits for the device or reads device memory on the host in Compute, or
  // whose launches depend on something other than its inputs' shapes and
  // buffers and its host-memory inputs (a random kernel with a host-side
  // counter). Kernels that may block never are.
  virtual bool Capturable() const { return !MayBlock(); }
  // True for kernels that lend the producers of their inputs where to
  // allocate them (InputAllocator), as TF's scoped allocator does: a gradient
  // bucket's all-reduce (dist/collective_ops.h) has its gradients made end to
  // end in one buffer, which it reduces in place instead of packing them into
  // one and copying the result out. The plan (plan.h's Item::output_sinks)
  // asks only for inputs its producer makes on the same device.
  virtual bool LendsInputBuffers() const { return false; }
  // The allocator input `i`'s producer makes that input with, in the step
  // about to run it, or null for the producer's own. Asked on the producer's
  // thread each time it runs; thread-safe. The allocator must outlive every
  // buffer it hands out, whatever the consumer's lifetime, and serve any
  // size (a request it did not plan for goes to the device's allocator).
  virtual Allocator* InputAllocator(int i) {
    (void)i;
    return nullptr;
  }
  const Node& node() const { return node_; }

 private:
  const Node& node_;
};

}  // namespace tw

// Fail the kernel (construction or compute) with `status` and return.
#define TW_OP_REQUIRES_OK(ctx, expr)  \
  do {                                \
    ::tw::Status _tw_s = (expr);      \
    if (!_tw_s.ok()) {                \
      (ctx)->SetStatus(_tw_s);        \
      return;                         \
    }                                 \
  } while (0)

#define TW_OP_REQUIRES(ctx, cond, status) \
  do {                                    \
    if (!(cond)) {                        \
      (ctx)->SetStatus(status);           \
      return;                             \
    }                                     \
  } while (0)

#endif  // TOWERFLOW_DEVICE_OP_KERNEL_H_
