// TensorShape (every dimension known, the shape of a real Tensor) and
// PartialShape (graph-time shapes: unknown rank, or dimensions of -1 = unknown).
//
// Both are plain values, thread-compatible. Construction from user numbers goes
// through Make/FromDims, which reject negative dimensions and element counts that
// overflow int64 with InvalidArgument, so no caller ever allocates from a bad shape.
#ifndef TOWERFLOW_CORE_TENSOR_SHAPE_H_
#define TOWERFLOW_CORE_TENSOR_SHAPE_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "towerflow/core/status.h"

namespace tw {

class TensorShape {
 public:
  TensorShape() = default;  // scalar
  // REQUIRES: every dim >= 0 and the product fits int64 (TW_CHECKed); use Make for
  // dimensions that come from users or files.
  TensorShape(std::initializer_list<int64_t> dims);
  explicit TensorShape(std::vector<int64_t> dims);

  static StatusOr<TensorShape> Make(const std::vector<int64_t>& dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  void AddDim(int64_t d);
  void InsertDim(int index, int64_t d);
  void RemoveDim(int index);
  void set_dim(int index, int64_t d);

  bool operator==(const TensorShape& o) const { return dims_ == o.dims_; }
  bool operator!=(const TensorShape& o) const { return dims_ != o.dims_; }
  // "[2,3]", "[]" for a scalar.
  std::string ToString() const;

 private:
  void Recount();
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
};

class PartialShape {
 public:
  PartialShape() = default;  // unknown rank
  PartialShape(std::initializer_list<int64_t> dims);  // -1 marks an unknown dim
  explicit PartialShape(std::vector<int64_t> dims);
  PartialShape(const TensorShape& shape);  // NOLINT: a known shape is a partial one

  static PartialShape Unknown() { return PartialShape(); }
  static PartialShape UnknownOfRank(int rank);
  // Rejects dims < -1.
  static StatusOr<PartialShape> FromDims(const std::vector<int64_t>& dims);

  bool known_rank() const { return known_rank_; }
  // REQUIRES: known_rank().
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // -1 unless fully defined.
  int64_t num_elements() const;
  // REQUIRES: IsFullyDefined().
  TensorShape ToTensorShape() const;

  // True when some concrete shape satisfies both.
  bool IsCompatibleWith(const PartialShape& other) const;
  // The most specific shape compatible with both; InvalidArgument naming both if none.
  StatusOr<PartialShape> Merge(const PartialShape& other) const;

  bool operator==(const PartialShape& o) const {
    return known_rank_ == o.known_rank_ && dims_ == o.dims_;
  }
  // "[?,784]", "<unknown>" for unknown rank.
  std::string ToString() const;

 private:
  bool known_rank_ = false;
  std::vector<int64_t> dims_;
};

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_TENSOR_SHAPE_H_
