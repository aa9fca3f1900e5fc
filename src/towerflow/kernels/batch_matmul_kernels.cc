// CPU kernel of BatchMatMulV2 (float, double): one GEMM per output matrix
// (CpuGemm: oneDNN for float where built in, else OpenBLAS), each reading the
// operand matrices its broadcast batch index names (batch_matmul_args.h,
// shared with the CUDA twin in matmul_cuda.cu). The work is split over the
// device's intra-op threads in blocks of 16 rows of one output matrix, so one
// large product spreads as MatMul's does.
#include <algorithm>
#include <type_traits>

#include "towerflow/kernels/batch_matmul_args.h"
#include "towerflow/kernels/blas.h"
#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/internal/cpu_gemm.h"
#include "towerflow/kernels/internal/dnnl_matmul.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

template <typename T>
class BatchMatMulOp : public OpKernel {
 public:
  explicit BatchMatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("adj_x", &adj_x_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("adj_y", &adj_y_));
    TW_OP_REQUIRES_OK(c, blas::Init());
    if constexpr (std::is_same_v<T, float>) dnnl_ = dnnl_matmul::Enabled();
  }

  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto plan = BatchMatMulOutput(ctx, adj_x_, adj_y_, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const BatchMatMulPlan& p = *plan;
    T* z = out->data<T>();
    if (p.batches == 0 || p.m == 0 || p.n == 0) return;
    if (p.k == 0) {  // empty sums
      std::fill_n(z, p.batches * p.m * p.n, T(0));
      return;
    }
    const T* x = ctx->input(0).data<T>();
    const T* y = ctx->input(1).data<T>();
    const int64_t x_size = p.m * p.k, y_size = p.k * p.n, z_size = p.m * p.n;
    const int64_t ldx = adj_x_ ? p.m : p.k, ldy = adj_y_ ? p.k : p.n;
    // Units of kBlock rows of one output matrix, so that a few large matrices
    // spread over the threads as MatMul's rows do.
    constexpr int64_t kBlock = 16;
    const int64_t blocks = (p.m + kBlock - 1) / kBlock;
    const int64_t cost = std::max<int64_t>(1, kBlock * p.n * p.k / 16);
    ShardedFor(ctx->intra_op_pool(), p.batches * blocks, cost, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t b = u / blocks, lo = (u % blocks) * kBlock, len = std::min(kBlock, p.m - lo);
        // Rows lo.. of op(x): rows of x, or its columns when adjoint.
        const T* xb = x + p.XIndex(b) * x_size;
        CpuGemm<T>(dnnl_, adj_x_, adj_y_, len, p.n, p.k, adj_x_ ? xb + lo : xb + lo * ldx, ldx,
                   y + p.YIndex(b) * y_size, ldy, z + b * z_size + lo * p.n, p.n);
      }
    });
  }

 private:
  bool adj_x_ = false;
  bool adj_y_ = false;
  bool dnnl_ = false;
};

}  // namespace

void RegisterBatchMatMulKernels(KernelRegistry& r) {
  r.RegisterTyped<BatchMatMulOp, float, double>("BatchMatMulV2", kDeviceCpu);
}

}  // namespace tw
