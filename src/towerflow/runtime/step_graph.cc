#include "towerflow/runtime/step_graph.h"

#include <map>
#include <utility>

#include "towerflow/core/logging.h"
#include "towerflow/runtime/capture_memory.h"

namespace tw {

StepGraphKernel::StepGraphKernel(OpKernelConstruction* c, StepGraphSpec spec)
    : OpKernel(c),
      spec_(std::move(spec)),
      name_(StrCat(spec_.device->short_name(), " step graph (", spec_.members.size(), " kernels)")) {
  stats_.members = static_cast<int>(spec_.members.size());
  stats_.device_graph = spec_.device->CanCaptureWork();
  // Each slot's last reader; -2 for the item's outputs (kept).
  std::vector<int> last(static_cast<size_t>(spec_.num_slots), -1);
  for (size_t m = 0; m < spec_.members.size(); ++m) {
    for (const StepGraphSpec::Source& src : spec_.members[m].inputs) {
      if (src.slot >= 0) last[static_cast<size_t>(src.slot)] = static_cast<int>(m);
    }
  }
  for (int slot : spec_.output_slots) last[static_cast<size_t>(slot)] = -2;
  done_after_.assign(spec_.members.size(), {});
  for (size_t m = 0; m < spec_.members.size(); ++m) {
    const StepGraphSpec::Member& member = spec_.members[m];
    for (int slot = member.first_slot; slot < member.first_slot + member.outputs; ++slot) {
      const int reader = last[static_cast<size_t>(slot)];
      if (reader == -2) continue;
      // Read by nothing: dropped once its producer has run.
      done_after_[reader >= 0 ? static_cast<size_t>(reader) : m].push_back(slot);
    }
  }
}

StepGraphKernel::~StepGraphKernel() { DropCapture(); }

StepGraphStats StepGraphKernel::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Status StepGraphKernel::RunMembers(OpKernelContext* ctx, const std::vector<TensorValue>& inputs,
                                   Allocator* allocator, std::vector<TensorValue>* slots) const {
  slots->assign(static_cast<size_t>(spec_.num_slots), TensorValue());
  std::vector<TensorValue> in;
  for (size_t k = 0; k < spec_.members.size(); ++k) {
    const StepGraphSpec::Member& m = spec_.members[k];
    in.assign(m.inputs.size(), TensorValue());
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const StepGraphSpec::Source& src = m.inputs[i];
      if (src.input >= 0) {
        in[i] = inputs[static_cast<size_t>(src.input)];
        continue;
      }
      const TensorValue& v = (*slots)[static_cast<size_t>(src.slot)];
      if (!v.is_ref() || src.is_ref) {
        in[i] = v;
        continue;
      }
      // A variable passed on by an earlier member (an Apply* output), read
      // by value: its tensor now, under its lock.
      std::lock_guard<std::mutex> lock(*v.ref_mu);
      in[i].value = *v.ref;
    }
    OpKernelContext::Params params = ctx->params();
    params.node = m.node;
    params.inputs = &in;
    params.num_outputs = m.num_outputs;
    params.host_memory_outputs =
        m.kernel_def != nullptr && !m.kernel_def->host_memory_outputs.empty() ? &m.kernel_def->host_memory_outputs
                                                                               : nullptr;
    params.allocator = allocator;
    params.output_allocators = nullptr;  // a region lends nothing (plan.h's AddOutputSinks)
    OpKernelContext mc(params);
    m.kernel->Compute(&mc);
    if (!mc.status().ok()) return mc.status().WithContext("node " + m.node->DebugName() + " in the " + name_);
    for (int o = 0; o < mc.num_outputs(); ++o) {
      TensorValue& out = mc.output(o);
      if (!out.is_ref() && !out.value.IsInitialized()) {
        return errors::Internal("kernel did not set output ", o, " of node ", m.node->DebugName(), " in the ", name_);
      }
      (*slots)[static_cast<size_t>(m.first_slot + o)] = std::move(out);
    }
    in.clear();
    for (int slot : done_after_[k]) (*slots)[static_cast<size_t>(slot)] = TensorValue();
  }
  return Status::OK();
}

void StepGraphKernel::SetOutputs(OpKernelContext* ctx, const std::vector<TensorValue>& slots) const {
  for (size_t o = 0; o < spec_.output_slots.size(); ++o) {
    ctx->output(static_cast<int>(o)) = slots[static_cast<size_t>(spec_.output_slots[o])];
  }
}

void StepGraphKernel::Compute(OpKernelContext* ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stats_.off && memory_ != nullptr) {
    std::string why;
    switch (CheckReplay(ctx, &why)) {
      case Check::kReplay:
        shape_changes_in_a_row_ = 0;
        if (Replay(ctx)) return;
        return RunEager(ctx);  // the graph failed to run and is off
      case Check::kShapes:
        ++stats_.shape_changes;
        if (++shape_changes_in_a_row_ >= kMaxShapeChanges) {
          TurnOff(StrCat("its inputs change shape from step to step (", why, ")"));
        }
        return RunEager(ctx);
      case Check::kHeld:
        ++stats_.held_outputs;
        return RunEager(ctx);
      case Check::kMoved:
        TW_LOG(INFO) << name_ << ": recording again: " << why;
        DropCapture();  // and record it again now, with the requests it had
        break;
    }
  }
  if (!stats_.off && armed_ && Capture(ctx)) return;
  RunEager(ctx);
}

void StepGraphKernel::RunEager(OpKernelContext* ctx) {
  ++stats_.eager_runs;
  // Warm-up runs note what their kernels ask for.
  const bool warm_up = !stats_.off && memory_ == nullptr;
  AllocationRecorder* recorder = warm_up ? AllocationRecorder::Create(ctx->allocator()) : nullptr;
  std::vector<TensorValue> slots;
  Status s = RunMembers(ctx, *ctx->params().inputs, warm_up ? recorder : ctx->allocator(), &slots);
  std::vector<CaptureRequest> requests;
  if (recorder != nullptr) {
    requests = recorder->TakeRequests();
    recorder->Release();
  }
  if (!s.ok()) return ctx->SetStatus(s);
  SetOutputs(ctx, slots);
  if (!warm_up) return;
  // Two runs in a row making the same requests arm the capture.
  if (requests == requests_) {
    ++same_sizes_;
  } else {
    requests_ = std::move(requests);
    same_sizes_ = 1;
  }
  armed_ = same_sizes_ >= kWarmupRuns;
}

bool StepGraphKernel::Capture(OpKernelContext* ctx) {
  Device* device = spec_.device;
  const std::vector<TensorValue>& inputs = *ctx->params().inputs;
  const size_t n = inputs.size();
  graph_inputs_.assign(n, TensorValue());
  input_shapes_.assign(n, TensorShape());
  input_buffers_.assign(n, nullptr);
  int64_t input_bytes = 0;
  for (size_t k = 0; k < n; ++k) {
    const TensorValue& v = inputs[k];
    input_shapes_[k] = v.value.shape();
    if (spec_.input_constant[k] || spec_.input_host_memory[k]) {
      graph_inputs_[k] = v;
      input_buffers_[k] = v.value.raw_data();
      continue;
    }
    if (v.value.dtype() == kString) {
      TurnOff(StrCat("input ", k, " is a string tensor"));
      return false;
    }
    StatusOr<Tensor> t = Tensor::Allocate(device->allocator(), v.value.dtype(), v.value.shape());
    if (!t.ok()) {
      TurnOff("no memory for its input buffers: " + t.status().message());
      return false;
    }
    input_bytes += static_cast<int64_t>(t->TotalBytes());
    graph_inputs_[k].value = std::move(t).value();
  }
  if (Status copied = CopyInputs(ctx); !copied.ok()) {
    TurnOff("copying its inputs failed: " + copied.ToString());
    return false;
  }
  memory_ = CaptureMemory::Create(device->allocator(), requests_);
  if (memory_ == nullptr) {
    TurnOff(StrCat("no memory for its ", requests_.size(), " buffers"));
    return false;
  }
  const bool recapture = stats_.captures > 0;
  if (device->CanCaptureWork()) {
    // Recorded, not run: the graph's launch below runs this step.
    Status s = device->BeginCapture();
    if (s.ok()) {
      memory_->set_strict(true);  // nothing allocated into the graph
      Status ran = RunMembers(ctx, graph_inputs_, memory_, &slots_);
      memory_->set_strict(false);
      StatusOr<std::unique_ptr<CapturedWork>> work = device->EndCapture();
      s = !ran.ok() ? ran : work.status();
      if (s.ok()) work_ = std::move(work).value();
    }
    if ((s.ok() && !memory_->exact()) || (!s.ok() && !recapture && memory_->mismatch())) {
      s = errors::FailedPrecondition("its kernels allocate differently from run to run");
    }
    if (!s.ok()) {
      if (recapture && memory_->mismatch()) {
        // A variable came back with another shape: warm up again.
        DropCapture();
        armed_ = false;
        same_sizes_ = 0;
      } else {
        TurnOff("recording it failed: " + s.ToString());
      }
      return false;
    }
    if (Status launched = work_->Launch(); !launched.ok()) {
      // Nothing of this step ran: it runs kernel by kernel, as every later
      // one (a graph that failed once would fail each step).
      TurnOff("launching it failed: " + launched.ToString());
      return false;
    }
  } else {
    // A device that cannot record runs the members now, over the graph's
    // buffers; replays run them again over the same ones.
    Status ran = RunMembers(ctx, graph_inputs_, memory_, &slots_);
    if (!ran.ok()) {
      DropCapture();
      ctx->SetStatus(ran);
      return true;
    }
    if (!memory_->exact()) {
      // This step's outputs are right; the next steps warm up again.
      const bool moved_shapes = recapture && memory_->mismatch();
      SetOutputs(ctx, slots_);
      DropCapture();
      armed_ = false;
      same_sizes_ = 0;
      if (!moved_shapes) TurnOff("its kernels allocate differently from run to run");
      return true;
    }
  }
  ++stats_.captures;
  if (recapture) ++stats_.recaptures;
  stats_.graph_bytes = input_bytes + static_cast<int64_t>(memory_->bytes());
  stats_.requested_bytes = input_bytes + static_cast<int64_t>(memory_->requested_bytes());
  // Only the item's outputs are still in slots_: the members' other outputs
  // were dropped after their last reader, and their bytes may be shared with
  // later requests. That relies on no recordable kernel keeping a tensor of
  // its step past its Compute (none does: a kernel's state is its
  // attributes, caches of its own, and variables, which are read by
  // reference from the plan's constants); on a fake GPU a kept one would
  // show as a request over held bytes, and turn the graph off.
  // The buffers the next replay writes that slots hold, and by how many
  // holders: the graph's memory, and the input buffers it copies each step
  // into (a pass-through member, such as Identity or Reshape, outputs one),
  // each also held by graph_inputs_. One held by anything else (a queue, a
  // fetch still alive) makes the step run kernel by kernel.
  std::map<const TensorBuffer*, long> input_holders;  // the inputs CopyInputs writes
  for (size_t k = 0; k < graph_inputs_.size(); ++k) {
    const Tensor& in = graph_inputs_[k].value;
    if (spec_.input_constant[k] || spec_.input_host_memory[k] || in.buffer() == nullptr) continue;
    ++input_holders[in.buffer().get()];
  }
  std::map<const TensorBuffer*, std::pair<int, long>> uses;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const TensorValue& v = slots_[i];
    if (v.is_ref() || !v.value.buffer()) continue;
    const auto input = input_holders.find(v.value.buffer().get());
    if (input == input_holders.end() && !memory_->Owns(v.value.raw_data())) continue;
    const long others = input != input_holders.end() ? input->second : 0;
    auto [it, added] = uses.emplace(v.value.buffer().get(), std::make_pair(static_cast<int>(i), others));
    ++it->second.second;
  }
  expected_uses_.clear();
  for (const auto& [buffer, use] : uses) expected_uses_.push_back(use);
  SetOutputs(ctx, slots_);
  return true;
}

StepGraphKernel::Check StepGraphKernel::CheckReplay(OpKernelContext* ctx, std::string* why) const {
  const std::vector<TensorValue>& inputs = *ctx->params().inputs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& v = inputs[k].value;
    if (v.shape() != input_shapes_[k]) {
      *why = StrCat("input ", k, " is ", v.shape().ToString(), ", was ", input_shapes_[k].ToString());
      return Check::kShapes;
    }
    if ((spec_.input_constant[k] || spec_.input_host_memory[k]) && v.raw_data() != input_buffers_[k]) {
      *why = StrCat("the buffer of input ", k, " (a variable or constant) moved");
      return Check::kMoved;
    }
  }
  for (const auto& [slot, count] : expected_uses_) {
    // Counted through a copy: taking a reference is an acquiring update of
    // the count (libstdc++'s acq_rel add), so the last reader's release of
    // the buffer happens before the replay writes it; use_count() alone is
    // a relaxed load, which orders nothing.
    const std::shared_ptr<TensorBuffer> probe = slots_[static_cast<size_t>(slot)].value.buffer();
    if (probe.use_count() != count + 1) return Check::kHeld;
  }
  return Check::kReplay;
}

Status StepGraphKernel::CopyInputs(OpKernelContext* ctx) {
  const std::vector<TensorValue>& inputs = *ctx->params().inputs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (spec_.input_constant[k] || spec_.input_host_memory[k]) continue;
    const Tensor& src = inputs[k].value;
    TW_RETURN_IF_ERROR(
        spec_.device->CopyOnDevice(src.raw_data(), graph_inputs_[k].value.raw_data(), src.TotalBytes()));
  }
  return Status::OK();
}

bool StepGraphKernel::Replay(OpKernelContext* ctx) {
  if (Status copied = CopyInputs(ctx); !copied.ok()) {
    TurnOff("copying its inputs failed: " + copied.ToString());
    return false;
  }
  if (work_ != nullptr) {
    if (Status launched = work_->Launch(); !launched.ok()) {
      // As in Capture: this step and the later ones run kernel by kernel.
      TurnOff("replaying it failed: " + launched.ToString());
      return false;
    }
  } else {
    memory_->Rewind();
    Status s = RunMembers(ctx, graph_inputs_, memory_, &slots_);
    if (!s.ok()) {  // a kernel's own error (its inputs): the step fails, the graph stays
      DropCapture();
      ctx->SetStatus(s.WithContext("replaying the " + name_));
      return true;
    }
    if (!memory_->exact()) {
      SetOutputs(ctx, slots_);
      TurnOff("its kernels allocate differently from run to run");
      return true;
    }
  }
  ++stats_.replays;
  SetOutputs(ctx, slots_);
  return true;
}

void StepGraphKernel::DropCapture() {
  work_.reset();  // waits for its queued replays
  slots_.clear();
  graph_inputs_.clear();
  expected_uses_.clear();
  if (memory_ != nullptr) memory_->Release();
  memory_ = nullptr;
}

void StepGraphKernel::TurnOff(const std::string& why) {
  DropCapture();
  stats_.off = true;
  stats_.off_reason = why;
  TW_LOG(WARNING) << name_ << " off: " << why << "; its kernels run one by one";
}

}  // namespace tw
