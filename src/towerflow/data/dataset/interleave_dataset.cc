// Interleave (and FlatMap, and TFRecord over many files): each input element
// opens a dataset (the user's DatasetFn); cycle_length of them are read in
// turn, block_length elements from each, an ended one replaced by the next
// input element's when its turn comes again (tf.data's order). With
// num_parallel_calls each open dataset is read ahead on a thread of its own
// (RunAhead); deterministic=false then lets the cycle skip a dataset that
// has nothing ready. The position saves each open dataset's input element
// (to reopen it) and its own position.
#include <algorithm>

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/run_ahead.h"

namespace tw::data {
namespace {

using DatasetPtr = std::shared_ptr<const DatasetBase>;

class InterleaveDataset final : public UnaryDataset {
 public:
  InterleaveDataset(DatasetPtr input, DatasetFn fn, InterleaveOptions options, std::string name, ElementSpec spec)
      : UnaryDataset(std::move(name), std::move(spec), input), fn_(std::move(fn)), options_(options) {}

  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(const std::shared_ptr<PipelineContext>& ctx) const override {
    auto it = std::make_unique<Iter>(*this, ctx);
    TW_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(ctx));
    it->slots_.resize(static_cast<size_t>(options_.cycle_length));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  struct Slot {
    Element source;  // the input element that opened it
    int64_t source_index = -1;
    std::unique_ptr<IteratorBase> it;
    std::unique_ptr<RunAhead> run_ahead;  // parallel: reads `it` ahead
    bool active() const { return it != nullptr; }
    void Close() {
      run_ahead.reset();  // joins its worker before `it` goes
      it.reset();
      source.clear();
    }
  };

  class Iter final : public DatasetIterator<InterleaveDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    ~Iter() override {
      for (Slot& s : slots_) s.Close();
    }

    Status GetNext(Element* out, bool* end) override {
      const InterleaveOptions& o = dataset().options_;
      const size_t cycle = slots_.size();
      size_t skipped = 0;  // slots passed over without a ready element (non-deterministic)
      while (true) {
        if (ctx()->cancelled.load(std::memory_order_relaxed)) return CancelledError();
        Slot& slot = slots_[current_];
        if (!slot.active()) {
          if (input_ended_) {
            if (std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.active(); })) {
              *end = true;
              return Status::OK();
            }
            Advance(cycle);
            continue;
          }
          Element e;
          bool input_end = false;
          TW_RETURN_IF_ERROR(input_->GetNext(&e, &input_end));
          if (input_end) {
            input_ended_ = true;
            continue;
          }
          TW_RETURN_IF_ERROR(Open(&slot, std::move(e), inputs_++));
          continue;
        }
        bool slot_end = false;
        if (slot.run_ahead && !o.deterministic && skipped < cycle) {
          bool ready = false;
          TW_RETURN_IF_ERROR(slot.run_ahead->TryGetNext(out, &slot_end, &ready));
          if (!ready) {
            ++skipped;
            Advance(cycle);
            continue;
          }
        } else if (slot.run_ahead) {
          TW_RETURN_IF_ERROR(slot.run_ahead->GetNext(out, &slot_end));
        } else {
          TW_RETURN_IF_ERROR(slot.it->GetNext(out, &slot_end));
        }
        if (slot_end) {
          slot.Close();
          Advance(cycle);
          continue;
        }
        if (++block_index_ >= o.block_length) Advance(cycle);
        *end = false;
        return Status::OK();
      }
    }

    Status Save(StateWriter& w) const override {
      w.WriteInt("current", static_cast<int64_t>(current_));
      w.WriteInt("block_index", block_index_);
      w.WriteInt("input_ended", input_ended_ ? 1 : 0);
      w.WriteInt("inputs", inputs_);
      for (size_t i = 0; i < slots_.size(); ++i) {
        const Slot& s = slots_[i];
        const std::string key = "slot_" + std::to_string(i);
        w.WriteInt(key + "_active", s.active() ? 1 : 0);
        if (!s.active()) continue;
        w.WriteElement(key + "_source", s.source);
        w.WriteInt(key + "_index", s.source_index);
        StateWriter child = w.Child(key);
        TW_RETURN_IF_ERROR(s.run_ahead ? s.run_ahead->Save(child) : s.it->Save(child));
      }
      return SaveInput(*input_, w);
    }

    Status Restore(const StateReader& r) override {
      int64_t current = 0, ended = 0;
      TW_RETURN_IF_ERROR(r.ReadInt("current", &current));
      TW_RETURN_IF_ERROR(r.ReadInt("block_index", &block_index_));
      TW_RETURN_IF_ERROR(r.ReadInt("input_ended", &ended));
      TW_RETURN_IF_ERROR(r.ReadInt("inputs", &inputs_));
      if (current < 0 || current >= static_cast<int64_t>(slots_.size())) {
        return errors::DataLoss(name(), ": saved cycle position ", current, " is outside a cycle of ", slots_.size());
      }
      current_ = static_cast<size_t>(current);
      input_ended_ = ended != 0;
      for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        s.Close();
        const std::string key = "slot_" + std::to_string(i);
        int64_t active = 0;
        TW_RETURN_IF_ERROR(r.ReadInt(key + "_active", &active));
        if (active == 0) continue;
        Element source;
        int64_t index = 0;
        TW_RETURN_IF_ERROR(r.ReadElement(key + "_source", &source));
        TW_RETURN_IF_ERROR(r.ReadInt(key + "_index", &index));
        TW_RETURN_IF_ERROR(Open(&s, std::move(source), index));
        const StateReader child = r.Child(key);
        TW_RETURN_IF_ERROR(s.run_ahead ? s.run_ahead->Restore(child) : s.it->Restore(child));
      }
      return RestoreInput(*input_, r);
    }

    std::unique_ptr<IteratorBase> input_;
    std::vector<Slot> slots_;

   private:
    void Advance(size_t cycle) {
      block_index_ = 0;
      current_ = (current_ + 1) % cycle;
    }

    Status Open(Slot* slot, Element source, int64_t index) {
      auto made = dataset().fn_(source);
      if (!made.ok()) {
        return made.status().WithContext(name() + ": the dataset function failed on input element " +
                                         std::to_string(index));
      }
      const Dataset& d = *made;
      if (!d.ok()) {
        return d.status().WithContext(name() + ": the dataset of input element " + std::to_string(index));
      }
      bool compatible = d.element_spec().dtypes == dataset().spec().dtypes;
      for (size_t c = 0; compatible && c < d.element_spec().size(); ++c) {
        compatible = d.element_spec().shapes[c].IsCompatibleWith(dataset().spec().shapes[c]);
      }
      if (!compatible) {
        return errors::InvalidArgument(name(), ": the dataset of input element ", index, " has elements ",
                                       d.element_spec().DebugString(), ", expected ", dataset().spec().DebugString());
      }
      TW_ASSIGN_OR_RETURN(slot->it, d.impl()->MakeIterator(ctx()));
      slot->source = std::move(source);
      slot->source_index = index;
      const InterleaveOptions& o = dataset().options_;
      if (o.num_parallel_calls != 0) {
        slot->run_ahead = std::make_unique<RunAhead>(
            ctx(), slot->it.get(), nullptr,
            RunAhead::Options{.stage = name(), .workers = 1, .buffer = std::max<int64_t>(2, 2 * o.block_length)});
      }
      return Status::OK();
    }

    size_t current_ = 0;
    int64_t block_index_ = 0;
    int64_t inputs_ = 0;  // input elements taken
    bool input_ended_ = false;
  };

  DatasetFn fn_;
  InterleaveOptions options_;
};

}  // namespace

StatusOr<DatasetPtr> MakeInterleaveDataset(DatasetPtr input, const DatasetFn& fn, const InterleaveOptions& options,
                                           const std::string& name, const ElementSpec* known) {
  if (!fn) return errors::InvalidArgument("a null dataset function");
  InterleaveOptions o = options;
  if (o.cycle_length == kAutotune) o.cycle_length = PipelineCores();
  if (o.cycle_length < 1) return errors::InvalidArgument("cycle_length must be >= 1 or kAutotune, got ", o.cycle_length);
  if (o.block_length < 1) return errors::InvalidArgument("block_length must be >= 1, got ", o.block_length);
  if (o.num_parallel_calls == kAutotune) o.num_parallel_calls = 1;
  if (o.num_parallel_calls < 0) {
    return errors::InvalidArgument("num_parallel_calls must be >= 0 or kAutotune, got ", o.num_parallel_calls);
  }
  // The element spec comes from the function's dataset, known only once an
  // input element exists unless the caller knows it (TFRecord): found by
  // opening the first input element's dataset now.
  ElementSpec spec;
  if (known != nullptr) {
    spec = *known;
  } else {
    auto ctx = std::make_shared<PipelineContext>();
    ctx->probe = true;  // the input's first real iteration stays iteration 0
    TW_ASSIGN_OR_RETURN(auto probe, input->MakeIterator(ctx));
    Element first;
    bool end = false;
    TW_RETURN_IF_ERROR(probe->GetNext(&first, &end));
    if (end) {
      return errors::InvalidArgument(
          "the input is empty, so the element spec of the function's datasets cannot be found");
    }
    auto made = fn(first);
    if (!made.ok()) return made.status().WithContext("the dataset function failed on input element 0");
    if (!made->ok()) return made->status().WithContext("the dataset of input element 0");
    spec = made->element_spec();
    // One element's datasets say nothing of the others' dims: keep the ranks.
    for (PartialShape& s : spec.shapes) {
      if (s.known_rank()) s = PartialShape(std::vector<int64_t>(static_cast<size_t>(s.rank()), -1));
    }
    ctx->Cancel();
  }
  return DatasetPtr(std::make_shared<InterleaveDataset>(std::move(input), fn, o, name, std::move(spec)));
}

}  // namespace tw::data
