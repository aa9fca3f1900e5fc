// AttrValue: the value of a node attribute (an op's compile-time parameter:
// "T", "transpose_a", "strides", "value", ...), and AttrMap, a node's attributes.
//
// Plain values, thread-compatible. Getters return InvalidArgument naming the
// attribute when it is missing or of another type.
#ifndef TOWERFLOW_GRAPH_ATTR_VALUE_H_
#define TOWERFLOW_GRAPH_ATTR_VALUE_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"
#include "towerflow/core/tensor_shape.h"
#include "towerflow/core/types.h"

namespace tw {

// The alternatives of AttrValue, in its order (AttrTypeOf is the index).
enum class AttrType { kInt, kFloat, kBool, kString, kType, kShape, kIntList, kTypeList, kTensor, kFloatList };

using AttrValue = std::variant<int64_t, double, bool, std::string, DataType, PartialShape,
                               std::vector<int64_t>, std::vector<DataType>, Tensor, std::vector<double>>;

std::string_view AttrTypeName(AttrType type);
AttrType AttrTypeOf(const AttrValue& value);
// Short rendering for logs and `towerflow ops`: "float", "[1,2]", "true".
std::string AttrValueToString(const AttrValue& value);

class AttrMap {
 public:
  void Set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  const AttrValue* Find(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, AttrValue>& values() const { return values_; }

  // InvalidArgument when missing or of another type. int attrs also read as
  // int, float attrs as float, float lists as std::vector<float>.
  template <typename T>
  StatusOr<T> Get(const std::string& name) const {
    const AttrValue* v = Find(name);
    if (v == nullptr) return errors::InvalidArgument("missing attr '", name, "'");
    if constexpr (std::is_same_v<T, int>) {
      if (auto* i = std::get_if<int64_t>(v)) return static_cast<int>(*i);
    } else if constexpr (std::is_same_v<T, float>) {
      if (auto* d = std::get_if<double>(v)) return static_cast<float>(*d);
    } else if constexpr (std::is_same_v<T, std::vector<float>>) {
      if (auto* d = std::get_if<std::vector<double>>(v)) return std::vector<float>(d->begin(), d->end());
    } else {
      if (auto* t = std::get_if<T>(v)) return *t;
    }
    return errors::InvalidArgument("attr '", name, "' has type ", AttrTypeName(AttrTypeOf(*v)));
  }

 private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_ATTR_VALUE_H_
