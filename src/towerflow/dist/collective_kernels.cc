// CPU kernels of ProcessAllReduce and ProcessBroadcast (collective_ops.h):
// pack the input list into one buffer, hand it to the world (world.h), unpack
// the result into the outputs. Without a world, the inputs pass through.
// ProcessAllReduce lends its inputs' producers the slots of one block
// (internal/bucket_buffer.h): once they make its inputs there, the block is
// reduced in place (World::AllReduceInPlace) and the outputs are the inputs.
// Once a layout is fixed, a step whose inputs are not all in the block packs
// them with the layout's gaps: every rank's call is the layout's.
#include <cstring>
#include <memory>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/dist/internal/bucket_buffer.h"
#include "towerflow/dist/register.h"
#include "towerflow/dist/world.h"

namespace tw::dist {
namespace {

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
    if (reduce && World::Current() != nullptr) lender_ = std::make_unique<internal::BucketLender>(node().name());
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
      // Packed: each output over its input's buffer where this op holds the
      // only reference (the world reads every input before it writes any
      // output). Once a layout is fixed, with its gaps, so that this rank's
      // call has the length and the element places of the others' (which
      // may be in place).
      std::vector<World::Piece> pieces;
      size_t end = 0;
      for (int k = 0; k < n; ++k) {
        if (laid_out && offsets[static_cast<size_t>(k)] > end) {
          pieces.push_back({nullptr, nullptr, static_cast<int64_t>((offsets[static_cast<size_t>(k)] - end) / elem)});
        }
        Tensor* out = nullptr;
        TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({k}, k, ctx->input(k).shape(), &out));
        pieces.push_back({ctx->input(k).raw_data(), out->raw_data(), out->NumElements()});
        end = (laid_out ? offsets[static_cast<size_t>(k)] : end) + out->TotalBytes();
      }
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
  const bool reduce_;
  bool mean_ = false;
  int64_t root_ = 0;
  DataType dtype_ = kFloat32;
  CollectiveTag tag_;
  std::unique_ptr<internal::BucketLender> lender_;  // ProcessAllReduce in a multi-process job
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
