// GPU kernels of MatMul and BatchMatMulV2 (float, double). No CUDA kernel of
// their own: cuBLAS GEMMs (cublasGemmEx, cublasGemmStridedBatchedEx) on the
// device's compute stream, or a cudaMemsetAsync for an empty sum (k == 0). CPU
// references: matmul_kernels.cc and batch_matmul_kernels.cc (OpenBLAS sgemm /
// dgemm on row-major operands).
//
// Row-major operands through a column-major library: a row-major [r, c] matrix
// is, byte for byte, the column-major [c, r] matrix, its transpose. So instead
// of C = op(A) op(B) (row-major) cuBLAS computes C^T = op(B)^T op(A)^T
// (column-major) with the operands swapped: its "A" is our B (leading
// dimension b.dim(1), transposed when transpose_b), its "B" is our A (leading
// dimension a.dim(1), transposed when transpose_a), and its [n, m] column-major
// result is our [m, n] row-major C with leading dimension n.
//
// Precision: float32 uses CUBLAS_COMPUTE_32F (full float32 arithmetic) unless
// the device allows TF32 (SessionOptions.allow_tf32), when it is
// CUBLAS_COMPUTE_32F_FAST_TF32: inputs rounded to TF32's 10-bit mantissa on
// tensor cores, float32 accumulation. The handle's math mode must agree: the
// device sets CUBLAS_TF32_TENSOR_OP_MATH exactly when TF32 is allowed (that
// mode would let cuBLAS use TF32 for CUBLAS_COMPUTE_32F too) and
// CUBLAS_DEFAULT_MATH otherwise. double always uses CUBLAS_COMPUTE_64F.
//
// Handle, stream and workspace: gpu.cublas() is bound to the compute stream
// by the device and used here as it is: cuBLAS calls on one handle are
// thread-safe, so executor threads may enqueue GEMMs on it at once, as long as
// nobody changes the handle's configuration. That is why this kernel never
// calls cublasSetStream (which also resets the workspace) nor
// cublasSetWorkspace: a workspace set per call from our stream-ordered pool
// would be handle state shared by all threads, and one thread's GEMM could run
// with another's workspace after that one was freed. cuBLAS therefore uses the
// workspace the device set on the handle once, at creation (32 MiB of plain
// device memory outside the GpuAllocator pool, gpu_device.h); every GEMM of
// the handle runs on one stream, so they use it one after another. alpha and beta
// are host scalars: the handle must keep CUBLAS_POINTER_MODE_HOST (the default).
#include <climits>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/batch_matmul_args.h"
#include "towerflow/kernels/matmul_args.h"

namespace tw {
namespace {

template <typename T>
struct GemmTypes;
template <>
struct GemmTypes<float> {
  static constexpr cudaDataType_t kData = CUDA_R_32F;
  static cublasComputeType_t Compute(const GpuDevice& gpu) {
    return gpu.allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  }
};
template <>
struct GemmTypes<double> {
  static constexpr cudaDataType_t kData = CUDA_R_64F;
  static cublasComputeType_t Compute(const GpuDevice&) { return CUBLAS_COMPUTE_64F; }
};

// Queues c[m, n] = op(a) op(b) (row-major, op = transpose when ta / tb) on the
// compute stream. REQUIRES: m, n, k in [1, INT_MAX]; lda, ldb the row lengths
// of a and b as stored. Returns the cuBLAS status as a Status (Internal, or
// ResourceExhausted when cuBLAS cannot allocate).
template <typename T>
Status Gemm(const GpuDevice& gpu, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
            const T* b, int64_t ldb, T* c) {
  const T alpha = T(1), beta = T(0);
  constexpr cudaDataType_t kType = GemmTypes<T>::kData;
  TW_CUBLAS_RETURN_IF_ERROR(
      cublasGemmEx(gpu.cublas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                   static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b, kType,
                   static_cast<int>(ldb), a, kType, static_cast<int>(lda), &beta, c, kType,
                   static_cast<int>(n), GemmTypes<T>::Compute(gpu), CUBLAS_GEMM_DEFAULT));
  return Status::OK();
}

template <typename T>
class MatMulGpuOp : public GpuOpKernel {
 public:
  explicit MatMulGpuOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_a", &ta_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_b", &tb_));
  }

  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    Tensor* out = nullptr;
    auto dims = MatMulOutput(ctx, ta_, tb_, &out);  // the checks of both devices
    TW_OP_REQUIRES_OK(ctx, dims.status());
    const int64_t m = dims->m, n = dims->n, k = dims->k;
    if (m == 0 || n == 0) return;
    T* c = out->data<T>();
    if (k == 0) {  // an empty sum; GEMM with k = 0 is not reliably defined
      TW_OP_REQUIRES_CUDA_OK(ctx,
                             cudaMemsetAsync(c, 0, static_cast<size_t>(m * n) * sizeof(T), gpu.stream()));
      return;
    }
    TW_OP_REQUIRES_OK(ctx, Gemm<T>(gpu, ta_, tb_, m, n, k, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), c));
  }

 private:
  bool ta_ = false;
  bool tb_ = false;
};

// BatchMatMulV2: one strided batched GEMM (cublasGemmStridedBatchedEx) when
// every output matrix reads the operands' matrices in step (the same batches,
// or one operand whole for every batch: a stride of 0); other broadcasts
// (x [2, 1, M, K] with y [1, 3, K, N]) one GEMM per output matrix. The same
// row-major swap as Gemm above.
template <typename T>
class BatchMatMulGpuOp : public GpuOpKernel {
 public:
  explicit BatchMatMulGpuOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("adj_x", &adj_x_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("adj_y", &adj_y_));
  }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor* out = nullptr;
    auto plan = BatchMatMulOutput(ctx, adj_x_, adj_y_, &out);  // the checks of both devices
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const BatchMatMulPlan& p = *plan;
    if (p.batches == 0 || p.m == 0 || p.n == 0) return;
    T* z = out->data<T>();
    if (p.k == 0) {
      TW_OP_REQUIRES_CUDA_OK(
          ctx, cudaMemsetAsync(z, 0, static_cast<size_t>(p.batches * p.m * p.n) * sizeof(T), gpu.stream()));
      return;
    }
    const T* x = ctx->input(0).data<T>();
    const T* y = ctx->input(1).data<T>();
    const int64_t x_size = p.m * p.k, y_size = p.k * p.n, z_size = p.m * p.n;
    const int64_t ldx = adj_x_ ? p.m : p.k, ldy = adj_y_ ? p.k : p.n;
    int64_t x_step = 0, y_step = 0;
    if (p.batches <= INT_MAX && p.Uniform(&x_step, &y_step)) {
      const T alpha = T(1), beta = T(0);
      constexpr cudaDataType_t kType = GemmTypes<T>::kData;
      TW_OP_REQUIRES_OK(ctx, [&]() -> Status {
        TW_CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
            gpu.cublas(), adj_y_ ? CUBLAS_OP_T : CUBLAS_OP_N, adj_x_ ? CUBLAS_OP_T : CUBLAS_OP_N,
            static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k), &alpha, y, kType,
            static_cast<int>(ldy), y_step * y_size, x, kType, static_cast<int>(ldx), x_step * x_size, &beta, z, kType,
            static_cast<int>(p.n), z_size, static_cast<int>(p.batches), GemmTypes<T>::Compute(gpu),
            CUBLAS_GEMM_DEFAULT));
        return Status::OK();
      }());
      return;
    }
    for (int64_t b = 0; b < p.batches; ++b) {
      TW_OP_REQUIRES_OK(ctx, Gemm<T>(gpu, adj_x_, adj_y_, p.m, p.n, p.k, x + p.XIndex(b) * x_size, ldx,
                                     y + p.YIndex(b) * y_size, ldy, z + b * z_size));
    }
  }

 private:
  bool adj_x_ = false;
  bool adj_y_ = false;
};

}  // namespace

void RegisterMatMulCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  target.RegisterTyped<MatMulGpuOp, float, double>("MatMul", kDeviceGpu);
  target.RegisterTyped<BatchMatMulGpuOp, float, double>("BatchMatMulV2", kDeviceGpu);
}

}  // namespace tw
