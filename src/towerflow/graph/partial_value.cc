#include "towerflow/graph/partial_value.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tw::internal {
namespace {

bool IsInt(DataType t) { return t == kInt32 || t == kInt64; }

// Elementwise `f` of two partial values, one of them possibly a single element
// (broadcast); nullopt elements stay unknown.
template <typename F>
std::optional<PartialVector> Elementwise(const std::optional<PartialVector>& a, const std::optional<PartialVector>& b,
                                         F f) {
  if (!a || !b) return std::nullopt;
  const size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return std::nullopt;
  PartialVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const std::optional<int64_t>& x = (*a)[a->size() == 1 ? 0 : i];
    const std::optional<int64_t>& y = (*b)[b->size() == 1 ? 0 : i];
    if (x && y) out[i] = f(*x, *y);  // nullopt on overflow
  }
  return out;
}

// A fully known partial value as plain integers.
std::optional<std::vector<int64_t>> Known(const std::optional<PartialVector>& p) {
  if (!p) return std::nullopt;
  std::vector<int64_t> v;
  for (const std::optional<int64_t>& e : *p) {
    if (!e) return std::nullopt;
    v.push_back(*e);
  }
  return v;
}

bool AnyKnown(const PartialVector& p) {
  return std::any_of(p.begin(), p.end(), [](const std::optional<int64_t>& e) { return e.has_value(); });
}

}  // namespace

std::optional<PartialVector> PartialOf(const Output& o) {
  if (o.node == nullptr || o.index != 0) return std::nullopt;
  if (o.node->op() == "Const") {
    const AttrValue* v = o.node->attrs().Find("value");
    const Tensor* t = v != nullptr ? std::get_if<Tensor>(v) : nullptr;
    if (t == nullptr || !IsInt(t->dtype()) || t->rank() > 1 || t->NumElements() > kMaxPartialElements) {
      return std::nullopt;
    }
    PartialVector out;
    for (int64_t k = 0; k < t->NumElements(); ++k) {
      out.emplace_back(t->dtype() == kInt32 ? t->data<int32_t>()[k] : t->data<int64_t>()[k]);
    }
    return out;
  }
  return o.node->partial_value();
}

std::optional<PartialVector> ComputePartial(const std::string& op, const std::vector<Output>& inputs,
                                            const PartialShape& out, DataType type) {
  if (!IsInt(type) || !out.known_rank() || out.rank() > 1) return std::nullopt;
  if (out.rank() == 1 && (out.dim(0) < 0 || out.dim(0) > kMaxPartialElements)) return std::nullopt;
  const size_t n = out.rank() == 0 ? 1 : static_cast<size_t>(out.dim(0));
  std::optional<PartialVector> result;
  if (op == "Shape" && !inputs.empty()) {
    const PartialShape& s = inputs[0].shape();
    if (s.known_rank()) {
      result.emplace();
      for (int i = 0; i < s.rank(); ++i) {
        if (s.dim(i) >= 0) {
          result->emplace_back(s.dim(i));
        } else {
          result->emplace_back(std::nullopt);
        }
      }
    }
  } else if ((op == "ExpandDims" || op == "Squeeze" || op == "Identity" || op == "EnsureShape" ||
              op == "StopGradient" || op == "Cast") &&
             !inputs.empty()) {
    result = PartialOf(inputs[0]);
  } else if (op == "ConcatV2" && inputs.size() >= 2) {
    const std::optional<std::vector<int64_t>> axis = Known(PartialOf(inputs.back()));
    if (!axis || axis->size() != 1 || ((*axis)[0] != 0 && (*axis)[0] != -1)) return std::nullopt;
    result.emplace();
    for (size_t i = 0; i + 1 < inputs.size(); ++i) {
      std::optional<PartialVector> part = PartialOf(inputs[i]);
      if (!part) {
        const PartialShape& s = inputs[i].shape();
        if (!s.known_rank() || s.rank() != 1 || s.dim(0) < 0) return std::nullopt;
        part = PartialVector(static_cast<size_t>(s.dim(0)));
      }
      result->insert(result->end(), part->begin(), part->end());
    }
  } else if (op == "Slice" && inputs.size() == 3) {
    const std::optional<PartialVector> in = PartialOf(inputs[0]);
    const std::optional<std::vector<int64_t>> begin = Known(PartialOf(inputs[1]));
    const std::optional<std::vector<int64_t>> size = Known(PartialOf(inputs[2]));
    if (!in || !begin || !size || begin->size() != 1 || size->size() != 1) return std::nullopt;
    const int64_t b = (*begin)[0];
    const int64_t len = static_cast<int64_t>(in->size());
    const int64_t e = (*size)[0] < 0 ? len : b + (*size)[0];
    if (b < 0 || b > len || e < b || e > len) return std::nullopt;
    result = PartialVector(in->begin() + b, in->begin() + e);
  } else if (op == "Neg" && inputs.size() == 1) {
    result = PartialOf(inputs[0]);
    if (result) {
      for (std::optional<int64_t>& e : *result) {
        if (e && *e == std::numeric_limits<int64_t>::min()) e.reset();
        if (e) e = -*e;
      }
    }
  } else if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Maximum") && inputs.size() == 2) {
    const std::optional<PartialVector> a = PartialOf(inputs[0]), b = PartialOf(inputs[1]);
    using R = std::optional<int64_t>;
    if (op == "Add") {
      result = Elementwise(a, b, [](int64_t x, int64_t y) -> R {
        int64_t r;
        return __builtin_add_overflow(x, y, &r) ? R() : R(r);
      });
    }
    if (op == "Sub") {
      result = Elementwise(a, b, [](int64_t x, int64_t y) -> R {
        int64_t r;
        return __builtin_sub_overflow(x, y, &r) ? R() : R(r);
      });
    }
    if (op == "Maximum") result = Elementwise(a, b, [](int64_t x, int64_t y) -> R { return std::max(x, y); });
    if (op == "Mul") {
      result = Elementwise(a, b, [](int64_t x, int64_t y) -> R {
        int64_t r;
        return __builtin_mul_overflow(x, y, &r) ? R() : R(r);
      });
    }
  }
  if (!result || result->size() != n) return std::nullopt;
  // A value the output type cannot hold (an int32 sum that wraps, a Cast that
  // truncates) is not known: the kernel's would differ.
  if (type == kInt32) {
    for (std::optional<int64_t>& e : *result) {
      if (e && (*e < std::numeric_limits<int32_t>::min() || *e > std::numeric_limits<int32_t>::max())) e.reset();
    }
  }
  if (!AnyKnown(*result)) return std::nullopt;
  return result;
}

}  // namespace tw::internal
