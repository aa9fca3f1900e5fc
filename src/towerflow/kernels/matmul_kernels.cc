// CPU kernel of MatMul (float, double): oneDNN's matmul for float where it is
// built in (internal/dnnl_matmul.h: faster at a training step's shapes), else
// OpenBLAS sgemm / dgemm (through blas.h, which loads OpenBLAS with the right
// kernels for this CPU), on row-major operands, each optionally transposed.
//
// Either library runs single-threaded and the kernel does its own splitting over the
// device's intra-op threads, so MatMul shares those threads with every other
// kernel instead of fighting a second pool. The output is cut along its larger
// dimension in blocks of 16 rows or columns: each shard calls gemm on its slice
// and repacks the whole of the other operand, so cutting the larger dimension
// repacks the smaller operand (the MLP's [100,784] x [784,256] cuts N and
// repacks A's 100 rows, not W's 784). The argument checks are matmul_args.h's,
// shared with the CUDA twin (matmul_cuda.cu).
#include <algorithm>
#include <type_traits>

#include "towerflow/kernels/blas.h"
#include "towerflow/kernels/cwise_ops.h"
#include "towerflow/kernels/internal/cpu_gemm.h"
#include "towerflow/kernels/internal/dnnl_matmul.h"
#include "towerflow/kernels/matmul_args.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

template <typename T>
class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_a", &ta_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_b", &tb_));
    TW_OP_REQUIRES_OK(c, blas::Init());
    if constexpr (std::is_same_v<T, float>) dnnl_ = dnnl_matmul::Enabled();
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    Tensor* out = nullptr;
    auto dims = MatMulOutput(ctx, ta_, tb_, &out);  // the checks of both devices
    TW_OP_REQUIRES_OK(ctx, dims.status());
    const int64_t m = dims->m, n = dims->n, k = dims->k;
    T* c = out->data<T>();
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum; gemm with K = 0 is not reliably defined
      std::fill_n(c, m * n, T(0));
      return;
    }
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    const int64_t lda = a.dim(1), ldb = b.dim(1);

    constexpr int64_t kBlock = 16;
    const bool split_rows = m >= n;
    const int64_t extent = split_rows ? m : n;
    const int64_t units = (extent + kBlock - 1) / kBlock;
    // A unit is kBlock rows (or columns) of the output: kBlock * other * k
    // multiply-adds, at ~16 per cycle for a tuned AVX2 / AVX-512 sgemm.
    const int64_t cost = kBlock * (split_rows ? n : m) * k / 16;
    ShardedFor(ctx->intra_op_pool(), units, cost, [&](int64_t u0, int64_t u1) {
      const int64_t lo = u0 * kBlock, hi = std::min(extent, u1 * kBlock);
      const int64_t len = hi - lo;
      if (split_rows) {
        // Rows lo..hi of op(A): rows of A, or columns of A when transposed.
        const T* a_slice = ta_ ? ap + lo : ap + lo * lda;
        CpuGemm<T>(dnnl_, ta_, tb_, len, n, k, a_slice, lda, bp, ldb, c + lo * n, n);
      } else {
        // Columns lo..hi of op(B): columns of B, or rows of B when transposed.
        const T* b_slice = tb_ ? bp + lo * ldb : bp + lo;
        CpuGemm<T>(dnnl_, ta_, tb_, m, len, k, ap, lda, b_slice, ldb, c + lo, n);
      }
    });
  }

 private:
  bool ta_ = false;
  bool tb_ = false;
  bool dnnl_ = false;  // float on oneDNN
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry& r) {
  r.RegisterTyped<MatMulOp, float, double>("MatMul", kDeviceCpu);
}

}  // namespace tw
