// GPU kernels of the shape ops that move or sum elements. CPU twins:
// slice_kernels.cc (Slice, SliceGrad, ConcatV2, ConcatOffset) and
// shape_kernels.cc (BroadcastTo, SumToShape), whose argument checks these
// kernels call (shape_util.h).
//
// Copies go through strided_copy_cuda.h (one strided-copy kernel per element
// size: Slice, SliceGrad into a zeroed output, ConcatV2 one launch per value,
// BroadcastTo with stride 0 along broadcast axes). CUDA kernel here:
//   SumToShapeKernel<T>   one block per output element, grid-stride over blocks:
//                         the block's threads sum the element's broadcast
//                         preimage and reduce in shared memory (O(input) work,
//                         input read once). SumToShape.
// Before a launch a box drops its size-1 axes and merges neighbouring axes that
// are contiguous in both tensors (strided_copy::Coalesce), so kernel
// parameters hold it (kMaxBoxRank).
//
// ConcatOffset, and the int32 kernels of every op here, are CPU classes with
// every argument in host memory (array_cuda.h).
//
// ConcatV2's axis: a KernelDef names host-memory inputs by index, and the axis
// is input N, after the N values, so no one KernelDef keeps it in host memory
// for every N. This kernel takes the axis in device memory and reads its value
// from the Const node that produces it (how Concat() and the gradients build
// it), once at construction; a computed axis is read back with
// GpuDevice::CopyToHost, which waits for the GPU: correct, but a stall.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/array_cuda.h"
#include "towerflow/kernels/internal/strided_copy_cuda.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using shape_util::BroadcastOutput;
using shape_util::PlanConcat;
using shape_util::RowMajorStrides;
using shape_util::SliceGradOutput;
using shape_util::SliceOutput;

using strided_copy::Coalesce;
using strided_copy::kMaxBoxRank;
using strided_copy::LaunchStridedCopy;

constexpr int kSumThreads = 256;

// Kernel parameters (under the 4 KiB launch limit).
struct SumBox {
  int rank = 0;
  int64_t size[kMaxBoxRank] = {};
  int64_t stride[kMaxBoxRank] = {};
};

__device__ __forceinline__ int64_t BoxOffset(const SumBox& box, int64_t i) {
  int64_t offset = 0;
  for (int k = box.rank - 1; k >= 0; --k) {
    offset += (i % box.size[k]) * box.stride[k];
    i /= box.size[k];
  }
  return offset;
}

// out[o] = sum over j of x[offset(kept, o) + offset(reduced, j)].
// REQUIRES: blockDim.x is a power of two <= kSumThreads.
template <typename T>
__global__ void SumToShapeKernel(const T* __restrict__ x, T* __restrict__ out, int64_t n_out,
                                 int64_t n_reduced, const __grid_constant__ SumBox kept,
                                 const __grid_constant__ SumBox reduced) {
  __shared__ T partial[kSumThreads];
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    const int64_t base = BoxOffset(kept, o);
    T acc = T(0);
    for (int64_t j = threadIdx.x; j < n_reduced; j += blockDim.x) acc += x[base + BoxOffset(reduced, j)];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = partial[0];
    __syncthreads();  // partial is rewritten for the next element
  }
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// out (n_out > 0 elements) = x summed over the `reduced` axes; `kept` walks
// out's elements through x. Both boxes use x's strides.
template <typename T>
Status LaunchSumToShape(const GpuDevice& gpu, const T* x, T* out, int64_t n_out,
                        std::vector<int64_t> kept_size, std::vector<int64_t> kept_stride,
                        std::vector<int64_t> reduced_size, std::vector<int64_t> reduced_stride) {
  const int64_t n_reduced = Product(reduced_size);
  Coalesce(kept_size, {&kept_stride});
  Coalesce(reduced_size, {&reduced_stride});
  if (kept_size.size() > kMaxBoxRank || reduced_size.size() > kMaxBoxRank) {
    return errors::Internal("SumToShape boxes of rank ", kept_size.size(), " and ", reduced_size.size());
  }
  SumBox kept, reduced;
  kept.rank = static_cast<int>(kept_size.size());
  for (int k = 0; k < kept.rank; ++k) {
    kept.size[k] = kept_size[static_cast<size_t>(k)];
    kept.stride[k] = kept_stride[static_cast<size_t>(k)];
  }
  reduced.rank = static_cast<int>(reduced_size.size());
  for (int k = 0; k < reduced.rank; ++k) {
    reduced.size[k] = reduced_size[static_cast<size_t>(k)];
    reduced.stride[k] = reduced_stride[static_cast<size_t>(k)];
  }
  // Threads per block: the smallest power of two (>= a warp) covering the
  // preimage, so short sums do not idle 256 threads.
  int threads = 32;
  while (threads < kSumThreads && threads < n_reduced) threads *= 2;
  const int blocks =
      static_cast<int>(std::min<int64_t>(n_out, static_cast<int64_t>(std::max(1, gpu.sm_count())) * 32));
  SumToShapeKernel<T><<<blocks, threads, 0, gpu.stream()>>>(x, out, n_out, n_reduced, kept, reduced);
  TW_CUDA_LAUNCH_CHECK();
  return Status::OK();
}

const char* Bytes(const Tensor& t) { return static_cast<const char*>(t.raw_data()); }
char* Bytes(Tensor* t) { return static_cast<char*>(t->raw_data()); }

int64_t BoxStart(const std::vector<int64_t>& begin, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t k = 0; k < begin.size(); ++k) offset += begin[k] * strides[k];
  return offset;
}

class GpuSliceOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto box = SliceOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, box.status());
    if (out == nullptr) return;  // the whole input
    const size_t elem = DataTypeSize(x.dtype());
    const std::vector<int64_t> strides = RowMajorStrides(x.shape().dims());
    TW_OP_REQUIRES_OK(ctx, LaunchStridedCopy(gpu, elem, Bytes(x) + BoxStart(box->begin, strides) * elem,
                                             Bytes(out), box->size, strides, RowMajorStrides(box->size)));
  }
  bool IsExpensive() const override { return false; }
};

// dy placed at `begin` in zeros of input_shape.
class GpuSliceGradOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& dy = ctx->input(0);
    Tensor* out = nullptr;
    auto box = SliceGradOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, box.status());
    if (out->TotalBytes() == 0) return;
    TW_OP_REQUIRES_CUDA_OK(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu.stream()));
    const size_t elem = DataTypeSize(dy.dtype());
    const std::vector<int64_t> strides = RowMajorStrides(out->shape().dims());
    TW_OP_REQUIRES_OK(
        ctx, LaunchStridedCopy(gpu, elem, Bytes(dy), Bytes(out) + BoxStart(box->begin, strides) * elem,
                               box->size, RowMajorStrides(box->size), strides));
  }
  bool IsExpensive() const override { return false; }
};

class GpuConcatOp : public GpuOpKernel {
 public:
  explicit GpuConcatOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    const Node& node = c->node();
    const Node* axis = node.input(node.num_inputs() - 1).node;
    if (axis->op() == "Const") {
      auto value = axis->attrs().Get<Tensor>("value");
      if (value.ok()) const_axis_ = *value;
    }
  }

  // A computed axis is read back with a wait: not in a step graph.
  bool Capturable() const override { return const_axis_.IsInitialized(); }

  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const int n = ctx->num_inputs() - 1;
    // The axis on the host (file comment): the constant, or a copy that waits.
    Tensor axis_t = const_axis_;
    if (!axis_t.IsInitialized()) TW_OP_REQUIRES_OK(ctx, gpu.CopyToHost(ctx->input(n), &axis_t));
    auto plan = PlanConcat(ctx, axis_t);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const TensorShape& first = ctx->input(0).shape();
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan->out_shape, &out));
    int64_t outer = 1;
    for (int d = 0; d < plan->axis; ++d) outer *= first.dim(d);
    if (outer == 0) return;
    const int64_t out_row = plan->out_shape.num_elements() / outer;
    const size_t elem = DataTypeSize(out->dtype());
    // Value i fills columns [column, column + row) of every one of the `outer`
    // rows of the output.
    int64_t column = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& v = ctx->input(i);
      const int64_t row = v.NumElements() / outer;
      TW_OP_REQUIRES_OK(ctx, LaunchStridedCopy(gpu, elem, Bytes(v), Bytes(out) + column * elem, {outer, row},
                                               {row, 1}, {out_row, 1}));
      column += row;
    }
  }
  bool IsExpensive() const override { return false; }

 private:
  Tensor const_axis_;  // the axis Const's value; uninitialized for a computed axis
};

class GpuBroadcastToOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto args = BroadcastOutput(ctx, "BroadcastTo", /*to_shape=*/true, &out);
    TW_OP_REQUIRES_OK(ctx, args.status());
    if (out == nullptr) return;  // the input, unchanged
    const TensorShape& shape = args->shape;
    const std::vector<int64_t>& strides = args->strides;
    TW_OP_REQUIRES_OK(ctx, LaunchStridedCopy(gpu, DataTypeSize(x.dtype()), Bytes(x), Bytes(out), shape.dims(),
                                             strides, RowMajorStrides(shape.dims())));
  }
  bool IsExpensive() const override { return false; }
};

// BroadcastTo's adjoint: each output element sums the input elements that
// were broadcast from it.
template <typename T>
class GpuSumToShapeOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    auto args = BroadcastOutput(ctx, "SumToShape", /*to_shape=*/false, &out);
    TW_OP_REQUIRES_OK(ctx, args.status());
    if (out == nullptr) return;  // the input, unchanged
    const std::vector<int64_t>& strides = args->strides;
    const int64_t n_out = out->NumElements();
    if (n_out == 0) return;
    if (x.NumElements() == 0) {
      TW_OP_REQUIRES_CUDA_OK(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu.stream()));
      return;
    }
    // An axis of x is reduced where `shape` was broadcast along it (stride 0):
    // the kept axes, in order, walk the output's elements row-major.
    const std::vector<int64_t> x_strides = RowMajorStrides(x.shape().dims());
    std::vector<int64_t> kept_size, reduced_size;
    for (int k = 0; k < x.rank(); ++k) {
      const bool reduced = strides[static_cast<size_t>(k)] == 0;
      kept_size.push_back(reduced ? 1 : x.dim(k));
      reduced_size.push_back(reduced ? x.dim(k) : 1);
    }
    TW_OP_REQUIRES_OK(ctx, LaunchSumToShape<T>(gpu, x.data<T>(), out->data<T>(), n_out, kept_size, x_strides,
                                               reduced_size, x_strides));
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterShapeCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  const std::vector<DataType>& device = GpuDeviceMemoryTypes();
  RegisterGpuKernel<GpuSliceOp>(target, "Slice", "T", device, {1, 2}, {});
  RegisterGpuKernel<GpuSliceGradOp>(target, "SliceGrad", "T", {kFloat32, kFloat64, kInt64, kUInt8}, {1, 2},
                                    {});
  RegisterGpuKernel<GpuConcatOp>(target, "ConcatV2", "T", device, {}, {});  // axis: see the file comment
  RegisterGpuKernel<GpuBroadcastToOp>(target, "BroadcastTo", "T", device, {1}, {});
  RegisterGpuKernels<GpuSumToShapeOp, float, double, int64_t, uint8_t>(target, "SumToShape", {1}, {});
  for (const char* op : {"Slice", "SliceGrad", "ConcatV2", "BroadcastTo", "SumToShape"}) {
    RegisterHostKernelOnGpu(target, cpu, op, {kInt32});
  }
  RegisterHostKernelOnGpu(target, cpu, "ConcatOffset", {});  // every argument is int32
}

}  // namespace tw
