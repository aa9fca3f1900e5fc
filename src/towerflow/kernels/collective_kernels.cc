// CPU kernel of CollectiveAllReduce (graph/ops/collective_ops.h).
//
// The participants meet (collective_group.h: all on devices of one type,
// virtual CPUs or fake GPUs, which borrow this kernel); the last to arrive
// allocates the outputs, shared by every participant. Then each participant reduces its
// own 1/N of the elements of the whole list (all tensors laid end to end) into
// them, waits until every slice is done, and leaves with them.
#include <algorithm>
#include <type_traits>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/collective_group.h"
#include "towerflow/kernels/internal/exact_reciprocal.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

using Meeting = CollectiveMeeting;

// Writes elements [begin, end) of the list laid end to end: for each, the sum
// over participants in order (z = x0 + x1, then z + x2, ..., as AddN adds),
// divided by N for the mean (as Div(AddN(...), N) does).
template <typename T>
void ReduceSlice(Meeting& m, bool mean, int64_t begin, int64_t end, ThreadPool* pool) {
  const size_t n = m.arrived.size();
  const T divisor = static_cast<T>(n);
  // A power-of-two count divides as a multiplication, the same bits.
  bool multiply = false;
  if constexpr (std::is_floating_point_v<T>) multiply = internal::ReciprocalIsExact(divisor);
  const T scale = multiply ? static_cast<T>(T(1) / divisor) : T(1);
  int64_t offset = 0;  // of tensor k's first element in the whole list
  for (size_t k = 0; k < m.outputs.size() && offset < end; ++k) {
    const int64_t size = m.outputs[k].NumElements();
    const int64_t lo = std::max(begin, offset) - offset, hi = std::min(end, offset + size) - offset;
    offset += size;
    if (lo >= hi) continue;
    std::vector<const T*> in(n);
    for (size_t j = 0; j < n; ++j) in[j] = m.arrived[j].tensors[k].template data<T>();
    T* out = m.outputs[k].template data<T>();
    ParallelFor(pool, hi - lo, static_cast<int64_t>(n) + 1, [&](int64_t b, int64_t e) {
      // Blocks keep the partial sums in L1 while later inputs stream through.
      constexpr int64_t kBlock = 4096;
      for (int64_t blo = lo + b; blo < lo + e; blo += kBlock) {
        const int64_t bhi = std::min(lo + e, blo + kBlock);
        T* __restrict z = out;
        const T* __restrict x0 = in[0];
        if (n == 1) {
          for (int64_t i = blo; i < bhi; ++i) z[i] = x0[i];
        } else {
          const T* __restrict x1 = in[1];
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(x0[i] + x1[i]);
        }
        for (size_t j = 2; j < n; ++j) {
          const T* __restrict x = in[j];
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(z[i] + x[i]);
        }
        if (mean && multiply) {
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(z[i] * scale);
        } else if (mean) {
          for (int64_t i = blo; i < bhi; ++i) z[i] = static_cast<T>(z[i] / divisor);
        }
      }
    });
  }
}

template <typename T>
class CollectiveAllReduceOp : public OpKernel {
 public:
  explicit CollectiveAllReduceOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, ReadCollectiveAllReduceAttrs(c, &attrs_));
  }

  bool MayBlock() const override { return attrs_.num_devices > 1; }
  bool WaitsForPeers() const override { return attrs_.num_devices > 1; }

  void Compute(OpKernelContext* ctx) override {
    const int num = ctx->num_inputs();
    if (attrs_.num_devices == 1) {  // its own sum; x / 1 == x
      for (int k = 0; k < num; ++k) ctx->set_output(k, ctx->input(k));
      return;
    }
    CollectiveParticipant self{&ctx->node(), ctx->device(), {}};
    for (int k = 0; k < num; ++k) self.tensors.push_back(ctx->input(k));
    Allocator* allocator = ctx->device()->allocator();
    auto joined = JoinCollective(ctx, attrs_.shared_name, attrs_.num_devices, std::move(self),
                                 [&](Meeting& m) -> Status {
                                   for (const Tensor& in : m.arrived[0].tensors) {
                                     StatusOr<Tensor> out = Tensor::Allocate(allocator, in.dtype(), in.shape());
                                     if (!out.ok()) {
                                       return out.status().WithContext("CollectiveAllReduce '" + attrs_.shared_name +
                                                                       "'");
                                     }
                                     m.outputs.push_back(std::move(out).value());
                                   }
                                   return Status::OK();
                                 });
    TW_OP_REQUIRES_OK(ctx, joined.status());
    Meeting& m = *joined->meeting;
    if (m.status.ok()) {
      const int64_t rank = m.RankOf(&ctx->node());
      int64_t total = 0;
      for (const Tensor& t : m.outputs) total += t.NumElements();
      const int64_t n = static_cast<int64_t>(m.arrived.size());
      ReduceSlice<T>(m, attrs_.mean, total * rank / n, total * (rank + 1) / n, ctx->intra_op_pool());
      joined->group->FinishSlice(m);
      for (int k = 0; k < num; ++k) ctx->set_output(k, m.outputs[static_cast<size_t>(k)]);
    } else {
      ctx->SetStatus(m.status);
    }
    joined->Leave(ctx->step_id());
  }

 private:
  CollectiveAllReduceKernelAttrs attrs_;
};

}  // namespace

void RegisterCollectiveKernels(KernelRegistry& r) {
  r.RegisterTyped<CollectiveAllReduceOp, float, double, int32_t, int64_t>("CollectiveAllReduce", kDeviceCpu);
}

}  // namespace tw
