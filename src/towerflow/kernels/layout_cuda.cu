// GPU kernels of the ops that rearrange or repeat elements: Transpose, Tile,
// Pad, PadV2, ReverseV2. CPU twins: layout_kernels.cc, whose argument checks these
// kernels call (layout_args.h), so both fail with one code and message.
//
// No CUDA kernel of their own: each output is one strided copy of the input
// (strided_copy_cuda.h), by element size, so one launch serves every dtype:
//   Transpose  the output box with the input's strides permuted.
//   Tile       the output viewed as [m0, d0, m1, d1, ...] (multiples and the
//              input's dims interleaved), read with stride 0 along each
//              multiple: every tile is the input.
//   ReverseV2  the input's box from its last element along the reversed
//              axes, read with those strides negated.
//   Pad/PadV2  a fill of the padding value (a memset for 0), then the input
//              copied into the interior box.
// The shape arguments (perm, multiples, paddings, constant_values) are in host
// memory. Int32 values, and Range and InvertPermutation (shape arithmetic),
// run as the CPU classes with every argument in host memory (array_cuda.h).
// The kernels only check shapes and enqueue work (IsExpensive() false).
#include <cstdint>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/array_cuda.h"
#include "towerflow/kernels/internal/strided_copy_cuda.h"
#include "towerflow/kernels/layout_args.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using shape_util::RowMajorStrides;
using strided_copy::LaunchFill;
using strided_copy::LaunchStridedCopy;

class GpuTransposeOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto plan = layout::TransposeOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    if (out == nullptr) return;  // the identity: the input is the output
    TW_OP_REQUIRES_OK(ctx, LaunchStridedCopy(gpu, DataTypeSize(x.dtype()), x.raw_data(), out->raw_data(),
                                             plan->dims, plan->src_strides, RowMajorStrides(plan->dims)));
  }
  bool IsExpensive() const override { return false; }
};

class GpuTileOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto multiples = layout::TileOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, multiples.status());
    if (out->NumElements() == 0) return;
    const std::vector<int64_t> x_strides = RowMajorStrides(x.shape().dims());
    std::vector<int64_t> dims, src_strides;
    for (int k = 0; k < x.rank(); ++k) {
      dims.push_back((*multiples)[static_cast<size_t>(k)]);
      src_strides.push_back(0);
      dims.push_back(x.dim(k));
      src_strides.push_back(x_strides[static_cast<size_t>(k)]);
    }
    const std::vector<int64_t> dst_strides = RowMajorStrides(dims);
    TW_OP_REQUIRES_OK(ctx, LaunchStridedCopy(gpu, DataTypeSize(x.dtype()), x.raw_data(), out->raw_data(),
                                             std::move(dims), std::move(src_strides), dst_strides));
  }
  bool IsExpensive() const override { return false; }
};

class GpuReverseOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto plan = layout::ReverseOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    if (out == nullptr) return;  // nothing reversed: the input is the output
    const size_t elem = DataTypeSize(x.dtype());
    const char* first = static_cast<const char*>(x.raw_data()) + plan->src_offset * static_cast<int64_t>(elem);
    TW_OP_REQUIRES_OK(ctx, LaunchStridedCopy(gpu, elem, first, out->raw_data(), plan->dims, plan->src_strides,
                                             RowMajorStrides(plan->dims)));
  }
  bool IsExpensive() const override { return false; }
};

// Pad (zeros) and PadV2 (constant_values, input 2, a host-memory scalar).
class GpuPadOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto before = layout::PadOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, before.status());
    const size_t elem = DataTypeSize(x.dtype());
    const uint64_t zero = 0;
    const void* value = ctx->num_inputs() > 2 ? ctx->input(2).raw_data() : &zero;
    TW_OP_REQUIRES_OK(ctx, LaunchFill(gpu, elem, out->raw_data(), out->NumElements(), value));
    if (x.NumElements() == 0) return;
    const std::vector<int64_t> out_strides = RowMajorStrides(out->shape().dims());
    int64_t base = 0;
    for (int k = 0; k < x.rank(); ++k) base += (*before)[static_cast<size_t>(k)] * out_strides[static_cast<size_t>(k)];
    char* interior = static_cast<char*>(out->raw_data()) + base * static_cast<int64_t>(elem);
    TW_OP_REQUIRES_OK(ctx, LaunchStridedCopy(gpu, elem, x.raw_data(), interior, x.shape().dims(),
                                             RowMajorStrides(x.shape().dims()), out_strides));
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterLayoutCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  const std::vector<DataType>& device = GpuDeviceMemoryTypes();
  RegisterGpuKernel<GpuTransposeOp>(target, "Transpose", "T", device, {1}, {});
  RegisterGpuKernel<GpuTileOp>(target, "Tile", "T", device, {1}, {});
  RegisterGpuKernel<GpuPadOp>(target, "Pad", "T", device, {1}, {});
  RegisterGpuKernel<GpuPadOp>(target, "PadV2", "T", device, {1, 2}, {});
  RegisterGpuKernel<GpuReverseOp>(target, "ReverseV2", "T", device, {1}, {});
  for (const char* op : {"Transpose", "Tile", "Pad", "PadV2", "ReverseV2", "Range"}) {
    RegisterHostKernelOnGpu(target, cpu, op, {kInt32});
  }
  RegisterHostKernelOnGpu(target, cpu, "InvertPermutation", {kInt32, kInt64});
}

}  // namespace tw
