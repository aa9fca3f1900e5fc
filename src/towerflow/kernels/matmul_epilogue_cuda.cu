// MatMul fused with the BiasAdd or BiasAddRelu that alone reads its output
// (runtime/fusion.h), float32, as one cuBLASLt GEMM whose epilogue adds the
// bias (CUBLASLT_EPILOGUE_BIAS) and rectifies (CUBLASLT_EPILOGUE_RELU_BIAS)
// while each output tile is in registers: a dense layer's forward pass is one
// kernel where it was two, and its output is written once instead of written,
// read and written again. CPU twin: MatMul then BiasAdd / BiasAddRelu
// (matmul_kernels.cc, nn_kernels.cc), which the parity test runs unfused.
//
// Inputs (a, b, bias), attrs transpose_a / transpose_b from the MatMul node;
// output the consumer's, [m, n]. The checks are the two ops' own
// (MatMulOutput, CheckBiasAdd), with their messages. Row-major operands as in
// matmul_cuda.cu: cuBLASLt computes D^T = op(B)^T op(A)^T column-major, so its
// D has n rows, and the epilogue's bias (one value per row of D) is one value
// per column of ours. An empty sum (k = 0) gives the bias, rectified for
// BiasAddRelu, without a GEMM. One difference from the unfused pair: the
// epilogue's ReLU may turn a NaN into 0 where BiasAddRelu keeps it (a NaN
// weight still reaches the loss: the next layer multiplies by it). A shape
// for which cuBLASLt offers no algorithm with the epilogue runs as a plain
// cuBLASLt GEMM and a bias (+ ReLU) kernel, with one warning.
//
// Per shape, and per alignment of the three matrices' pointers, the kernel
// keeps the matrix layouts and the algorithm cuBLASLt's heuristic picks for
// them (host calls, once): the heuristic assumes 256-byte aligned buffers
// unless told, and a step arena's tensors are 64-byte aligned, so it is told
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, at most 64). The operation
// descriptor, which carries the bias pointer, is made per call, so that
// threads running the kernel at once never share it. The workspace (up to kWorkspaceBytes)
// comes from allocate_temp on the compute stream. Precision as MatMul's:
// CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32 with allow_tf32.
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <memory>
#include <mutex>

#include <cublasLt.h>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/matmul_args.h"
#include "towerflow/kernels/nn_args.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;

// cuBLASLt's suggestion for Hopper; the heuristic only offers algorithms
// that fit.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// out[i] = bias[i % n], rectified with kRelu (NaN kept, as BiasAddRelu's
// kernel): the layer of an empty sum.
template <bool kRelu>
__global__ void BroadcastBiasKernel(const float* __restrict__ b, float* __restrict__ o, int64_t count, int64_t n) {
  for (int64_t i = GridThreadIndex(); i < count; i += GridThreadCount()) {
    const float s = b[i % n];
    o[i] = kRelu && s < 0.0f ? 0.0f : s;
  }
}

// o[i] = o[i] + b[i % n], rectified with kRelu (NaN kept): the bias of a GEMM
// whose epilogue cuBLASLt could not take, as the BiasAdd / BiasAddRelu kernels.
template <bool kRelu>
__global__ void AddBiasKernel(const float* __restrict__ b, float* __restrict__ o, int64_t count, int64_t n) {
  for (int64_t i = GridThreadIndex(); i < count; i += GridThreadCount()) {
    const float s = o[i] + b[i % n];
    o[i] = kRelu && s < 0.0f ? 0.0f : s;
  }
}

// The largest power of two up to kTensorAlignment (64) that divides p's
// address: every tensor's buffer is at least that aligned (the pool's are
// 256-byte aligned, a step arena's 64), so a layer's plan is the same
// whichever of them its buffers come from. A plan keyed by the finer
// alignment could pick another algorithm, and another workspace size, when a
// warm-up step's buffers move from the pool to the arena, and a step graph
// recording allocations that differ from run to run turns itself off.
uint32_t Alignment(const void* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = static_cast<uint32_t>(kTensorAlignment);
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
struct LtObject {
  Handle h = nullptr;
  LtObject() = default;
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;
  ~LtObject() {
    if (h != nullptr) Destroy(h);
  }
};
using Layout = LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using OperationDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Preference = LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// The layouts of one shape and the algorithm chosen for them.
struct LtPlan {
  Layout a, b, d;  // cuBLASLt's A (our b), B (our a), C = D
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;
  // cuBLASLt offered no algorithm with the bias epilogue for this shape:
  // `algo` is a plain GEMM's, and a kernel adds the bias after it.
  bool epilogue_apart = false;
};

class MatMulBiasGpuOp : public GpuOpKernel {
 public:
  MatMulBiasGpuOp(OpKernelConstruction* c, const Node& consumer)
      : GpuOpKernel(c), relu_(consumer.op() == "BiasAddRelu") {
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_a", &ta_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("transpose_b", &tb_));
  }

  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    Tensor* out = nullptr;
    auto dims = MatMulOutput(ctx, ta_, tb_, &out);  // MatMul's checks, then BiasAdd's
    TW_OP_REQUIRES_OK(ctx, dims.status());
    TW_OP_REQUIRES_OK(ctx, CheckBiasAdd(out->shape(), bias.shape()));
    const int64_t m = dims->m, n = dims->n, k = dims->k;
    if (m == 0 || n == 0) return;
    float* d = out->data<float>();
    if (k == 0) {
      TW_OP_REQUIRES_OK(ctx, relu_ ? LaunchGridStride(gpu, m * n, BroadcastBiasKernel<true>, bias.data<float>(), d,
                                                      m * n, n)
                                   : LaunchGridStride(gpu, m * n, BroadcastBiasKernel<false>, bias.data<float>(),
                                                      d, m * n, n));
      return;
    }
    TW_OP_REQUIRES_OK(ctx, Run(ctx, gpu, a, b, bias, m, n, d));
  }

 private:
  // A new operation descriptor for this call: with the bias epilogue, or
  // (`bias` null) a plain GEMM.
  Status Operation(const GpuDevice& gpu, const float* bias, OperationDesc* op) const {
    const cublasComputeType_t compute = gpu.allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&op->h, compute, CUDA_R_32F));
    const cublasOperation_t op_a = tb_ ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op->h, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op->h, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    if (bias == nullptr) return Status::OK();  // CUBLASLT_EPILOGUE_DEFAULT
    const cublasLtEpilogue_t epilogue = relu_ ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    TW_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(op->h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    TW_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(op->h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    return Status::OK();
  }

  // The cached plan of this shape and these alignments. `op`: this call's
  // descriptor (the heuristic reads its transposes and epilogue, not the bias
  // pointer). A bias less than 16-byte aligned, or a shape whose fused call
  // cuBLASLt refused when it ran (Run), takes the plain GEMM and the bias
  // kernel after it.
  StatusOr<const LtPlan*> PlanFor(const GpuDevice& gpu, const OperationDesc& op, const Tensor& a, const Tensor& b,
                                  const float* bias, const float* d, int64_t m, int64_t n) {
    // cuBLASLt's A is our b, its B our a.
    const uint32_t align_a = Alignment(b.raw_data()), align_b = Alignment(a.raw_data()), align_d = Alignment(d);
    std::array<int64_t, 9> key = {a.dim(0), a.dim(1), b.dim(0), b.dim(1), align_a, align_b, align_d,
                                  Alignment(bias), 0};
    std::lock_guard<std::mutex> lock(mu_);
    key[8] = key[7] < 16 || refused_.count(key) > 0;  // apart
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
    auto plan = std::make_unique<LtPlan>();
    // Row-major [r, c] is column-major [c, r] with leading dimension c.
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->a.h, CUDA_R_32F, static_cast<uint64_t>(b.dim(1)),
                                                         static_cast<uint64_t>(b.dim(0)), b.dim(1)));
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->b.h, CUDA_R_32F, static_cast<uint64_t>(a.dim(1)),
                                                         static_cast<uint64_t>(a.dim(0)), a.dim(1)));
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->d.h, CUDA_R_32F, static_cast<uint64_t>(n),
                                                         static_cast<uint64_t>(m), n));
    Preference pref;
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref.h));
    const uint64_t limit = kWorkspaceBytes;
    TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
        pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof(limit)));
    for (const auto& [attr, align] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
                                      std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
                                      std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d},
                                      std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}}) {
      TW_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref.h, attr, &align, sizeof(align)));
    }
    // cuBLASLt says "none" either by its status (NOT_SUPPORTED) or by no result.
    cublasLtMatmulHeuristicResult_t result{};
    auto heuristic = [&](const OperationDesc& desc) {
      int returned = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(gpu.cublas_lt(), desc.h, plan->a.h, plan->b.h,
                                                               plan->d.h, plan->d.h, pref.h, 1, &result, &returned);
      return st == CUBLAS_STATUS_SUCCESS && returned >= 1 && result.state == CUBLAS_STATUS_SUCCESS;
    };
    if (key[8] != 0 || !heuristic(op)) {
      // A shape the epilogue's kernels do not cover: a plain GEMM, then the
      // bias kernel (the pair's results, one kernel more).
      OperationDesc plain;
      TW_RETURN_IF_ERROR(Operation(gpu, nullptr, &plain));
      if (!heuristic(plain)) {
        return errors::Internal(node().op(), "+", relu_ ? "BiasAddRelu" : "BiasAdd",
                                ": cuBLASLt has no algorithm for [", m, ",", n, "] = ", a.shape().ToString(), " x ",
                                b.shape().ToString(), ", with or without a bias epilogue");
      }
      if (key[8] == 0) {
        TW_LOG(WARNING) << node().name() << ": cuBLASLt has no bias epilogue for [" << m << "," << n << "] = "
                        << a.shape().ToString() << " x " << b.shape().ToString() << ": the bias runs after the GEMM";
      }
      plan->epilogue_apart = true;
    }
    plan->algo = result.algo;
    plan->workspace_bytes = result.workspaceSize;
    const LtPlan* raw = plan.get();
    plans_.emplace(key, std::move(plan));
    return raw;
  }

  Status Run(OpKernelContext* ctx, const GpuDevice& gpu, const Tensor& a, const Tensor& b, const Tensor& bias,
             int64_t m, int64_t n, float* d) {
    OperationDesc fused;
    TW_RETURN_IF_ERROR(Operation(gpu, bias.data<float>(), &fused));
    TW_ASSIGN_OR_RETURN(const LtPlan* plan, PlanFor(gpu, fused, a, b, bias.data<float>(), d, m, n));
    Status ran = Matmul(ctx, gpu, *plan, fused, a, b, bias, m, n, d);
    if (!ran.ok() && !plan->epilogue_apart && ran.code() == Code::kUnimplemented) {
      // The heuristic offered an epilogue algorithm that the call refused
      // (it was queued nothing): this shape and these alignments go apart
      // from now on.
      TW_LOG(WARNING) << node().name() << ": cuBLASLt refused its bias epilogue for [" << m << "," << n
                      << "] (" << ran.message() << "): the bias runs after the GEMM";
      {
        std::lock_guard<std::mutex> lock(mu_);
        refused_.insert({a.dim(0), a.dim(1), b.dim(0), b.dim(1), Alignment(b.raw_data()), Alignment(a.raw_data()),
                         Alignment(d), Alignment(bias.data<float>()), 0});
      }
      TW_ASSIGN_OR_RETURN(plan, PlanFor(gpu, fused, a, b, bias.data<float>(), d, m, n));
      ran = Matmul(ctx, gpu, *plan, fused, a, b, bias, m, n, d);
    }
    return ran;
  }

  // One call of `plan`: the fused GEMM, or the plain one and the bias kernel.
  // Unimplemented when cuBLASLt refuses the call (CUBLAS_STATUS_NOT_SUPPORTED).
  Status Matmul(OpKernelContext* ctx, const GpuDevice& gpu, const LtPlan& plan_ref, const OperationDesc& fused,
                const Tensor& a, const Tensor& b, const Tensor& bias, int64_t m, int64_t n, float* d) {
    const LtPlan* plan = &plan_ref;
    OperationDesc plain;
    if (plan->epilogue_apart) TW_RETURN_IF_ERROR(Operation(gpu, nullptr, &plain));
    const OperationDesc& op = plan->epilogue_apart ? plain : fused;
    // cublasLtMatmul wants its workspace 256-byte aligned; a step arena's
    // buffers are 64-byte aligned: 255 bytes more, and the pointer rounded up.
    Tensor workspace;
    void* ws = nullptr;
    if (plan->workspace_bytes > 0) {
      TW_RETURN_IF_ERROR(
          ctx->allocate_temp(kUInt8, TensorShape{static_cast<int64_t>(plan->workspace_bytes + 255)}, &workspace));
      ws = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(workspace.raw_data()) + 255) & ~uintptr_t{255});
    }
    const float one = 1, zero = 0;
    const cublasStatus_t st = cublasLtMatmul(gpu.cublas_lt(), op.h, &one, b.data<float>(), plan->a.h, a.data<float>(),
                                             plan->b.h, &zero, d, plan->d.h, d, plan->d.h, &plan->algo, ws,
                                             plan->workspace_bytes, gpu.stream());
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) return errors::Unimplemented("cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED");
    TW_CUBLAS_RETURN_IF_ERROR(st);
    if (!plan->epilogue_apart) return Status::OK();
    return relu_ ? LaunchGridStride(gpu, m * n, AddBiasKernel<true>, bias.data<float>(), d, m * n, n)
                 : LaunchGridStride(gpu, m * n, AddBiasKernel<false>, bias.data<float>(), d, m * n, n);
  }

  const bool relu_;
  bool ta_ = false;
  bool tb_ = false;
  std::mutex mu_;
  std::map<std::array<int64_t, 9>, std::unique_ptr<LtPlan>> plans_;  // guarded by mu_
  std::set<std::array<int64_t, 9>> refused_;  // fused calls cuBLASLt refused; guarded by mu_
};

std::unique_ptr<OpKernel> MakeMatMulBias(OpKernelConstruction* c, const Node& consumer) {
  return std::make_unique<MatMulBiasGpuOp>(c, consumer);
}

}  // namespace

void RegisterMatMulEpilogueCudaKernels(KernelRegistry& target, const KernelRegistry&) {
  for (const char* consumer : {"BiasAdd", "BiasAddRelu"}) {
    target.RegisterFusion(FusionDef{"MatMul", consumer, 0, kDeviceGpu, {kFloat32}, MakeMatMulBias});
  }
}

}  // namespace tw
