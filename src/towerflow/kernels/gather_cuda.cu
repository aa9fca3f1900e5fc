// GPU kernels of the ops that pick and place elements by index or condition:
// GatherV2, UnsortedSegmentSum, OneHot, Select, SelectV2. CPU twins:
// gather_kernels.cc, whose argument checks these kernels call (gather_args.h),
// so both accept the same arguments and fail with one code and message.
//
// Indices. GatherV2's indices and UnsortedSegmentSum's segment ids are
// host-memory inputs: every index is checked on the host before anything is
// launched (a bad one fails the step naming it, never an access out of
// bounds), then copied to the device in one host-to-device copy per step
// (GpuDevice::CopyFromHost). Such a kernel cannot be recorded into a step
// graph (Capturable() false): the copy is part of each step. OneHot's indices
// are device memory (an index out of [0, depth) makes a row of off_value on
// every device, so nothing needs checking).
//
// CUDA kernels (grid-stride, one thread per output element):
//   GatherKernel<E>       out[o, j, c] = params[o, indices[j], c]. Moves E, the
//                         unsigned integer of the element's size, so one
//                         kernel serves every dtype of a size.
//   SegmentSumKernel<T>   one thread per (present segment, column) sums its
//                         rows in the order of the ids, as the CPU twin adds
//                         them: the results are bitwise equal to the CPU's and
//                         no atomics are needed. The host groups the rows by
//                         segment (a stable sort of the ids, dropping the
//                         negative ones); segments no id names stay zero (one
//                         memset). A segment named by many ids is summed by
//                         one thread per column: fine for gradients of
//                         gathers, slow for a few huge segments.
//   OneHotKernel<T, I>    out[p, v, s] = indices[p, s] == v ? on : off.
//   SelectKernel<E>       out = condition ? t : e over a broadcast box (the
//                         strides of condition, t and e per output axis, 0
//                         along broadcast axes), merged like a strided copy's.
//                         SelectV2 broadcasts numpy's way; TF1's Select is the
//                         same box with the condition's strides of its form
//                         (a scalar: 0 everywhere; a vector of rows: 1 along
//                         the first axis only).
// Int32 values run as the CPU classes with every argument in host memory
// (array_cuda.h). The kernels only check and enqueue (IsExpensive() false).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "towerflow/device/cuda/gpu_kernel_util.h"
#include "towerflow/kernels/array_cuda.h"
#include "towerflow/kernels/gather_args.h"
#include "towerflow/kernels/internal/cuda_device_util.cuh"
#include "towerflow/kernels/internal/strided_copy_cuda.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using cuda_util::GridThreadCount;
using cuda_util::GridThreadIndex;
using cuda_util::LaunchGridStride;
using strided_copy::kMaxBoxRank;

// ---- CUDA kernels ----

template <typename E>
__global__ void GatherKernel(const E* __restrict__ params, const int64_t* __restrict__ indices,
                             E* __restrict__ out, int64_t total, int64_t n, int64_t m, int64_t inner) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const int64_t r = i / inner, c = i % inner;
    const int64_t o = r / m, j = r % m;
    out[i] = params[(o * n + indices[j]) * inner + c];
  }
}

// `groups`: segment ids (num_present), then offsets (num_present + 1) into
// the rows that follow, each a row of data.
template <typename T>
__global__ void SegmentSumKernel(const T* __restrict__ data, const int64_t* __restrict__ groups,
                                 T* __restrict__ out, int64_t num_present, int64_t inner) {
  const int64_t* offsets = groups + num_present;
  const int64_t* rows = offsets + num_present + 1;
  const int64_t total = num_present * inner;
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const int64_t u = i / inner, c = i % inner;
    T acc = T(0);
    for (int64_t r = offsets[u]; r < offsets[u + 1]; ++r) acc = static_cast<T>(acc + data[rows[r] * inner + c]);
    out[groups[u] * inner + c] = acc;
  }
}

template <typename T, typename I>
__global__ void OneHotKernel(const I* __restrict__ indices, T* __restrict__ out, int64_t total, int64_t depth,
                             int64_t suffix, T on, T off) {
  for (int64_t i = GridThreadIndex(); i < total; i += GridThreadCount()) {
    const int64_t s = i % suffix, t = i / suffix;
    const int64_t v = t % depth, p = t / depth;
    out[i] = static_cast<int64_t>(indices[p * suffix + s]) == v ? on : off;
  }
}

// Kernel parameters (under the 4 KiB launch limit).
struct SelectBox {
  int rank = 0;
  int64_t size[kMaxBoxRank] = {};
  int64_t c_stride[kMaxBoxRank] = {};
  int64_t t_stride[kMaxBoxRank] = {};
  int64_t e_stride[kMaxBoxRank] = {};
};

template <typename E>
__global__ void SelectKernel(const bool* __restrict__ cond, const E* __restrict__ t, const E* __restrict__ e,
                             E* __restrict__ out, int64_t n, const __grid_constant__ SelectBox box) {
  for (int64_t i = GridThreadIndex(); i < n; i += GridThreadCount()) {
    int64_t rest = i, ci = 0, ti = 0, ei = 0;
    for (int k = box.rank - 1; k >= 0; --k) {
      const int64_t idx = rest % box.size[k];
      rest /= box.size[k];
      ci += idx * box.c_stride[k];
      ti += idx * box.t_stride[k];
      ei += idx * box.e_stride[k];
    }
    out[i] = cond[ci] ? t[ti] : e[ei];
  }
}

// ---- Host launchers ----

// fn.template operator()<E>() with E the unsigned integer of `bytes` bytes.
template <typename Fn>
Status DispatchElementSize(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: return fn.template operator()<uint8_t>();
    case 4: return fn.template operator()<uint32_t>();
    case 8: return fn.template operator()<uint64_t>();
    default: return errors::Internal("no GPU kernel for ", bytes, "-byte elements");
  }
}

// The int64 host vector `v` as a device tensor (one host-to-device copy).
Status ToDevice(GpuDevice& gpu, const std::vector<int64_t>& v, Tensor* on_device) {
  Tensor host(kInt64, TensorShape{static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(host.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return gpu.CopyFromHost(host, on_device);
}

Status LaunchGather(const GpuDevice& gpu, size_t elem, const void* params, const int64_t* indices, void* out,
                    int64_t total, int64_t n, int64_t m, int64_t inner) {
  return DispatchElementSize(elem, [&]<typename E>() {
    return LaunchGridStride(gpu, total, GatherKernel<E>, static_cast<const E*>(params), indices,
                            static_cast<E*>(out), total, n, m, inner);
  });
}

template <typename T>
Status LaunchSegmentSum(const GpuDevice& gpu, const T* data, const int64_t* groups, T* out, int64_t num_present,
                        int64_t inner) {
  return LaunchGridStride(gpu, num_present * inner, SegmentSumKernel<T>, data, groups, out, num_present, inner);
}

template <typename T, typename I>
Status LaunchOneHot(const GpuDevice& gpu, const I* indices, T* out, int64_t total, int64_t depth, int64_t suffix,
                    T on, T off) {
  return LaunchGridStride(gpu, total, OneHotKernel<T, I>, indices, out, total, depth, suffix, on, off);
}

// out (row-major over `size`) = cond ? t : e with the given strides per axis.
Status LaunchSelect(const GpuDevice& gpu, size_t elem, const void* cond, const void* t, const void* e, void* out,
                    std::vector<int64_t> size, std::vector<int64_t> cs, std::vector<int64_t> ts,
                    std::vector<int64_t> es) {
  int64_t n = 1;
  for (int64_t d : size) n *= d;
  if (n == 0) return Status::OK();
  std::vector<int64_t> os = shape_util::RowMajorStrides(size);
  strided_copy::Coalesce(size, {&cs, &ts, &es, &os});
  if (size.size() > static_cast<size_t>(kMaxBoxRank)) {
    return errors::Internal("a select box of rank ", size.size(), " after merging axes");
  }
  SelectBox box;
  box.rank = static_cast<int>(size.size());
  for (int k = 0; k < box.rank; ++k) {
    const size_t kk = static_cast<size_t>(k);
    box.size[k] = size[kk];
    box.c_stride[k] = cs[kk];
    box.t_stride[k] = ts[kk];
    box.e_stride[k] = es[kk];
  }
  return DispatchElementSize(elem, [&]<typename E>() {
    return LaunchGridStride(gpu, n, SelectKernel<E>, static_cast<const bool*>(cond), static_cast<const E*>(t),
                            static_cast<const E*>(e), static_cast<E*>(out), n, box);
  });
}

// ---- OpKernels ----

class GpuGatherOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor* out = nullptr;
    auto plan = gather::GatherOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t total = out->NumElements();
    if (total == 0) return;
    // int64 indices go over as they are (checked above); others as the plan's int64 copy.
    Tensor indices;
    const Tensor& given = ctx->input(1);
    TW_OP_REQUIRES_OK(ctx, given.dtype() == kInt64 ? gpu.CopyFromHost(given, &indices)
                                                   : ToDevice(gpu, plan->indices, &indices));
    const Tensor& params = ctx->input(0);
    TW_OP_REQUIRES_OK(ctx, LaunchGather(gpu, DataTypeSize(params.dtype()), params.raw_data(),
                                        indices.data<int64_t>(), out->raw_data(), total, plan->n,
                                        static_cast<int64_t>(plan->indices.size()), plan->inner));
  }
  bool IsExpensive() const override { return false; }
  bool Capturable() const override { return false; }  // the indices' copy (file comment)
};

template <typename T>
class GpuUnsortedSegmentSumOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    Tensor* out = nullptr;
    auto plan = gather::UnsortedSegmentSumOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    if (out->NumElements() == 0) return;
    TW_OP_REQUIRES_CUDA_OK(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu.stream()));
    // The rows grouped by segment, each group in the ids' order.
    const std::vector<int64_t>& ids = plan->ids;
    std::vector<int64_t> order;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (ids[k] >= 0) order.push_back(static_cast<int64_t>(k));
    }
    if (order.empty() || plan->inner == 0) return;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return ids[static_cast<size_t>(a)] < ids[static_cast<size_t>(b)]; });
    std::vector<int64_t> segments, offsets;
    for (size_t r = 0; r < order.size(); ++r) {
      const int64_t id = ids[static_cast<size_t>(order[r])];
      if (segments.empty() || segments.back() != id) {
        segments.push_back(id);
        offsets.push_back(static_cast<int64_t>(r));
      }
    }
    offsets.push_back(static_cast<int64_t>(order.size()));
    const int64_t num_present = static_cast<int64_t>(segments.size());
    std::vector<int64_t> groups = std::move(segments);
    groups.insert(groups.end(), offsets.begin(), offsets.end());
    groups.insert(groups.end(), order.begin(), order.end());
    Tensor on_device;
    TW_OP_REQUIRES_OK(ctx, ToDevice(gpu, groups, &on_device));
    TW_OP_REQUIRES_OK(ctx, LaunchSegmentSum<T>(gpu, ctx->input(0).data<T>(), on_device.data<int64_t>(),
                                               out->data<T>(), num_present, plan->inner));
  }
  bool IsExpensive() const override { return false; }
  bool Capturable() const override { return false; }  // the ids' copy (file comment)
};

template <typename T>
class GpuOneHotOp : public GpuOpKernel {
 public:
  explicit GpuOneHotOp(OpKernelConstruction* c) : GpuOpKernel(c) { TW_OP_REQUIRES_OK(c, c->GetAttr("axis", &axis_)); }
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& indices = ctx->input(0);
    Tensor* out = nullptr;
    auto plan = gather::OneHotOutput(ctx, axis_, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t total = out->NumElements();
    if (total == 0) return;
    const T on = ctx->input(2).data<T>()[0], off = ctx->input(3).data<T>()[0];  // host memory
    T* dst = out->data<T>();
    switch (indices.dtype()) {
      case kInt32:
        TW_OP_REQUIRES_OK(ctx, LaunchOneHot<T>(gpu, indices.data<int32_t>(), dst, total, plan->depth, plan->suffix,
                                               on, off));
        return;
      case kInt64:
        TW_OP_REQUIRES_OK(ctx, LaunchOneHot<T>(gpu, indices.data<int64_t>(), dst, total, plan->depth, plan->suffix,
                                               on, off));
        return;
      case kUInt8:
        TW_OP_REQUIRES_OK(ctx, LaunchOneHot<T>(gpu, indices.data<uint8_t>(), dst, total, plan->depth, plan->suffix,
                                               on, off));
        return;
      default:
        ctx->SetStatus(errors::Internal("OneHot: indices of dtype ", DataTypeName(indices.dtype())));
    }
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t axis_ = -1;
};

std::vector<int64_t> Zeros(size_t n) { return std::vector<int64_t>(n, 0); }

class GpuSelectV2Op : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& c = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    auto shape = gather::SelectV2Shape(ctx);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    if (out->NumElements() == 0) return;
    auto cs = shape_util::BroadcastStrides("SelectV2", c.shape(), *shape);
    auto ts = shape_util::BroadcastStrides("SelectV2", t.shape(), *shape);
    auto es = shape_util::BroadcastStrides("SelectV2", e.shape(), *shape);
    TW_OP_REQUIRES_OK(ctx, cs.status());
    TW_OP_REQUIRES_OK(ctx, ts.status());
    TW_OP_REQUIRES_OK(ctx, es.status());
    TW_OP_REQUIRES_OK(ctx, LaunchSelect(gpu, DataTypeSize(t.dtype()), c.raw_data(), t.raw_data(), e.raw_data(),
                                        out->raw_data(), shape->dims(), *cs, *ts, *es));
  }
  bool IsExpensive() const override { return false; }
};

// TF1's Select. The condition is in device memory, so even a scalar one is
// read by the kernel (a box whose condition strides are all 0).
class GpuSelectOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, GpuDevice& gpu) override {
    const Tensor& c = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    auto form = gather::SelectV1Form(ctx);
    TW_OP_REQUIRES_OK(ctx, form.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, t.shape(), &out));
    if (out->NumElements() == 0) return;
    const std::vector<int64_t>& dims = t.shape().dims();
    const std::vector<int64_t> strides = shape_util::RowMajorStrides(dims);
    std::vector<int64_t> cs = Zeros(dims.size());
    if (*form == gather::SelectForm::kElements) cs = strides;
    if (*form == gather::SelectForm::kRows) cs[0] = 1;
    TW_OP_REQUIRES_OK(ctx, LaunchSelect(gpu, DataTypeSize(t.dtype()), c.raw_data(), t.raw_data(), e.raw_data(),
                                        out->raw_data(), dims, cs, strides, strides));
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterGatherCudaKernels(KernelRegistry& target, const KernelRegistry& cpu) {
  const std::vector<DataType>& device = GpuDeviceMemoryTypes();
  RegisterGpuKernel<GpuGatherOp>(target, "GatherV2", "Tparams", device, {1, 2}, {});
  RegisterGpuKernels<GpuUnsortedSegmentSumOp, float, double, int64_t, uint8_t>(target, "UnsortedSegmentSum",
                                                                               {1, 2}, {});
  RegisterGpuKernels<GpuOneHotOp, float, double, int64_t, uint8_t, bool>(target, "OneHot", {1, 2, 3}, {});
  RegisterGpuKernel<GpuSelectV2Op>(target, "SelectV2", "T", device, {}, {});
  RegisterGpuKernel<GpuSelectOp>(target, "Select", "T", device, {}, {});
  for (const char* op : {"GatherV2", "UnsortedSegmentSum", "OneHot", "Select", "SelectV2"}) {
    RegisterHostKernelOnGpu(target, cpu, op, {kInt32});
  }
}

}  // namespace tw
