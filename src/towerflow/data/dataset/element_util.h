// Tensor plumbing the datasets share: slicing a tensor along dimension 0,
// stacking and padding tensors into a batch, checking an element against a
// spec, and a byte encoding of elements (iterator checkpoints and file
// caches). Plain functions over host tensors; thread-safe.
#ifndef TOWERFLOW_DATA_DATASET_ELEMENT_UTIL_H_
#define TOWERFLOW_DATA_DATASET_ELEMENT_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "towerflow/data/dataset.h"

namespace tw::data {

// Slice i of `t` along dimension 0 (a copy). REQUIRES: t.rank() >= 1, 0 <= i < t.dim(0).
Tensor SliceAlongDim0(const Tensor& t, int64_t i);

// The tensors stacked along a new dimension 0. InvalidArgument "Cannot batch
// tensors with different shapes in component <c>. First element had shape
// <s> and element <i> had shape <t>." (TF's text) when shapes differ.
StatusOr<Tensor> Stack(const std::vector<const Tensor*>& parts, int component);
// As Stack, but the strings of a part that holds the only reference to its
// buffer are moved, not copied (the part is left with empty strings).
StatusOr<Tensor> StackConsuming(const std::vector<Tensor*>& parts, int component);

// The tensors stacked along a new dimension 0, each padded (with `pad`, a
// scalar of their dtype, or zero/"" when uninitialized) to `shape` (the
// batch's shape without its dimension 0). REQUIRES: every part fits `shape`.
Tensor StackPadded(const std::vector<const Tensor*>& parts, const TensorShape& shape, const Tensor& pad);

// The spec of `element` (exact shapes).
ElementSpec SpecOf(const Element& element);
// The most specific spec both fit (dims that differ become -1); InvalidArgument
// when dtypes or component counts differ.
StatusOr<ElementSpec> MostSpecific(const ElementSpec& a, const ElementSpec& b);
// InvalidArgument naming `what`, the component and both shapes/dtypes when
// `element` does not fit `spec`.
Status CheckElement(const Element& element, const ElementSpec& spec, const std::string& what);

// "[2,3]" for PartialShapes ("[-1,3]", "<unknown>").
std::string ShapeString(const PartialShape& shape);

// Byte encoding of an element: u32 count, then per tensor i32 dtype, i32
// rank, i64 dims and the values (strings as u64 length + bytes), little-endian.
// Do not change: on-disk format (iterator states in checkpoints, Cache files;
// docs/formats.md). Decode: DataLoss naming the byte on malformed bytes.
void EncodeElement(const Element& element, std::string* out);
StatusOr<Element> DecodeElement(std::string_view bytes);

}  // namespace tw::data

#endif  // TOWERFLOW_DATA_DATASET_ELEMENT_UTIL_H_
