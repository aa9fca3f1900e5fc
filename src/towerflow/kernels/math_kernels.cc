// CPU kernels of the math ops other than MatMul and the reductions: AddN here,
// the broadcasting binary ops in cwise_binary.cc, the unary ops in
// cwise_unary.cc. RegisterMathKernels registers all three families.
#include <algorithm>

#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/register_all.h"

namespace tw {

Status CheckAddNInputs(OpKernelContext* ctx) {
  const int n = ctx->num_inputs();
  if (n < 1) return errors::InvalidArgument("AddN needs at least one input");
  const Tensor& first = ctx->input(0);
  for (int i = 1; i < n; ++i) {
    if (ctx->input(i).shape() != first.shape()) {
      return errors::InvalidArgument("AddN inputs must have one shape: input 0 (", ctx->input_name(0),
                                     ") has shape ", first.shape().ToString(), " but input ", i, " (",
                                     ctx->input_name(i), ") has shape ", ctx->input(i).shape().ToString());
    }
  }
  return Status::OK();
}

namespace {

// out = in_0 + ... + in_{N-1}, all of one shape. The gradient sums of every
// backward pass come through here, so the loop is fused: one pass over the
// output per block of elements, whatever N is.
template <typename T>
class AddNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    TW_OP_REQUIRES_OK(ctx, CheckAddNInputs(ctx));
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    if (n == 1) {
      ctx->set_output(0, first);
      return;
    }
    Tensor* out = nullptr;
    // The first input's buffer may become the sum (read before written).
    TW_OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, first.shape(), &out));
    std::vector<const T*> in(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = ctx->input(i).template data<T>();
    T* __restrict z = out->data<T>();
    const bool in_place = in[0] == z;
    ShardedFor(ctx->intra_op_pool(), first.NumElements(), n, [&](int64_t b, int64_t e) {
      // Blocks of 4096 keep the partial sums in L1 while later inputs are added.
      constexpr int64_t kBlock = 4096;
      for (int64_t lo = b; lo < e; lo += kBlock) {
        const int64_t hi = std::min(e, lo + kBlock);
        const T* __restrict c = in[1];
        if (in_place) {  // z holds the first input
          for (int64_t i = lo; i < hi; ++i) z[i] = static_cast<T>(z[i] + c[i]);
        } else {
          const T* __restrict a = in[0];
          for (int64_t i = lo; i < hi; ++i) z[i] = static_cast<T>(a[i] + c[i]);
        }
        for (size_t k = 2; k < in.size(); ++k) {
          const T* __restrict d = in[k];
          for (int64_t i = lo; i < hi; ++i) z[i] = static_cast<T>(z[i] + d[i]);
        }
      }
    });
  }
};

}  // namespace

void RegisterMathKernels(KernelRegistry& r) {
  RegisterCwiseBinaryKernels(r);
  RegisterCwiseUnaryKernels(r);
  r.RegisterTyped<AddNOp, float, double, int32_t, int64_t, uint8_t>("AddN", kDeviceCpu);
}

}  // namespace tw
