#include "towerflow/core/tensor_shape.h"

#include "towerflow/core/logging.h"

namespace tw {
namespace {

// Product of dims, or -1 on a negative dim or int64 overflow.
int64_t CheckedProduct(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / d) return -1;
    n *= d;
  }
  return n;
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i] < 0 ? "?" : std::to_string(dims[i]);
  }
  return s + "]";
}

}  // namespace

TensorShape::TensorShape(std::initializer_list<int64_t> dims) : TensorShape(std::vector<int64_t>(dims)) {}

TensorShape::TensorShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  Recount();
}

StatusOr<TensorShape> TensorShape::Make(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < 0) {
      return errors::InvalidArgument("shape ", DimsToString(dims), " has a negative dimension");
    }
  }
  if (CheckedProduct(dims) < 0) {
    return errors::InvalidArgument("shape ", DimsToString(dims),
                                   " has more elements than int64 can count");
  }
  return TensorShape(dims);
}

void TensorShape::Recount() {
  num_elements_ = CheckedProduct(dims_);
  TW_CHECK(num_elements_ >= 0) << "invalid TensorShape " << DimsToString(dims_);
}

void TensorShape::AddDim(int64_t d) {
  dims_.push_back(d);
  Recount();
}
void TensorShape::InsertDim(int index, int64_t d) {
  dims_.insert(dims_.begin() + index, d);
  Recount();
}
void TensorShape::RemoveDim(int index) {
  dims_.erase(dims_.begin() + index);
  Recount();
}
void TensorShape::set_dim(int index, int64_t d) {
  dims_[static_cast<size_t>(index)] = d;
  Recount();
}

std::string TensorShape::ToString() const { return DimsToString(dims_); }

PartialShape::PartialShape(std::initializer_list<int64_t> dims)
    : known_rank_(true), dims_(dims) {}
PartialShape::PartialShape(std::vector<int64_t> dims) : known_rank_(true), dims_(std::move(dims)) {}
PartialShape::PartialShape(const TensorShape& shape) : known_rank_(true), dims_(shape.dims()) {}

PartialShape PartialShape::UnknownOfRank(int rank) {
  return PartialShape(std::vector<int64_t>(static_cast<size_t>(rank), -1));
}

StatusOr<PartialShape> PartialShape::FromDims(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < -1) {
      return errors::InvalidArgument("shape ", DimsToString(dims),
                                     " has a dimension below -1 (-1 means unknown)");
    }
  }
  return PartialShape(dims);
}

bool PartialShape::IsFullyDefined() const {
  if (!known_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t PartialShape::num_elements() const {
  return IsFullyDefined() ? CheckedProduct(dims_) : -1;
}

TensorShape PartialShape::ToTensorShape() const {
  TW_CHECK(IsFullyDefined()) << ToString() << " is not fully defined";
  return TensorShape(dims_);
}

bool PartialShape::IsCompatibleWith(const PartialShape& other) const {
  if (!known_rank_ || !other.known_rank_) return true;
  if (rank() != other.rank()) return false;
  for (int i = 0; i < rank(); ++i) {
    if (dim(i) >= 0 && other.dim(i) >= 0 && dim(i) != other.dim(i)) return false;
  }
  return true;
}

StatusOr<PartialShape> PartialShape::Merge(const PartialShape& other) const {
  if (!IsCompatibleWith(other)) {
    return errors::InvalidArgument("shapes ", ToString(), " and ", other.ToString(),
                                   " are incompatible");
  }
  if (!known_rank_) return other;
  if (!other.known_rank_) return *this;
  std::vector<int64_t> out(dims_);
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < 0) out[i] = other.dims_[i];
  }
  return PartialShape(std::move(out));
}

std::string PartialShape::ToString() const {
  return known_rank_ ? DimsToString(dims_) : "<unknown>";
}

}  // namespace tw
