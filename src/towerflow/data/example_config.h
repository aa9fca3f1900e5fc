// What to extract from tf.train.Example records, and what comes out: the
// configuration and result types of data/example_parser.h.
//
// ParseConfig mirrors TF's parse_example arguments: FixedLenFeature (a dense tensor
// of a fixed shape per example, with an optional default for examples that lack the
// feature) and VarLenFeature (a SparseTensor of each example's values). Only
// int64, float32 and string features exist in an Example. These are plain values,
// thread-compatible; a validated config may be read by many threads at once.
#ifndef TOWERFLOW_DATA_EXAMPLE_CONFIG_H_
#define TOWERFLOW_DATA_EXAMPLE_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/core/tensor_shape.h"
#include "towerflow/core/types.h"

namespace tw {

// tf.io.FixedLenFeature(shape, dtype, default_value): every example yields exactly
// shape.num_elements() values (row-major), or the default when the feature is
// missing (or present with no kind set). Without a default a missing feature is an
// error. A present-but-empty list is an empty tensor: fine for shape [0], a value
// count error otherwise.
struct FixedLenFeature {
  std::string key;
  DataType dtype = DataType::kInvalid;  // kInt64, kFloat32 or kString
  TensorShape shape;
  std::optional<Tensor> default_value;  // dtype `dtype`, shape `shape`
};

// tf.io.VarLenFeature(dtype): all of an example's values, as a SparseTensor whose
// last index is the position in the example's list. Missing means no values.
struct VarLenFeature {
  std::string key;
  DataType dtype = DataType::kInvalid;  // kInt64, kFloat32 or kString
};

struct ParseConfig {
  std::vector<FixedLenFeature> dense;
  std::vector<VarLenFeature> sparse;

  // OK, or InvalidArgument: "Invalid config dtype: <dtype>" for a dtype other than
  // int64, float or string; a default whose dtype or shape differs from the
  // feature's (naming the key and both); a key used twice (dense and sparse keys
  // share one namespace).
  Status Validate() const;
};

// One VarLenFeature's output, TF's SparseTensor triple. For a single example:
// indices int64 [n, 1] (0..n-1), values [n], dense_shape int64 [1] = {n}. For a
// batch: indices int64 [n, 2] = (example, position), values [n] in example order,
// dense_shape int64 [2] = {batch, longest list}.
struct SparseTensorValue {
  Tensor indices;
  Tensor values;
  Tensor dense_shape;
};

struct ParseResult {
  std::vector<Tensor> dense;              // one per ParseConfig::dense, in order
  std::vector<SparseTensorValue> sparse;  // one per ParseConfig::sparse, in order
};

}  // namespace tw

#endif  // TOWERFLOW_DATA_EXAMPLE_CONFIG_H_
