// CPU kernels of the ops that pick and place elements by index or condition:
// GatherV2, UnsortedSegmentSum, OneHot, Select, SelectV2 and InTopKV2. Every index is
// checked before anything is written, so a bad one fails the step with the
// index and its position named, never a read or write out of bounds.
// Data-movement kernels are templates over the element type (strings
// included: elements are copied, not memcpy'd).
#include <algorithm>
#include <cmath>
#include <string>

#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/shape_util.h"

namespace tw {
namespace {

using shape_util::VecStr;

// Element k of an integer tensor (int32, int64 or uint8).
int64_t IndexAt(const Tensor& t, int64_t k) {
  switch (t.dtype()) {
    case kInt32: return t.data<int32_t>()[k];
    case kUInt8: return t.data<uint8_t>()[k];
    default: return t.data<int64_t>()[k];
  }
}

// "[i,j]": the position of flat element k in a tensor of `shape`.
std::string Position(const TensorShape& shape, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = shape.dim(d) == 0 ? 0 : k % shape.dim(d);
    k = shape.dim(d) == 0 ? 0 : k / shape.dim(d);
  }
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? "," : "") + std::to_string(idx[i]);
  return s + "]";
}

// A scalar int input (an axis, a count), or InvalidArgument naming `what`.
StatusOr<int64_t> ScalarInput(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.rank() != 0 || (t.dtype() != kInt32 && t.dtype() != kInt64)) {
    return errors::InvalidArgument(what, " must be an int32 or int64 scalar, got ", t.DebugString());
  }
  return IndexAt(t, 0);
}

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

template <typename T>
class GatherOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    auto axis_v = ScalarInput(ctx, 2, "GatherV2: axis");
    TW_OP_REQUIRES_OK(ctx, axis_v.status());
    const int rank = params.rank();
    int64_t axis = *axis_v;
    TW_OP_REQUIRES(ctx, axis >= -rank && axis < rank,
                   errors::InvalidArgument("GatherV2: axis ", axis, " is out of range for params of shape ",
                                           params.shape().ToString(), " (expected an axis in [", -rank, ", ", rank,
                                           "))"));
    if (axis < 0) axis += rank;
    const std::vector<int64_t>& dims = params.shape().dims();
    const size_t a = static_cast<size_t>(axis);
    const int64_t outer = Product(dims, 0, a), n = dims[a], inner = Product(dims, a + 1, dims.size());
    const int64_t m = indices.NumElements();
    std::vector<int64_t> idx(static_cast<size_t>(m));
    for (int64_t k = 0; k < m; ++k) {
      idx[static_cast<size_t>(k)] = IndexAt(indices, k);
      TW_OP_REQUIRES(ctx, idx[static_cast<size_t>(k)] >= 0 && idx[static_cast<size_t>(k)] < n,
                     errors::InvalidArgument("GatherV2: indices", Position(indices.shape(), k), " = ",
                                             idx[static_cast<size_t>(k)], " is not in [0, ", n, ")"));
    }
    std::vector<int64_t> out_dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(a));
    out_dims.insert(out_dims.end(), indices.shape().dims().begin(), indices.shape().dims().end());
    out_dims.insert(out_dims.end(), dims.begin() + static_cast<std::ptrdiff_t>(a) + 1, dims.end());
    auto shape = TensorShape::Make(out_dims);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    const T* src = params.data<T>();
    T* dst = out->data<T>();
    ParallelFor(ctx->intra_op_pool(), outer * m, inner + 1, [&](int64_t b, int64_t e) {
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
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    auto num_v = ScalarInput(ctx, 2, "UnsortedSegmentSum: num_segments");
    TW_OP_REQUIRES_OK(ctx, num_v.status());
    const int64_t num = *num_v;
    TW_OP_REQUIRES(ctx, num >= 0,
                   errors::InvalidArgument("UnsortedSegmentSum: num_segments must be at least 0, got ", num));
    const std::vector<int64_t>& dims = data.shape().dims();
    const std::vector<int64_t>& id_dims = ids.shape().dims();
    TW_OP_REQUIRES(ctx, id_dims.size() <= dims.size() && std::equal(id_dims.begin(), id_dims.end(), dims.begin()),
                   errors::InvalidArgument("UnsortedSegmentSum: segment_ids of shape ", ids.shape().ToString(),
                                           " must be a prefix of data's shape ", data.shape().ToString()));
    const int64_t inner = Product(dims, id_dims.size(), dims.size());
    std::vector<int64_t> out_dims = {num};
    out_dims.insert(out_dims.end(), dims.begin() + static_cast<std::ptrdiff_t>(id_dims.size()), dims.end());
    auto shape = TensorShape::Make(out_dims);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    for (int64_t k = 0; k < ids.NumElements(); ++k) {
      const int64_t id = IndexAt(ids, k);
      TW_OP_REQUIRES(ctx, id < num,
                     errors::InvalidArgument("UnsortedSegmentSum: segment_ids", Position(ids.shape(), k), " = ", id,
                                             " is out of range [0, ", num, ")"));
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), T(0));
    const T* src = data.data<T>();
    // Parallel over the slices' columns: each thread owns whole output columns,
    // so the sums need no locks and add in the ids' order.
    ParallelFor(ctx->intra_op_pool(), inner, ids.NumElements() + 1, [&](int64_t c0, int64_t c1) {
      for (int64_t k = 0; k < ids.NumElements(); ++k) {
        const int64_t id = IndexAt(ids, k);
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
    auto depth_v = ScalarInput(ctx, 1, "OneHot: depth");
    TW_OP_REQUIRES_OK(ctx, depth_v.status());
    const int64_t depth = *depth_v;
    TW_OP_REQUIRES(ctx, depth >= 0, errors::InvalidArgument("OneHot: depth must be non-negative, got: ", depth));
    for (int i : {2, 3}) {
      TW_OP_REQUIRES(ctx, ctx->input(i).rank() == 0,
                     errors::InvalidArgument("OneHot: ", i == 2 ? "on_value" : "off_value", " must be a scalar, got ",
                                             ctx->input(i).shape().ToString()));
    }
    const int rank = indices.rank();
    TW_OP_REQUIRES(ctx, axis_ >= -1 && axis_ <= rank,
                   errors::InvalidArgument("OneHot: axis ", axis_, " is out of range for indices of shape ",
                                           indices.shape().ToString(), " (expected -1 or an axis in [0, ", rank, "])"));
    const size_t at = axis_ == -1 ? static_cast<size_t>(rank) : static_cast<size_t>(axis_);
    std::vector<int64_t> out_dims = indices.shape().dims();
    out_dims.insert(out_dims.begin() + static_cast<std::ptrdiff_t>(at), depth);
    auto shape = TensorShape::Make(out_dims);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    const T on = ctx->input(2).data<T>()[0], off = ctx->input(3).data<T>()[0];
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), off);
    const int64_t suffix = Product(indices.shape().dims(), at, static_cast<size_t>(rank));
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

// numpy broadcasting of three shapes, or InvalidArgument naming them.
StatusOr<TensorShape> BroadcastThree(const TensorShape& a, const TensorShape& b, const TensorShape& c) {
  const int rank = std::max({a.rank(), b.rank(), c.rank()});
  std::vector<int64_t> out(static_cast<size_t>(rank), 1);
  for (const TensorShape* s : {&a, &b, &c}) {
    for (int i = 0; i < s->rank(); ++i) {
      int64_t& o = out[static_cast<size_t>(rank - s->rank() + i)];
      const int64_t d = s->dim(i);
      if (d == o || d == 1) continue;
      if (o != 1) {
        return errors::InvalidArgument("SelectV2: condition ", a.ToString(), ", t ", b.ToString(), " and e ",
                                       c.ToString(), " are not broadcast-compatible");
      }
      o = d;
    }
  }
  return TensorShape(out);
}

template <typename T>
class SelectOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& c = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    auto shape = BroadcastThree(c.shape(), t.shape(), e.shape());
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
    TW_OP_REQUIRES(ctx, t.shape() == e.shape(),
                   errors::InvalidArgument("Select: t of shape ", t.shape().ToString(), " and e of shape ",
                                           e.shape().ToString(), " must have one shape"));
    const bool* cv = c.data<bool>();
    if (c.rank() == 0) {
      ctx->set_output(0, cv[0] ? t : e);
      return;
    }
    const bool rows = c.rank() == 1 && t.rank() > 1;
    TW_OP_REQUIRES(ctx, rows ? c.shape().dim(0) == t.shape().dim(0) : c.shape() == t.shape(),
                   errors::InvalidArgument("Select: condition of shape ", c.shape().ToString(),
                                           " must be a scalar, a vector of t's first dimension, or of t's shape ",
                                           t.shape().ToString()));
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
    auto k_v = ScalarInput(ctx, 2, "InTopKV2: k");
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
