#include "towerflow/data/example_config.h"

#include <string_view>
#include <unordered_set>

namespace tw {
namespace {

// TF's CheckConfigDataType: an Example holds only these three kinds of list.
Status CheckConfigDataType(DataType dtype) {
  if (dtype == kInt64 || dtype == kFloat32 || dtype == kString) return Status::OK();
  return errors::InvalidArgument("Invalid config dtype: ", DataTypeName(dtype));
}

}  // namespace

Status ParseConfig::Validate() const {
  std::unordered_set<std::string_view> keys;
  keys.reserve(dense.size() + sparse.size());
  auto add_key = [&](const std::string& key) -> Status {
    if (!keys.insert(key).second) {
      return errors::InvalidArgument("Duplicate feature key '", key,
                                     "' in the parse config (dense and sparse keys must all differ)");
    }
    return Status::OK();
  };
  for (const FixedLenFeature& f : dense) {
    TW_RETURN_IF_ERROR(CheckConfigDataType(f.dtype));
    TW_RETURN_IF_ERROR(add_key(f.key));
    if (!f.default_value.has_value()) continue;
    const Tensor& d = *f.default_value;
    if (!d.IsInitialized()) {
      return errors::InvalidArgument("Default value of feature '", f.key, "' is an uninitialized tensor");
    }
    if (d.dtype() != f.dtype) {
      return errors::InvalidArgument("Default value of feature '", f.key, "' has dtype ",
                                     DataTypeName(d.dtype()), " but the feature has dtype ",
                                     DataTypeName(f.dtype));
    }
    if (d.shape() != f.shape) {
      return errors::InvalidArgument("Default value of feature '", f.key, "' has shape ",
                                     d.shape().ToString(), " but the feature has shape ", f.shape.ToString());
    }
  }
  for (const VarLenFeature& f : sparse) {
    TW_RETURN_IF_ERROR(CheckConfigDataType(f.dtype));
    TW_RETURN_IF_ERROR(add_key(f.key));
  }
  return Status::OK();
}

}  // namespace tw
