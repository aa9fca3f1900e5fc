// CPU kernels of the ops that pick and place elements by index or condition:
// GatherV2, UnsortedSegmentSum, OneHot, Select, SelectV2 and InTopKV2. Every index is
// checked before anything is written, so a bad one fails the step with the
// index and its position named, never a read or write out of bounds.
// Data-movement kernels are templates over the element type (strings
// included: elements are copied, not memcpy'd).
#include <algorithm>
#include <cmath>
#include <string>

#include "towerflow/kernels/gather_args.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using gather::IndexAt;

template <typename T>
class GatherOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto plan = gather::GatherOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t n = plan->n, inner = plan->inner, m = static_cast<int64_t>(plan->indices.size());
    const std::vector<int64_t>& idx = plan->indices;
    const T* src = ctx->input(0).data<T>();
    T* dst = out->data<T>();
    ParallelFor(ctx->intra_op_pool(), plan->outer * m, inner + 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / m, j = r % m;
        std::copy_n(src + (o * n + idx[static_cast<size_t>(j)]) * inner, inner, dst + r * inner);
      }
    });
  }
};

template <typename T>
class UnsortedSegmentSumOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    auto plan = gather::UnsortedSegmentSumOutput(ctx, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t inner = plan->inner, rows = static_cast<int64_t>(plan->ids.size());
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), T(0));
    const T* src = ctx->input(0).data<T>();
    // Parallel over the slices' columns: each thread owns whole output columns,
    // so the sums need no locks and add in the ids' order.
    ParallelFor(ctx->intra_op_pool(), inner, rows + 1, [&](int64_t c0, int64_t c1) {
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t id = plan->ids[static_cast<size_t>(k)];
        if (id < 0) continue;  // dropped (TF's rule)
        const T* row = src + k * inner;
        T* acc = dst + id * inner;
        for (int64_t c = c0; c < c1; ++c) acc[c] = static_cast<T>(acc[c] + row[c]);
      }
    });
  }
};

template <typename T>
class OneHotOp : public OpKernel {
 public:
  explicit OneHotOp(OpKernelConstruction* c) : OpKernel(c) { TW_OP_REQUIRES_OK(c, c->GetAttr("axis", &axis_)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    Tensor* out = nullptr;
    auto plan = gather::OneHotOutput(ctx, axis_, &out);
    TW_OP_REQUIRES_OK(ctx, plan.status());
    const int64_t depth = plan->depth, suffix = plan->suffix;
    const T on = ctx->input(2).data<T>()[0], off = ctx->input(3).data<T>()[0];
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), off);
    for (int64_t k = 0; k < indices.NumElements(); ++k) {
      const int64_t v = IndexAt(indices, k);
      if (v < 0 || v >= depth) continue;  // a row of off_value
      const int64_t p = k / suffix, s = k % suffix;
      dst[(p * depth + v) * suffix + s] = on;
    }
  }

 private:
  int64_t axis_ = -1;
};

template <typename T>
class SelectOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& c = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    auto shape = gather::SelectV2Shape(ctx);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    const bool* cv = c.data<bool>();
    const T* tv = t.data<T>();
    const T* ev = e.data<T>();
    T* dst = out->data<T>();
    const int64_t n = out->NumElements();
    if (c.shape() == *shape && t.shape() == *shape && e.shape() == *shape) {
      for (int64_t i = 0; i < n; ++i) dst[i] = cv[i] ? tv[i] : ev[i];
      return;
    }
    if (n == 0) return;
    auto cs = shape_util::BroadcastStrides("SelectV2", c.shape(), *shape);
    auto ts = shape_util::BroadcastStrides("SelectV2", t.shape(), *shape);
    auto es = shape_util::BroadcastStrides("SelectV2", e.shape(), *shape);
    TW_OP_REQUIRES_OK(ctx, cs.status());
    TW_OP_REQUIRES_OK(ctx, ts.status());
    TW_OP_REQUIRES_OK(ctx, es.status());
    const std::vector<int64_t>& dims = shape->dims();
    const int rank = static_cast<int>(dims.size());
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t ci = 0, ti = 0, ei = 0;
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = cv[ci] ? tv[ti] : ev[ei];
      for (int d = rank - 1; d >= 0; --d) {
        const size_t k = static_cast<size_t>(d);
        ci += (*cs)[k];
        ti += (*ts)[k];
        ei += (*es)[k];
        if (++idx[k] < dims[k]) break;
        ci -= (*cs)[k] * dims[k];
        ti -= (*ts)[k] * dims[k];
        ei -= (*es)[k] * dims[k];
        idx[k] = 0;
      }
    }
  }
};

// TF1's Select: t and e of one shape; a scalar condition picks one whole, a
// vector condition picks rows (when t has more than one axis), else the
// condition has t's shape and picks elements.
template <typename T>
class SelectV1Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& c = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    auto form = gather::SelectV1Form(ctx);
    TW_OP_REQUIRES_OK(ctx, form.status());
    const bool* cv = c.data<bool>();
    if (*form == gather::SelectForm::kWhole) {
      ctx->set_output(0, cv[0] ? t : e);
      return;
    }
    const bool rows = *form == gather::SelectForm::kRows;
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, t.shape(), &out));
    const T* tv = t.data<T>();
    const T* ev = e.data<T>();
    T* dst = out->data<T>();
    if (!rows) {
      for (int64_t i = 0; i < t.NumElements(); ++i) dst[i] = cv[i] ? tv[i] : ev[i];
      return;
    }
    const int64_t n = c.NumElements();
    const int64_t row = n == 0 ? 0 : t.NumElements() / n;
    for (int64_t r = 0; r < n; ++r) std::copy_n((cv[r] ? tv : ev) + r * row, row, dst + r * row);
  }
};

// TF's rule: the target is in the top k when fewer than k predictions of its
// row are strictly larger; false when the target is out of range or a
// prediction of the row is not finite.
class InTopKOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& p = ctx->input(0);
    const Tensor& targets = ctx->input(1);
    TW_OP_REQUIRES(ctx, p.rank() == 2,
                   errors::InvalidArgument("InTopKV2: predictions must be 2-dimensional, got ", p.shape().ToString()));
    TW_OP_REQUIRES(ctx, targets.rank() == 1 && targets.shape().dim(0) == p.shape().dim(0),
                   errors::InvalidArgument("InTopKV2: targets of shape ", targets.shape().ToString(),
                                           " must be a vector of one target per row of predictions ",
                                           p.shape().ToString()));
    auto k_v = gather::ScalarInput(ctx, 2, "InTopKV2: k");
    TW_OP_REQUIRES_OK(ctx, k_v.status());
    const int64_t k = *k_v;
    const int64_t batch = p.shape().dim(0), classes = p.shape().dim(1);
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{batch}, &out));
    const float* pv = p.data<float>();
    bool* ov = out->data<bool>();
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = pv + b * classes;
      const int64_t target = IndexAt(targets, b);
      bool cannot_say = target < 0 || target >= classes || !std::isfinite(row[target]);
      int64_t larger = 0;
      if (!cannot_say) {
        const float tp = row[target];
        for (int64_t c = 0; c < classes; ++c) {
          if (!std::isfinite(row[c])) {
            cannot_say = true;
            break;
          }
          if (row[c] > tp && ++larger > k) break;
        }
      }
      ov[b] = !cannot_say && larger < k;
    }
  }
};

}  // namespace

void RegisterGatherKernels(KernelRegistry& r) {
  r.RegisterTyped<GatherOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("GatherV2", kDeviceCpu,
                                                                                          "Tparams");
  r.RegisterTyped<UnsortedSegmentSumOp, float, double, int32_t, int64_t, uint8_t>("UnsortedSegmentSum", kDeviceCpu);
  r.RegisterTyped<OneHotOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("OneHot", kDeviceCpu);
  r.RegisterTyped<SelectV1Op, float, double, int32_t, int64_t, uint8_t, bool, std::string>("Select", kDeviceCpu);
  r.RegisterTyped<SelectOp, float, double, int32_t, int64_t, uint8_t, bool, std::string>("SelectV2", kDeviceCpu);
  r.RegisterUntyped<InTopKOp>("InTopKV2", kDeviceCpu);
}

}  // namespace tw
