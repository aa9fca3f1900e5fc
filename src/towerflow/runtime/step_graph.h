// Step graphs: a GPU's kernels of a step recorded once and replayed, so that
// the host launches the step's GPU work once instead of kernel by kernel (as
// PyTorch's torch.cuda.graphs and TF's XLA do for a static step).
//
// The plan builder (AddStepGraphs, step_graph_regions.h) gives the kernels of
// one GPU that can be recorded to one plan item, whose kernel is a
// StepGraphKernel. Each step the kernel runs its members in an order their
// edges allow, on the launcher thread of the GPU, reading the item's inputs
// and their own outputs (each kept until its last reader has run, unless
// the item outputs it), and returns the outputs other items read. Its runs
// go through states:
//   - warm-up: the members run as kernels, through an allocator that notes
//     the sizes they ask for and when each is freed. Two runs in a row with
//     the same requests (the plan's shapes are settled, lazy library set-up
//     is done) arm a capture;
//   - capture: that sequence of requests is laid out in one block, buffers
//     that are never live at once sharing bytes (CaptureMemory),
//     the inputs other than the plan's constants and variables get buffers
//     of the graph's own (each step copies its inputs there, on the device),
//     and the members run once more over them: on a device that can capture
//     (a CUDA GPU) between BeginCapture and EndCapture, recorded not run, and
//     the graph is then launched; on a fake GPU they run, noting the order;
//   - replay: the inputs are copied in, and the graph is launched once (a
//     fake GPU re-runs the recorded members over the same buffers). The
//     outputs are the same tensors step after step.
// A replay is only valid over what was recorded, so each step checks first:
//   - an input's shape differs (a smaller last batch): this step runs its
//     members one by one; three steps in a row turn the graph off;
//   - a variable's (or constant's) buffer moved (a restore, an Assign of a
//     new shape): the graph is recorded again;
//   - an output of the last step is still held outside the plan (a
//     concurrent step reading it, a queue that kept it): this step runs one
//     by one, so nothing held is overwritten.
// What cannot be recorded (the capture fails, the kernels allocate
// differently run after run, a string input) turns the graph off with one
// log line naming why; its members then run one by one, as without it.
//
// Random kernels inside stay random: Dropout's GPU kernel reads its Philox
// offset from device memory and advances it in the graph, so each replay
// draws new masks (nn_cuda.cu).
#ifndef TOWERFLOW_RUNTIME_STEP_GRAPH_H_
#define TOWERFLOW_RUNTIME_STEP_GRAPH_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/device/op_kernel.h"
#include "towerflow/runtime/capture_memory.h"

namespace tw {


// What a step graph runs: its members and where their inputs come from.
struct StepGraphSpec {
  struct Source {
    int input = -1;  // the region item's input, or
    int slot = -1;   // an output of an earlier member
    bool is_ref = false;  // the member takes the variable itself
  };
  struct Member {
    const Node* node = nullptr;
    OpKernel* kernel = nullptr;
    const KernelDef* kernel_def = nullptr;  // null for a fused or grouped item
    int num_outputs = -1;                   // OpKernelContext::Params::num_outputs
    int first_slot = 0;                     // its outputs are slots [first_slot, ...)
    int outputs = 0;
    std::vector<Source> inputs;
  };
  Device* device = nullptr;
  std::vector<Member> members;
  int num_slots = 0;
  std::vector<int> output_slots;  // the item's output o is slot output_slots[o]
  // Per item input: a plan constant (a Const's tensor, a variable): read in
  // place, its buffer checked before each replay; else copied to a buffer of
  // the graph's.
  std::vector<char> input_constant;
  std::vector<char> input_host_memory;  // read on the host by its kernel: a constant
};

struct StepGraphStats {
  int members = 0;
  bool device_graph = false;  // recorded by the device (a CUDA graph)
  int64_t eager_runs = 0;     // steps that ran the members one by one
  int64_t captures = 0;
  int64_t replays = 0;
  int64_t recaptures = 0;     // captures after the first (a buffer moved)
  int64_t shape_changes = 0;  // steps whose inputs had other shapes
  int64_t held_outputs = 0;   // steps run one by one because an output was held
  int64_t graph_bytes = 0;    // the graph's buffers (kernels' and inputs')
  int64_t requested_bytes = 0;  // the same with one buffer per kernel's request
  bool off = false;
  std::string off_reason;
};

class StepGraphKernel : public OpKernel {
 public:
  static constexpr int kWarmupRuns = 2;     // runs with equal sizes before a capture
  static constexpr int kMaxShapeChanges = 3;  // in a row: the graph goes off

  StepGraphKernel(OpKernelConstruction* c, StepGraphSpec spec);
  ~StepGraphKernel() override;
  void Compute(OpKernelContext* ctx) override;
  StepGraphStats stats() const;
  // "GPU:0 step graph (31 kernels)"
  const std::string& name() const { return name_; }

 private:
  // Runs the members over `inputs`, allocating from `allocator`, into `slots`.
  Status RunMembers(OpKernelContext* ctx, const std::vector<TensorValue>& inputs, Allocator* allocator,
                    std::vector<TensorValue>* slots) const;
  void RunEager(OpKernelContext* ctx);
  // Records the members (and runs this step's work); false when the graph
  // went off instead and the step still has to run.
  bool Capture(OpKernelContext* ctx);
  // Replays the graph; false when it failed to run and went off instead,
  // and the step still has to run.
  bool Replay(OpKernelContext* ctx);
  // Whether a replay can serve this step, or the check that failed (`why`).
  enum class Check { kReplay, kShapes, kMoved, kHeld };
  Check CheckReplay(OpKernelContext* ctx, std::string* why) const;
  Status CopyInputs(OpKernelContext* ctx);
  void SetOutputs(OpKernelContext* ctx, const std::vector<TensorValue>& slots) const;
  void DropCapture();
  void TurnOff(const std::string& why);

  const StepGraphSpec spec_;
  const std::string name_;
  // Per member: the slots no later member reads and the item does not
  // output, dropped once it has run (their buffers free for later requests).
  std::vector<std::vector<int>> done_after_;
  mutable std::mutex mu_;  // one run at a time; guards everything below
  std::vector<TensorValue> slots_;
  std::vector<CaptureRequest> requests_;  // the last warm-up run's
  int same_sizes_ = 0;                    // warm-up runs in a row with requests_
  bool armed_ = false;
  // The capture: its memory, device graph, input buffers and what it read.
  CaptureMemory* memory_ = nullptr;
  std::unique_ptr<CapturedWork> work_;
  std::vector<TensorValue> graph_inputs_;
  std::vector<TensorShape> input_shapes_;
  std::vector<const void*> input_buffers_;  // constants' buffers at the capture
  // Per buffer of the graph's memory that slots hold: a slot holding it,
  // and how many slots do (more owners: it is held outside).
  std::vector<std::pair<int, long>> expected_uses_;
  int shape_changes_in_a_row_ = 0;
  StepGraphStats stats_;
};

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_STEP_GRAPH_H_
