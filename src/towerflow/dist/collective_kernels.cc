// CPU kernels of ProcessAllReduce and ProcessBroadcast (collective_ops.h):
// pack the input list into one buffer, hand it to the world (world.h), unpack
// the result into the outputs. Without a world, the inputs pass through.
// ProcessAllReduce lends its inputs' producers the slots of one block
// (internal/bucket_buffer.h): once they make its inputs there, the block is
// reduced in place (World::AllReduceInPlace) and the outputs are the inputs.
// Once a layout is fixed, a step whose inputs are not all in the block packs
// them with the layout's gaps: every rank's call is the layout's.
//
// When every rank runs on this host, the block is memory the ranks share
// (World::SharedBucket): each rank sums its share of every rank's block, and
// the outputs view that sum where it is. The kernel holds its last outputs,
// so that no consumer writes into memory every rank reads (a buffer held
// twice is never forwarded), and tells the next round whether anything else
// still reads them (then every rank takes MPI's all-reduce for that round).
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/dist/internal/bucket_buffer.h"
#include "towerflow/dist/register.h"
#include "towerflow/dist/world.h"

namespace tw::dist {
namespace {

// Memory that outlives the kernels handing it out (a tensor of theirs may
// outlive them): their allocators stay reachable, and alive, until the
// process ends.
template <typename A>
A* KeptAllocator() {
  static std::mutex mu;
  static auto* kept = new std::vector<std::unique_ptr<Allocator>>();
  std::lock_guard<std::mutex> lock(mu);
  kept->push_back(std::make_unique<A>());
  return static_cast<A*>(kept->back().get());
}

// A shared bucket's block, for the kernel's BucketLender: its memory once,
// at its size.
class SharedBlockMemory final : public Allocator {
 public:
  std::string Name() const override { return "shared gradient bucket"; }
  void* Allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (bucket_ == nullptr || given_ || bucket_->gradients() == nullptr ||
        bytes != static_cast<size_t>(bucket_->count()) * DataTypeSize(bucket_->dtype())) {
      return nullptr;
    }
    given_ = true;
    return bucket_->gradients();
  }
  void Deallocate(void*, size_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    given_ = false;  // the window itself is the world's
  }
  size_t BytesInUse() const override { return 0; }
  void Set(World::SharedBucket* bucket) {
    std::lock_guard<std::mutex> lock(mu_);
    bucket_ = bucket;
  }

 private:
  std::mutex mu_;
  World::SharedBucket* bucket_ = nullptr;  // guarded by mu_; the world keeps its memory
  bool given_ = false;                     // guarded by mu_
};

// Outputs that view a shared bucket's sum (View); any other request (a deep
// copy of a view uses its allocator, on any thread) is host memory, freed as
// such. Views are never freed: the memory is the world's.
class SumViews final : public Allocator {
 public:
  std::string Name() const override { return "shared gradient bucket's sum"; }
  // A tensor over `at`: the place reaches Allocate through this thread alone.
  StatusOr<Tensor> View(void* at, DataType dtype, const TensorShape& shape) {
    next_on_this_thread_ = at;
    StatusOr<Tensor> view = Tensor::Allocate(this, dtype, shape);
    next_on_this_thread_ = nullptr;
    return view;
  }
  void* Allocate(size_t bytes) override {
    if (void* at = next_on_this_thread_; at != nullptr) {
      next_on_this_thread_ = nullptr;
      std::lock_guard<std::mutex> lock(mu_);
      ++views_[at];
      return at;
    }
    return CpuAllocator()->Allocate(bytes);
  }
  void Deallocate(void* ptr, size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = views_.find(ptr);
      if (it != views_.end()) {
        if (--it->second == 0) views_.erase(it);
        return;
      }
    }
    CpuAllocator()->Deallocate(ptr, bytes);
  }
  size_t BytesInUse() const override { return 0; }

 private:
  static thread_local void* next_on_this_thread_;
  std::mutex mu_;
  std::map<void*, int64_t> views_;  // guarded by mu_: views alive, by place
};
thread_local void* SumViews::next_on_this_thread_ = nullptr;

class ProcessCollectiveOp : public OpKernel {
 public:
  explicit ProcessCollectiveOp(OpKernelConstruction* c, bool reduce) : OpKernel(c), reduce_(reduce) {
    int64_t bucket = 0, num_buckets = 1;
    TW_OP_REQUIRES_OK(c, c->GetAttr("bucket", &bucket));
    TW_OP_REQUIRES_OK(c, c->GetAttr("num_buckets", &num_buckets));
    TW_OP_REQUIRES_OK(c, c->GetAttr("T", &dtype_));
    if (reduce) {
      std::string reduction;
      TW_OP_REQUIRES_OK(c, c->GetAttr("reduction", &reduction));
      if (reduction != "sum" && reduction != "mean") {
        TW_OP_REQUIRES_OK(c, errors::InvalidArgument("reduction '", reduction, "' is not one of sum, mean"));
      }
      mean_ = reduction == "mean";
    } else {
      TW_OP_REQUIRES_OK(c, c->GetAttr("root", &root_));
    }
    tag_.channel = reduce ? Channel::kGradients : Channel::kControl;
    tag_.bucket = static_cast<int>(bucket);
    tag_.num_buckets = static_cast<int>(num_buckets);
    // Lending only pays across processes (alone, the inputs pass through).
    if (reduce && World::Current() != nullptr) {
      lender_ = std::make_unique<internal::BucketLender>(node().name());
      block_memory_ = KeptAllocator<SharedBlockMemory>();
      views_allocator_ = KeptAllocator<SumViews>();
    }
  }

  bool MayBlock() const override { return true; }
  bool WaitsForPeers() const override { return true; }
  bool LendsInputBuffers() const override { return lender_ != nullptr; }
  Allocator* InputAllocator(int i) override { return lender_ != nullptr ? lender_->SlotAllocator(i) : nullptr; }

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    World* world = World::Current();
    if (world == nullptr) {  // one process: its own sum, mean and broadcast
      for (int k = 0; k < n; ++k) ctx->set_output(k, ctx->input(k));
      return;
    }
    CollectiveTag tag = tag_;
    if (reduce_ && lender_ != nullptr && ReducedShared(ctx, *world)) return;
    if (reduce_) {
      const ReduceOp op = mean_ ? ReduceOp::kMean : ReduceOp::kSum;
      const size_t elem = DataTypeSize(dtype_);
      std::vector<size_t> sizes(static_cast<size_t>(n)), offsets;
      size_t total = 0;
      bool laid_out = false;
      if (lender_ != nullptr) {
        std::vector<const Tensor*> inputs(static_cast<size_t>(n));
        for (int k = 0; k < n; ++k) {
          inputs[static_cast<size_t>(k)] = &ctx->input(k);
          sizes[static_cast<size_t>(k)] = ctx->input(k).TotalBytes();
        }
        // Both as of the steps before this one: the layout is every rank's,
        // the block and what is in it this rank's.
        internal::BucketLender::InPlace in_place = lender_->Contiguous(inputs);
        laid_out = lender_->Layout(sizes, &offsets, &total);
        lender_->Observe(sizes, elem, ctx->device()->allocator());
        if (in_place.data != nullptr) {
          tag.what = StrCat(node().name(), " (", n, " tensors, ", total, " bytes, in place)");
          Status s = world->AllReduceInPlace(tag, dtype_, in_place.data, in_place.count, op, in_place.keep);
          if (!s.ok()) {
            lender_->Failed();
            TW_OP_REQUIRES_OK(ctx, s);
          }
          for (int k = 0; k < n; ++k) ctx->set_output(k, ctx->input(k));
          return;
        }
      }
      // Packed; once a layout is fixed, with its gaps.
      std::vector<World::Piece> pieces;
      size_t end = 0;
      TW_OP_REQUIRES_OK(ctx, Pack(ctx, laid_out ? &offsets : nullptr, &pieces, &end));
      tag.what = StrCat(node().name(), " (", n, " tensors, ", end, " bytes)");
      TW_OP_REQUIRES_OK(ctx, world->AllReduce(tag, dtype_, pieces, op));
      return;
    }
    int64_t total = 0;
    for (int k = 0; k < n; ++k) total += static_cast<int64_t>(ctx->input(k).TotalBytes());
    std::vector<char> buffer(static_cast<size_t>(total));
    size_t offset = 0;
    for (int k = 0; k < n; ++k) {
      const Tensor& in = ctx->input(k);
      std::memcpy(buffer.data() + offset, in.raw_data(), in.TotalBytes());
      offset += in.TotalBytes();
    }
    tag.what = StrCat(node().name(), " (", n, " tensors, ", buffer.size(), " bytes)");
    TW_OP_REQUIRES_OK(ctx, world->Broadcast(tag, buffer.data(), total, static_cast<int>(root_)));
    offset = 0;
    for (int k = 0; k < n; ++k) {
      Tensor* out = nullptr;
      TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(k, ctx->input(k).shape(), &out));
      std::memcpy(out->raw_data(), buffer.data() + offset, out->TotalBytes());
      offset += out->TotalBytes();
    }
  }

 private:
  // The inputs as the pieces of one all-reduce, each output over its input's
  // buffer where this op holds the only reference (the world reads every
  // input before it writes any output). With `offsets` (a layout), input k
  // at its offset and the gaps as pieces without data, so that this rank's
  // call has the length and the element places of the others' (which may be
  // in place); else end to end. `end`: the call's bytes.
  Status Pack(OpKernelContext* ctx, const std::vector<size_t>* offsets, std::vector<World::Piece>* pieces,
              size_t* end) {
    const size_t elem = DataTypeSize(dtype_);
    *end = 0;
    for (int k = 0; k < ctx->num_inputs(); ++k) {
      const size_t at = offsets != nullptr ? (*offsets)[static_cast<size_t>(k)] : *end;
      if (at > *end) pieces->push_back({nullptr, nullptr, static_cast<int64_t>((at - *end) / elem)});
      Tensor* out = nullptr;
      TW_RETURN_IF_ERROR(ctx->forward_input_or_allocate_output({k}, k, ctx->input(k).shape(), &out));
      pieces->push_back({ctx->input(k).raw_data(), out->raw_data(), out->NumElements()});
      *end = at + out->TotalBytes();
    }
    return Status::OK();
  }

  // The round of a shared bucket (every rank on this host); false, nothing
  // done, where the bucket is not shared (the caller reduces over MPI; every
  // rank decides alike, from the inputs' sizes and the world). Any error is
  // set on `ctx`.
  bool ReducedShared(OpKernelContext* ctx, World& world) {
    std::lock_guard<std::mutex> lock(mu_);
    if (shared_asked_ && shared_ == nullptr) return false;
    const int n = ctx->num_inputs();
    const size_t elem = DataTypeSize(dtype_);
    std::vector<size_t> sizes(static_cast<size_t>(n)), offsets;
    std::vector<const Tensor*> inputs(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      inputs[static_cast<size_t>(k)] = &ctx->input(k);
      sizes[static_cast<size_t>(k)] = ctx->input(k).TotalBytes();
    }
    const size_t total = internal::BucketLender::LayoutOf(sizes, &offsets);
    if (!shared_asked_) {  // the first run, on every rank
      shared_asked_ = true;
      if (elem > 0 && total % elem == 0) shared_ = world.NewSharedBucket(dtype_, static_cast<int64_t>(total / elem));
      block_memory_->Set(shared_.get());
    }
    if (shared_ == nullptr || static_cast<size_t>(shared_->count()) * elem != total) return false;
    internal::BucketLender::InPlace in_place = lender_->Contiguous(inputs);
    const bool in_block = in_place.data != nullptr && in_place.data == shared_->gradients();
    // Elsewhere: packed by the layout, gaps and all, into outputs of its own.
    std::vector<World::Piece> pieces;
    size_t end = 0;
    if (!in_block) {
      if (Status s = Pack(ctx, &offsets, &pieces, &end); !s.ok()) {
        ctx->SetStatus(s);
        return true;
      }
    }
    // The sum is free when only this kernel holds its last outputs.
    bool sum_free = true;
    for (const Tensor& view : views_) {
      const std::shared_ptr<TensorBuffer> buffer = view.buffer();  // counted through a copy (see Contiguous)
      sum_free = sum_free && (buffer == nullptr || buffer.use_count() == 2);
    }
    CollectiveTag tag = tag_;
    tag.what = StrCat(node().name(), " (", n, " tensors, ", total, " bytes, ", in_block ? "shared" : "packed", ")");
    StatusOr<bool> summed = world.ReduceShared(tag, *shared_, in_block, sum_free,
                                               pieces, mean_ ? ReduceOp::kMean : ReduceOp::kSum);
    if (!summed.ok()) {
      if (in_block) lender_->Failed();
      ctx->SetStatus(summed.status());
      return true;
    }
    // A bucket whose memory some rank could not make is not shared again (the
    // first round told every rank alike): its block is this rank's own.
    if (!shared_->usable()) {
      block_memory_->Set(nullptr);
      shared_.reset();
    }
    lender_->Observe(sizes, elem, ctx->device()->allocator(), shared_ != nullptr ? block_memory_ : nullptr);
    if (*summed) {
      views_.clear();
      char* sum = static_cast<char*>(const_cast<void*>(shared_->sum()));
      for (int k = 0; k < n; ++k) {
        auto view = views_allocator_->View(sum + offsets[static_cast<size_t>(k)], dtype_, ctx->input(k).shape());
        if (!view.ok()) {
          ctx->SetStatus(view.status());
          return true;
        }
        views_.push_back(*view);
        ctx->set_output(k, *view);
      }
    } else if (in_block) {
      for (int k = 0; k < n; ++k) ctx->set_output(k, ctx->input(k));  // reduced in place by MPI
    }
    return true;
  }

  const bool reduce_;
  bool mean_ = false;
  int64_t root_ = 0;
  DataType dtype_ = kFloat32;
  CollectiveTag tag_;
  std::unique_ptr<internal::BucketLender> lender_;  // ProcessAllReduce in a multi-process job
  SharedBlockMemory* block_memory_ = nullptr;       // kept beyond the kernel (KeptAllocator)
  SumViews* views_allocator_ = nullptr;             // kept beyond the kernel
  std::mutex mu_;
  bool shared_asked_ = false;                         // guarded by mu_
  std::unique_ptr<World::SharedBucket> shared_;       // guarded by mu_; null: not shared
  std::vector<Tensor> views_;                         // guarded by mu_: the last shared round's outputs
};

class ProcessAllReduceOp final : public ProcessCollectiveOp {
 public:
  explicit ProcessAllReduceOp(OpKernelConstruction* c) : ProcessCollectiveOp(c, /*reduce=*/true) {}
};

class ProcessBroadcastOp final : public ProcessCollectiveOp {
 public:
  explicit ProcessBroadcastOp(OpKernelConstruction* c) : ProcessCollectiveOp(c, /*reduce=*/false) {}
};

// The job's process count, made once per plan (OutputsFixed).
class ProcessSizeOp final : public OpKernel {
 public:
  explicit ProcessSizeOp(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, c->GetAttr("T", &dtype_)); }
  bool IsExpensive() const override { return false; }
  bool OutputsFixed() const override { return true; }
  void Compute(OpKernelContext* ctx) override {
    const World* world = World::Current();
    const int64_t n = world != nullptr ? world->size() : 1;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    switch (dtype_) {
      case kFloat32:
        out->data<float>()[0] = static_cast<float>(n);
        return;
      case kFloat64:
        out->data<double>()[0] = static_cast<double>(n);
        return;
      case kInt32:
        out->data<int32_t>()[0] = static_cast<int32_t>(n);
        return;
      case kInt64:
        out->data<int64_t>()[0] = n;
        return;
      default:
        ctx->SetStatus(errors::InvalidArgument("ProcessSize: no ", DataTypeName(dtype_)));
    }
  }

 private:
  DataType dtype_ = kFloat32;
};

}  // namespace

void RegisterProcessCollectiveKernels(KernelRegistry& kernels) {
  kernels.RegisterUntyped<ProcessAllReduceOp>("ProcessAllReduce", kDeviceCpu);
  kernels.RegisterUntyped<ProcessBroadcastOp>("ProcessBroadcast", kDeviceCpu);
  kernels.RegisterUntyped<ProcessSizeOp>("ProcessSize", kDeviceCpu);
}

}  // namespace tw::dist
